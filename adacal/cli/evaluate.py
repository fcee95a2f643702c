"""`adacal evaluate`: calibration metrics (ECE variants, MCE, classwise ECE, NLL, Brier, error) of saved predictions."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from adacal.cli.common import ForceOption, guarded, metric_cell, metrics_line, number
from adacal.cli.inputs import (
    LabelsFile, LabelsKey, LogitsKey, Renormalize, ScoresKind, Header, Separator, PtItems, print_notes, read_options,
)
from adacal.cli.inputs import ClassNames, GroupBy, LabelsAre, ScoreColumns
from adacal.cli.inputs import AnswerIs, AnswerOptions, LengthNormalize, MissingOptions, Task, VerbalizedConfidence
from adacal.cli.inputs import llm_options
from adacal.conventions import DEFAULT_N_BINS

HELP = """Measure calibration of a model's test predictions: ECE (equal-width, equal-mass, debiased, sweep, smooth),
MCE, classwise ECE, NLL, Brier score (the multi-class sum) and top-1 error, and for binary models the positive-class
Brier score and ECEs (class 1, as scikit-learn measures them), optionally with bootstrap confidence intervals; selective
prediction (AURC, E-AURC, AUGRC, risk@80, coverage@5, AUROC of correctness) when named in --metrics.

PREDICTIONS is a predictions file of any framework (.npz or .pt with `logits`/`probs`/`scores` and
`labels`/`targets`/`y` (also Hugging Face's `predictions`/`label_ids`, scikit-learn's `y_prob`/`y_true`), or
`test_logits`/`test_labels` like a run's predictions.npz; a .pt (logits, labels) pair or a list of per-batch
outputs; an .npy of scores with --labels FILE or <stem>_labels.npy (or labels.npy) beside it, or such a .txt as
np.savetxt writes; a .csv/.tsv with one column per class and a label column; a .json of arrays or of per-sample
objects, or a .jsonl with one object per sample; a .safetensors of named tensors or a .mat of MATLAB variables;
the text formats gzipped too, e.g. .csv.gz), a checkpoint, or a run folder written by 'adacal train'. A file of
top-label (confidence, correct) pairs (keys or columns named like confidence/conf/p_max beside correct/is_correct/acc,
e.g. an LLM evaluation's JSONL) gets the top-label metrics: error, the ECEs, MCE, NLL-CORRECT, BRIER-TOP,
AUROC-CORRECT and AUPRC-ERRORS (how well confidence tells right from wrong). LLM evaluation outputs
(docs/inputs.md §10): lm-evaluation-harness sample files (samples_<task>_<date>.jsonl of multiple-choice tasks;
several, a folder or a quoted glob read as one input, the task per sample; --length-normalize as acc_norm),
per-question option log-probability maps ({"A": -0.3, ...} or the OpenAI API's top_logprobs, with the answer) and
lists of option log-probabilities: K options per question give class scores, different numbers of options the
top-label metrics; --verbalized-confidence KEY reads stated confidences
("I am 80% sure"). Labels may be
class indices (1-D or one column),
one-hot rows or booleans; string labels are mapped through a `classes` array (or a .csv header).

The kind of the scores is decided for the whole matrix by the rule of docs/inputs.md §2, never row by row:
probabilities when every row is non-negative and sums to 1; logits when (almost) none is (at most 1 % of the rows,
which logits match by chance); refused in between, naming the first rows, rather than guessed at: probabilities with
a few rows that are not (an all-zero row, a -1e-12 entry, a row summing to 0.5), rows summing to almost 1,
percentages. --scores-kind logits|probs chooses; --renormalize divides each row by its sum. 1-D (or one-column)
binary scores are positive-class probabilities when all in [0, 1], decision scores (logits) when at least 2 values
(and more than 1 %) lie outside it, refused in between (one stray value). The Note line and the JSON say which was
assumed and by which rule. The table shows fractions as %; the JSON holds fractions (NLL in nats).

A run folder that has no evaluate.json (training was interrupted) gets this report as its evaluate.json, noting which
epoch's checkpoint was scored; so does a checkpoint of such a run, or the checkpoint a run selected. Never with
--calibrator, and never for another epoch's checkpoint of a finished run (best.pt of a --select last run): that
report is written only with --json. The evaluate.json a run has is never replaced. Otherwise a JSON report is written
only with --json.

--tests adds calibration tests with p-values (is the model distinguishable from a calibrated one?): the ECE-EM and
ECE-EW consistency-resampling tests (--test-resamples label sets drawn from --seed), Spiegelhalter's Z (two-sided)
and the Kolmogorov–Smirnov and Kuiper tests of the top-1 confidence. --decompose splits the Brier score and
log-loss into miscalibration − discrimination + uncertainty (CORP: an isotonic recalibration of the top-1 confidence,
and per class for the Brier score). Definitions: docs/conventions.md.

--group-by KEY adds a table of the same figures per group (a task, a subject: a per-sample key or column of the
input), each on its group's rows alone, with the overall row; groups under 50 samples are starred.

Examples:

  adacal evaluate preds.npz

  adacal evaluate answers.jsonl --group-by subject

  adacal evaluate runs/RUN --metrics ece-em,ece-ew,nll --bootstrap 1000

  adacal evaluate preds.npz --calibrator calibrator.json --json calibrated.json

  adacal evaluate preds.npz --tests --decompose
"""

_UNITS = {"nll": "nats", "brier": "", "brier-positive": ""}


_TOP_LABEL_UNITS = {"nll-correct": "nats", "brier-top": ""}


def _fraction(name: str) -> bool:
    from adacal.commands import is_fraction_metric

    return is_fraction_metric(name)


def _format(name: str, value: float) -> str:
    return number(100 * value, 2) if _fraction(name) else number(value, 4)


def _print_table(report: dict[str, Any], label: str, calibrated_from: str | None) -> None:
    """The metrics table; `calibrated_from` is the kind of the scores a --calibrator was applied to (the report
    describes its output, always probabilities)."""
    from rich.console import Console
    from rich.table import Table

    from adacal.commands import display_name, metric_key
    results = report["results"]
    config = report["config"]
    assumed = results["assumed_input"]
    kind = "probabilities" if assumed == "probs" else "logits"
    if calibrated_from is not None:
        kind = f"{calibrated_from}, calibrated by {config['calibrator']}"
    size = f"{results['n_samples']} samples, {results.get('num_classes')} classes"
    if assumed == "confidences":
        kind, size = "top-label confidences", f"{results['n_samples']} answers"
    console = Console()
    console.print(  # the label holds a path: never read as markup
        f"{label}: {size}; input assumed: {kind}; {config['n_bins']} bins.", markup=False, highlight=False,
    )
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("unit")
    intervals = results.get("bootstrap")
    if intervals:
        confidence = round(100 * config["confidence"])
        table.add_column(f"{confidence}% CI", justify="right")
        table.add_column("std", justify="right")
    for name in config["metrics"]:
        key = metric_key(name)
        value = results["metrics"][key]
        unit = "%" if _fraction(name) else _UNITS.get(name, _TOP_LABEL_UNITS.get(name, ""))
        shown = metric_cell(key, value, _format(name, value))  # a clipped ECE-DEBIAS: ≤ 0, as in every table
        row = [display_name(name), shown, unit]
        if intervals:
            ci = intervals.get(key)  # none for an AUROC of correctness undefined on all but < 2 resamples
            row += ([f"{_format(name, ci['low'])} – {_format(name, ci['high'])}", _format(name, ci["std"])]
                    if ci is not None else ["–", "–"])
        table.add_row(*row)
    console.print(table)
    from adacal.commands.evaluate import convention_lines

    for line in convention_lines(results):
        console.print(line, markup=False, highlight=False)



def _p_value(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 1e-15:  # below the precision of 1 − CDF in double
        return "< 1e-15"
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def _print_analysis(report: dict[str, Any]) -> None:
    """The calibration tests (--tests) and the CORP decomposition (--decompose) tables, when the report has them."""
    from rich.table import Table

    from adacal.cli.common import table_console
    from adacal.commands.evaluate import TEST_DISPLAY_NAMES

    results, console = report["results"], table_console()
    tests = results.get("calibration_tests")
    if tests:
        table = Table(title="Calibration tests (H0: top-label calibrated)", title_justify="left")
        for column in ("test", "statistic", "p-value", "resamples"):
            table.add_column(column, justify="left" if column == "test" else "right")
        for key, test in tests.items():
            name = key.replace("_", "-")
            statistic = test["statistic"]
            shown = "–" if statistic is None else (
                f"{number(100 * statistic, 2)}% ECE" if name.startswith("ece") else number(statistic, 3))
            table.add_row(TEST_DISPLAY_NAMES.get(name, name), shown, _p_value(test["p_value"]),
                          str(test["resamples"]) if test["resamples"] else "–")
        console.print(table)
    decomposition = results.get("decomposition")
    if decomposition:
        names = {"brier_top": "BRIER-TOP", "nll_correct": "NLL-CORRECT (nats)", "brier": "BRIER (per class)"}
        table = Table(title="CORP decomposition: score = MCB − DSC + UNC", title_justify="left")
        for column in ("score", "S", "MCB", "DSC", "UNC"):
            table.add_column(column, justify="left" if column == "score" else "right")
        for key, label in names.items():
            part = decomposition.get(key)
            if part is not None:
                table.add_row(label, *(number(part[field], 4) for field in
                                       ("score", "miscalibration", "discrimination", "uncertainty")))
        console.print(table)
        for note in decomposition.get("notes", []):
            console.print(f"Note: {note}.", markup=False, highlight=False)


def _print_groups(report: dict[str, Any]) -> None:
    """The per-group table (`--group-by`): count, accuracy and the report's metrics per group, then every sample; the
    bootstrap interval beneath each value when the report has them; small groups starred."""
    from rich.table import Table

    from adacal.cli.common import table_console
    from adacal.commands import display_name, metric_key

    table_data, config = report["results"]["groups"], report["config"]
    names = list(config["metrics"])
    table = Table(title=f"By {table_data['key']}", title_justify="left")
    table.add_column("group")
    for column in ("n", "accuracy", *(display_name(name) for name in names)):
        # "AUROC-\nCORRECT": a long name breaks after its first hyphen rather than being cut.
        table.add_column(column.replace("-", "-\n", 1) if len(column) > 8 else column, justify="right")
    small = undefined = False
    for row in [*table_data["rows"], table_data["overall"]]:
        count = f"{row['n_samples']}{'*' if row['small'] else ''}"
        cells = [row["group"], count, f"{number(100 * row['accuracy'], 2)}%"]
        small = small or row["small"]
        for name in names:
            key = metric_key(name)
            value = row["metrics"].get(key)
            if value is None:
                cells.append("–")
                undefined = True
                continue
            cell = metric_cell(key, value, _format(name, value))
            interval = (row.get("bootstrap") or {}).get(key)
            if interval is not None:
                cell += f"\n{_format(name, interval['low'])}–{_format(name, interval['high'])}"
            cells.append(cell)
        table.add_row(*cells, end_section=row is table_data["rows"][-1])
    console = table_console()
    console.print(table)
    footnotes = ["units as in the table above"]
    if small:
        footnotes.append(f"* fewer than {table_data['small_below']} samples: noisy figures")
    if undefined:
        footnotes.append("– undefined on that group (its answers are all right, or all wrong)")
    if any(row.get("bootstrap") for row in table_data["rows"]):
        footnotes.append(f"beneath each value: its {round(100 * config['confidence'])}% bootstrap interval")
    console.print("; ".join(footnotes) + ".", markup=False, highlight=False)


@contextlib.contextmanager
def _bootstrap_progress(total: int, silent: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar (count, elapsed, ETA) on stderr for the bootstrap resamples, when stderr is a terminal; yields
    the callback the library calls after each resample (None: nothing is drawn when silent or piped). The bar starts
    at the first resample, so that reading the input (and an `Error:` line) is never drawn over."""
    from rich.console import Console

    console = Console(stderr=True)
    if silent or total == 0 or not console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("Bootstrap resamples"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("ETA"), TimeRemainingColumn(),
    )
    bar = Progress(*columns, console=console, transient=True)
    tasks: list[Any] = []

    def advance(done: int, _total: int) -> None:
        if not tasks:
            bar.start()
            tasks.append(bar.add_task("bootstrap", total=total))
        bar.update(tasks[0], completed=done)

    try:
        yield advance
    finally:
        if tasks:
            bar.stop()


@guarded
def evaluate(
    predictions: Annotated[
        list[Path],
        typer.Argument(
            help="Predictions file (.npz, .pt, .npy, .txt, .safetensors, .mat, .csv, .tsv, .json or .jsonl), "
                 "checkpoint, or run folder; or lm-evaluation-harness sample files (samples_<task>_<date>.jsonl: "
                 "several, a folder or a quoted glob of them, read as one input).",
            show_default=False,
        ),
    ],
    n_bins: Annotated[int, typer.Option("--n-bins", help="Number of bins for the binned metrics.")] = DEFAULT_N_BINS,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            help="Comma-separated metrics: error, nll, brier, ece-ew, ece-em, ece-debias, ece-sweep-ew, "
            "ece-sweep-em, ece-smooth, mce, classwise-ece (default: all); ece_em and ECE-EM are accepted too. "
            "Binary models (2 classes) also get brier-positive (scikit-learn's brier_score_loss: brier is the "
            "multi-class sum, twice it), ece-positive-ew and ece-positive-em (P(class 1) against label 1; "
            "ece-ew / ece-em are top-label); the positive class is class index 1, and other numbers of classes "
            "are refused. "
            "Top-label (confidence, correct) inputs have nll-correct, brier-top, auroc-correct and auprc-errors "
            "instead of nll, brier and classwise-ece. "
            "Selective prediction, by name only: aurc, e-aurc, augrc, auroc-correct, auprc-errors (the average "
            "precision of the errors ranked by low confidence), risk@C (risk@80: the "
            "selective risk at 80 % coverage) and coverage@R (coverage@5: the largest coverage whose risk is "
            "at most 5 %). "
            "ECE-DEBIAS shows ≤ 0 when its estimate falls below the estimator's resolution (the unclipped "
            "estimate is results.ece_debias_squared in the JSON).",
        ),
    ] = None,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap resamples for 95% confidence intervals (0 = none).")
    ] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap resampling.")] = 0,
    json_path: Annotated[Path | None, typer.Option("--json",
                                                   help="Write the JSON report to this file ('-': to stdout, and "
                                                        "nothing else goes there).")] = None,
    calibrator: Annotated[
        Path | None,
        typer.Option("--calibrator", help="Calibrator file saved by 'adacal calibrate': evaluate its output."),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Dataset folder, when a checkpoint must be run on its test split."),
    ] = None,
    device: Annotated[
        str, typer.Option("--device", help="auto, cpu, cuda or cuda:N (when a checkpoint must be run).")
    ] = "auto",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print one summary line instead of the table.")] = False,
    force: ForceOption = False,
    logits_key: LogitsKey = None,
    labels_key: LabelsKey = None,
    labels: LabelsFile = None,
    renormalize: Renormalize = False,
    scores_kind: ScoresKind = "auto",
    header: Header = None,
    separator: Separator = None,
    pt_items: PtItems = None,
    labels_are: LabelsAre = None,
    score_columns: ScoreColumns = None,
    length_normalize: LengthNormalize = False,
    task: Task = None,
    answer_is: AnswerIs = None,
    answer_options: AnswerOptions = None,
    missing_options: MissingOptions = "refuse",
    verbalized_confidence: VerbalizedConfidence = None,
    classes: ClassNames = None,
    group_by: GroupBy = None,
    tests: Annotated[bool, typer.Option(
        "--tests", help="Add calibration tests with p-values: ECE-EM/ECE-EW consistency resampling, Spiegelhalter's "
                        "Z, Kolmogorov–Smirnov and Kuiper on the top-1 confidence.")] = False,
    test_resamples: Annotated[int, typer.Option(
        "--test-resamples", help="Label sets drawn under the null by the ECE resampling tests (--tests).")] = 1000,
    decompose: Annotated[bool, typer.Option(
        "--decompose", help="Add the CORP decomposition of the Brier score and log-loss: miscalibration, "
                            "discrimination, uncertainty.")] = False,
) -> None:
    from adacal.commands.evaluate import run_evaluate
    from adacal.commands import EVALUATE_FILE
    from adacal.commands import is_stdout

    predictions, more_files = predictions[0], tuple(str(path) for path in predictions[1:])
    with _bootstrap_progress(bootstrap, quiet) as progress:
        run = run_evaluate(
            predictions, n_bins=n_bins, metrics=metrics, bootstrap=bootstrap, seed=seed, json_path=json_path,
            calibrator=calibrator, data_dir=data_dir, device=device, force=force,
            options=read_options(logits_key, labels_key, labels, renormalize, scores_kind, header, separator, pt_items,
                                 labels_are=labels_are, score_columns=score_columns, classes=classes,
                                 llm={**llm_options(length_normalize, task, answer_is, answer_options,
                                                    missing_options, verbalized_confidence),
                                      "more_files": more_files}),
            progress=progress, group_by=group_by, tests=tests, test_resamples=test_resamples, decompose=decompose,
        )
    print_notes(run.notes, quiet, run.reading)
    if is_stdout(json_path):
        return  # the report is the whole of stdout
    if quiet:
        top_label = run.report["results"].get("assumed_input") == "confidences"
        typer.echo(metrics_line(run.report["results"]["metrics"], None if top_label else metrics))
        for row in (run.report["results"].get("groups") or {}).get("rows", []):
            typer.echo(f"{row['group']} (n={row['n_samples']}): "
                       f"{metrics_line(row['metrics'], None if top_label else metrics)}")
        return
    calibrated_from = None
    if run.calibrated:
        reading = run.source.predictions.interpretation
        calibrated_from = "probabilities" if reading is not None and reading.kind.endswith("probabilities") else (
            "logits")
    _print_table(run.report, str(predictions), calibrated_from)
    _print_analysis(run.report)
    if "groups" in run.report["results"]:
        _print_groups(run.report)
    for target in run.written:
        typer.echo(f"Wrote {target}")
    if run.kept is not None and json_path is None:
        typer.echo(run.kept_message)
    if run.not_written is not None and json_path is None:
        typer.echo(run.not_written_message)
    if run.source.run is not None and run.calibrated:
        typer.echo(f"Not writing {EVALUATE_FILE} into {run.source.run.root}: it describes the uncalibrated model.")
