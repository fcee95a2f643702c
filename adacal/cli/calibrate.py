"""`adacal calibrate`: fit post-hoc calibrators on validation predictions and compare test metrics before and after."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from adacal.cli.common import (
    DEBIAS_NOTE, ForceOption, debias_clipped, guarded, metric_cell, metrics_line, number, table_console,
)
from adacal.cli.inputs import (
    LabelsFile, LabelsKey, LogitsKey, Renormalize, ScoresKind, Header, Separator, PtItems, print_notes, read_options,
)
from adacal.cli.inputs import ClassNames, GroupBy, LabelsAre, ScoreColumns
from adacal.cli.inputs import AnswerIs, AnswerOptions, LengthNormalize, MissingOptions, Task, llm_options
from adacal.conventions import DEFAULT_N_BINS

BASELINE = "uncalibrated"  # the identity calibrator's name (adacal.calibrators.compare.BASELINE)

HELP = (
    "Fit post-hoc calibrators on validation logits and judge them on test.\n\n"
    "RUN_OR_PREDICTIONS is a run folder written by 'adacal train' (or a checkpoint or predictions.npz inside one), "
    "or a predictions file (.npz or .pt) holding val_logits, val_labels, test_logits and test_labels, or the test "
    "predictions of any framework with --val FILE for the validation ones (formats as in 'adacal evaluate'). For a "
    "run, its predictions.npz is used (for a checkpoint, only when it holds that checkpoint's outputs); otherwise the "
    "logits are recomputed from the checkpoint (for a run folder, the one training selected). The report is written to "
    "calibrate.json in the run folder; nothing else there is touched. For a predictions file the results are only "
    "printed unless --json is given.\n\n"
    "Methods: uncalibrated (the identity: the model's own probabilities), temperature (temperature scaling, by NLL "
    "unless --objective says otherwise), ets (ensemble "
    "temperature scaling, Zhang et al. 2020), vector-scaling, matrix-scaling and dirichlet (Kull et al. 2019, "
    "with ODIR regularisation; these may change the predicted class), spline (Gupta et al. 2021), histogram "
    "(equal-mass histogram binning), isotonic (isotonic regression), platt (Platt scaling as scikit-learn's "
    "CalibratedClassifierCV(method='sigmoid'); one-vs-rest for K > 2), beta (beta calibration, Kull et al. 2017; "
    "one-vs-rest for K > 2), top-label-histogram and top-label-isotonic (one map per predicted class, Gupta & "
    "Ramdas 2022), scaling-binning (Kumar et al. 2019), or all.\n\n"
    "With --method all, one calibrator is chosen on the validation split only, 'uncalibrated' among the candidates: "
    "each is scored by --folds-fold cross-validation inside it (stratified, seeded by --seed) and the lowest mean "
    "held-out --select-metric wins (default NLL, a proper scoring rule; ties go to the simpler method: uncalibrated, "
    "temperature, platt, ets, beta, vector-scaling, spline, scaling-binning, histogram, isotonic, top-label-histogram, "
    "top-label-isotonic, dirichlet, matrix-scaling). With another "
    "--select-metric, a calibrator whose CV NLL is worse than uncalibrated's is skipped, and said so. The choice and "
    "why are printed, are results.selection and results.best in the report, and are what --save writes (refitted on "
    "the whole validation split). A first table shows every candidate's CV NLL and CV ECE-EM; the next, test "
    "metrics before and after calibration (ECE and error in %), with the paper-style ranking by test ECE-EM, shown "
    "only, never used to choose. Under 300 validation samples a note gives the ECE-EM a perfectly calibrated model "
    "would show there by chance. On a terminal a progress bar counts the fits (one per fold and "
    "calibrator); nothing is drawn when the output is piped or with --quiet.\n\n"
    "Top-label (confidence, correct) files (an LLM's answer confidence and whether it was right; docs/inputs.md §7) "
    "get confidence maps instead: uncalibrated, platt (Platt scaling on the confidence: logistic regression of "
    "correctness on logit(confidence)), histogram, isotonic, or all (chosen by cross-validated NLL of correctness); "
    "the table shows the top-label metrics before and after, and --group-by KEY adds them per group. --val-fraction F "
    "fits on a seeded (--seed), stratified random F of one file's rows and tests on the rest, for either kind of "
    "input.\n\n"
    "Example: adacal calibrate runs/RUN --method temperature\n\n"
    "Example: adacal calibrate preds.npz --method all --json calibrate.json --save chosen.json"
)

# (key in compute_metrics, column header, scale)
TABLE_COLUMNS = (
    ("ece_em", "ECE-EM", 100.0),
    ("ece_ew", "ECE-EW", 100.0),
    ("ece_debias", "ECE-DEBIAS", 100.0),
    ("nll", "NLL", 1.0),
    ("brier", "Brier", 1.0),
    ("error", "Error", 100.0),
)
# The columns of top-label (confidence, correct) inputs: NLL and Brier of the correctness, how well the confidence
# ranks right above wrong.
TOP_LABEL_COLUMNS = (
    ("ece_em", "ECE-EM", 100.0),
    ("ece_ew", "ECE-EW", 100.0),
    ("ece_debias", "ECE-DEB", 100.0),
    ("mce", "MCE", 100.0),
    ("nll_correct", "NLL-C", 1.0),
    ("brier_top", "Brier-C", 1.0),
    ("error", "Error", 100.0),
)
# Beside them, in a second table (the first fits 80 columns): how well the confidence tells right from wrong.
RANKING_COLUMNS = (
    ("auroc_correct", "AUROC-C", 100.0),
    ("auprc_errors", "AUPRC-E", 100.0),
)


def _describe(params: dict[str, Any]) -> str:
    parts = []
    if "temperature" in params:
        parts.append(f"T={params['temperature']:.3g}" + (" (at bound)" if params.get("at_bound") else ""))
    if "slope" in params:
        parts.append(f"slope={params['slope']:.3g}, intercept={params['intercept']:.3g}"
                     + ("" if params.get("converged", True) else " (not converged)"))
    if "n_params" in params:
        parts.append(f"{params['n_params']} params" + ("" if params.get("converged", True) else " (not converged)"))
    if "weights" in params:
        parts.append("w=" + "/".join(f"{round(w, 2):g}" for w in params["weights"]))
    for key, unit in (("n_knots", "knots"), ("n_bins", "bins"), ("n_thresholds", "steps")):
        if key in params:
            parts.append(f"{params[key]} {unit}")
    return "; ".join(parts)


def _cell(metrics: dict[str, Any], key: str, scale: float) -> str:
    value = metrics.get(key)
    if value is None or value != value:
        return "-"
    return metric_cell(key, value, number(value * scale, 2 if scale != 1.0 else 3))


def _debias_clipped(results: dict[str, Any]) -> bool:
    """Whether a cell of the table shows a clipped ECE-DEBIAS (≤ 0): uncalibrated or after any calibrator."""
    entries = results["calibrators"].values()
    return any(debias_clipped((entry.get(stage) or {}).get("ece_debias")) for entry in entries
               for stage in ("test_pre", "test_post"))


def _print_table(results: dict[str, Any], *, n_val: int, n_test: int) -> None:
    """With --method all, the cross-validation figures the choice was made on; then the test metrics of every
    calibrator, and what each fitted (a third table: the metrics fit 80 columns)."""
    from rich import box
    from rich.table import Table

    selection = results.get("selection") or {}
    folds = selection.get("folds") or 0
    console = table_console()
    if folds:
        console.print(_cv_table(results))
    caption = f"fitted on {n_val} validation samples, tested on {n_test}"
    if folds:
        caption += "; rank: by test ECE-EM (shown, never used to choose)"
    table = Table(
        title="Test metrics before and after calibration (ECE and error in %)",
        caption=caption,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,  # one space between columns: the metrics fit 80 columns
    )
    table.add_column("method", no_wrap=True)
    columns = TOP_LABEL_COLUMNS if results.get("assumed_input") == "confidences" else TABLE_COLUMNS
    if columns is TOP_LABEL_COLUMNS:
        table.title = "Top-label test metrics before and after calibration (ECE and error in %)"
    for _, header, _ in columns:
        table.add_column(header, justify="right", no_wrap=True)
    if folds:
        table.add_column("rank", justify="right", no_wrap=True)
    entries = results["calibrators"]
    before = next(iter(entries.values()))["test_pre"]
    # The identity candidate's test metrics are the model's own: one "uncalibrated" row, first, with its rank.
    rank = (str((entries.get(BASELINE) or {}).get("test_rank", "-")),) if folds else ()
    table.add_row(BASELINE, *(_cell(before, key, scale) for key, _, scale in columns), *rank,
                  end_section=True)
    fitted = Table(title="Fitted parameters", box=box.SIMPLE_HEAD, pad_edge=False)
    fitted.add_column("method", no_wrap=True)
    fitted.add_column("parameters", overflow="fold")
    for name, entry in entries.items():
        fitted.add_row(name, _describe(entry["params"]) or ("none (the identity)" if name == BASELINE else ""))
        if name == BASELINE:
            continue
        cells = [_cell(entry["test_post"], key, scale) for key, _, scale in columns]
        if folds:
            cells.append(str(entry.get("test_rank", "-")))
        table.add_row(name, *cells)
    console.print(table)
    if columns is TOP_LABEL_COLUMNS:
        console.print(_ranking_table(entries))
    console.print(fitted)
    if results.get("groups"):
        console.print(_groups_table(results))


def _ranking_table(entries: dict[str, Any]) -> Any:
    """AUROC of correctness and AUPRC of errors on test, uncalibrated and after each map (a monotone map keeps them;
    the ties histogram and isotonic make can move them)."""
    from rich import box
    from rich.table import Table

    table = Table(title="Right vs wrong on test (%)",
                  caption="AUROC-C: of correctness; AUPRC-E: of errors", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    table.add_column("method", no_wrap=True)
    for _, header, _ in RANKING_COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    before = next(iter(entries.values()))["test_pre"]
    table.add_row(BASELINE, *(_cell(before, key, scale) for key, _, scale in RANKING_COLUMNS))
    for name, entry in entries.items():
        if name != BASELINE:
            table.add_row(name, *(_cell(entry["test_post"], key, scale) for key, _, scale in RANKING_COLUMNS))
    return table


def _groups_table(results: dict[str, Any]) -> Any:
    """Per group of the test rows: count, accuracy, ECE-EM and NLL (of correctness, for confidences) before and after
    the chosen calibrator."""
    from rich import box
    from rich.table import Table

    groups = results["groups"]
    table = Table(title=f"Per {groups['key']} on test: uncalibrated, then {results['best']}",
                  caption=f"ECE-EM in %; * fewer than {groups['before']['small_below']} samples: noisy",
                  box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    nll, nll_header = (("nll_correct", "NLL-C") if results.get("assumed_input") == "confidences" else ("nll", "NLL"))
    for header in (groups["key"], "n", "accuracy", "ECE-EM", "after", nll_header, "after"):
        table.add_column(header, justify="left" if header == groups["key"] else "right", no_wrap=True)
    for row, after in zip([*groups["before"]["rows"], groups["before"]["overall"]],
                          [*groups["after"]["rows"], groups["after"]["overall"]]):
        table.add_row(row["group"] + ("*" if row["small"] else ""), str(row["n_samples"]),
                      number(100 * row["accuracy"], 1), _cell(row["metrics"], "ece_em", 100.0),
                      _cell(after["metrics"], "ece_em", 100.0), _cell(row["metrics"], nll, 1.0),
                      _cell(after["metrics"], nll, 1.0))
    return table


def _cv_table(results: dict[str, Any]) -> Any:
    """Every candidate's mean held-out figures (CV NLL, CV ECE-EM, and the selection metric when it is another), the
    selected one first, with what became of each."""
    from rich import box
    from rich.table import Table

    selection = results["selection"]
    key = selection["metric"]
    table = Table(
        title=f"Choice on validation: {selection['folds']}-fold cross-validation (stratified, seed "
              f"{selection['seed']})",
        caption="mean over the held-out folds; ECE in %; lowest CV " + _metric_header(key) + " chosen, ties to the "
        "simpler" + ("; skipped: CV NLL worse than uncalibrated's" if selection.get("skipped") else ""),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("method", no_wrap=True)
    columns = [("nll", "CV NLL", 1.0), ("ece_em", "CV ECE-EM", 100.0)]
    if key not in ("nll", "ece_em"):
        columns.append((key, f"CV {_metric_header(key)}", 1.0 if key in ("nll", "brier") else 100.0))
    for _, header, _ in columns:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    skipped = selection.get("skipped") or {}
    for name, entry in results["calibrators"].items():
        means = (entry.get("cv") or {}).get("means") or {}
        if name == results["best"]:
            status = "selected"
        elif name in skipped:
            status = "skipped"
        elif not means:
            status = "failed"
        else:
            status = ""
        table.add_row(name, *(_cell(means, metric, scale) for metric, _, scale in columns), status)
    return table


def _metric_header(key: str) -> str:
    headers = {key: header for key, header, _ in TABLE_COLUMNS}
    return headers.get(key, key.replace("_", "-").upper())


def _selected_line(run: Any) -> str:
    """What --method all chose and why, e.g. "Selected temperature: lowest 5-fold CV NLL (0.231 vs uncalibrated
    0.245)."."""
    return f"Selected {run.best}: {run.results['selection']['reason']}."


def _selection_warnings(run: Any) -> list[str]:
    """A line per calibrator that `--method all` could not choose: fitted or applied in no fold, or not at all."""
    lines = []
    for name, message in run.results["selection"]["errors"].items():
        where = "in any fold" if name in run.results["calibrators"] else "(left out of the table)"
        lines.append(f"Not selectable: {name} could not be fitted or applied {where} ({message})")
    return lines


def _bound_warnings(results: dict[str, Any]) -> list[str]:
    """One line per fitted temperature at the edge of its search range (the optimum may lie beyond it)."""
    lines = []
    for name, entry in results["calibrators"].items():
        params = entry.get("params") or {}
        if params.get("at_bound"):
            lines.append(
                f"Warning: {name}'s temperature T={params['temperature']:.3g} is at the edge of its search range; "
                "the best T may lie beyond it."
            )
    return lines


class _RichSteps:
    """A transient rich bar advanced by the library's progress callback (one step per fold fit and final fit); the
    library only calls back, the CLI draws. The bar starts at the first fit, so that reading the inputs (and an
    `Error:` line) is never drawn over."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bars = Progress(
            TextColumn("calibrating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            TextColumn("{task.description}"), transient=True,
        )
        self.task = None

    def __enter__(self) -> _RichSteps:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.task is not None:
            self.bars.stop()

    def __call__(self, done: int, total: int, description: str) -> None:
        if self.task is None:
            self.bars.start()
            self.task = self.bars.add_task(description, total=total)
        self.bars.update(self.task, completed=done, description=description)


def _show_progress(quiet: bool, several: bool) -> bool:
    """A bar only for work with several fits (--method all), on a terminal, and not with --quiet (nothing extra when
    piped)."""
    return not quiet and several and sys.stdout.isatty()


@guarded
def calibrate(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="RUN_OR_PREDICTIONS",
            help="Run folder (or a checkpoint / predictions.npz in it), or a .npz/.pt with val_ and test_ "
            "logits and labels.",
            show_default=False,
        ),
    ],
    method: Annotated[
        Optional[str],
        typer.Option(
            help="Calibrator: uncalibrated (the identity), temperature, platt, beta, ets, vector-scaling, "
            "matrix-scaling, dirichlet, spline, histogram, isotonic, top-label-histogram, top-label-isotonic, "
            "scaling-binning, or all (fit each, choose one by cross-validated NLL on validation data, uncalibrated "
            "included); on top-label confidences: uncalibrated, platt, histogram, isotonic or all. Default: "
            "temperature for class scores, platt for top-label confidences.",
            show_default=False,
        ),
    ] = None,
    objective: Annotated[
        Optional[str],
        typer.Option(
            help="Temperature scaling objective: nll (default, Guo et al. 2017: the validation NLL minimum, "
            "T in [0.05, 20]), ece-em (the AdaFocal paper: grid T = 0.1..10.0 minimising validation ECE-EM) "
            "or ece-ew (same grid, ECE-EW). A T at the edge of its range is flagged. Only with --method "
            "temperature or all.",
            show_default=False,
        ),
    ] = None,
    n_bins: Annotated[
        int, typer.Option("--n-bins", help="Bins for the ECE metrics, the ECE objectives and histogram binning.")
    ] = DEFAULT_N_BINS,
    folds: Annotated[
        Optional[int],
        typer.Option(
            help="Cross-validation folds inside the validation split for choosing a calibrator. Default 5; "
            "only with --method all.",
            show_default=False,
        ),
    ] = None,
    select_metric: Annotated[
        Optional[str],
        typer.Option(
            "--select-metric",
            help="Metric (lower is better) the cross-validation chooses by: nll (default, a proper scoring "
            "rule), brier, ece-em, ece-ew, ... With any but nll, a calibrator whose CV NLL is worse than "
            "uncalibrated's is skipped. Only with --method all.",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the cross-validation folds.")] = 0,
    json_path: Annotated[
        Optional[Path],
        typer.Option(
            "--json",
            help="Write the report here instead of RUN/calibrate.json (needed to save it for a predictions file; "
            "'-': to stdout, and nothing else goes there).",
            show_default=False,
        ),
    ] = None,
    save: Annotated[
        Optional[Path],
        typer.Option(
            help="Save the fitted calibrator as JSON (with --method all, the one chosen on validation, "
            "refitted on all of it); load it with adacal.calibrators.load_calibrator.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print one summary line instead of the table.")] = False,
    force: ForceOption = False,
    val: Annotated[
        Optional[Path],
        typer.Option("--val", help="Validation predictions to fit on (any format evaluate reads); "
                                   "RUN_OR_PREDICTIONS then holds the test predictions.", show_default=False),
    ] = None,
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
    classes: ClassNames = None,
    val_fraction: Annotated[
        Optional[float],
        typer.Option("--val-fraction", help="Fit on a seeded (--seed), stratified random fraction F of "
                     "RUN_OR_PREDICTIONS's rows (by correctness for confidences, by label for class scores) and test "
                     "on the rest; for a file of one set of rows, not with --val.", show_default=False),
    ] = None,
    group_by: GroupBy = None,
    length_normalize: LengthNormalize = False,
    task: Task = None,
    answer_is: AnswerIs = None,
    answer_options: AnswerOptions = None,
    missing_options: MissingOptions = "refuse",
) -> None:
    """Fit post-hoc calibrators on validation predictions and compare test metrics before and after."""
    from adacal.commands.calibrate import run_calibrate
    from adacal.commands import is_stdout

    steps = _RichSteps() if _show_progress(quiet, method == "all") else None
    with steps if steps is not None else contextlib.nullcontext():
        run = run_calibrate(
            source, method=method, objective=objective, n_bins=n_bins, folds=folds, select_metric=select_metric,
            seed=seed, json_path=json_path, save=save, force=force, val=val,
            options=read_options(logits_key, labels_key, labels, renormalize, scores_kind, header, separator,
                                 pt_items, labels_are=labels_are, score_columns=score_columns, classes=classes,
                                 llm=llm_options(length_normalize, task, answer_is, answer_options, missing_options)),
            progress=steps, val_fraction=val_fraction, group_by=group_by,
        )
    print_notes(run.notes, quiet, run.reading)
    if is_stdout(json_path) or is_stdout(save):
        # The JSON is the whole of stdout; what the table would have warned about goes to stderr.
        selected = [_selected_line(run)] if len(run.methods) > 1 else []
        for line in selected + _selection_warnings(run) + _bound_warnings(run.results):
            typer.echo(line, err=True)
        return
    if quiet:
        best = run.results["calibrators"][run.best]
        typer.echo(f"{run.best}: test {metrics_line(best['test_post'])} (uncalibrated: "
                   f"{metrics_line(best['test_pre'])})")
        return
    _print_table(run.results, n_val=run.n_val, n_test=run.n_test)
    if _debias_clipped(run.results):
        typer.echo(f"Note: {DEBIAS_NOTE}.", err=True)
    if len(run.methods) > 1:
        table_console().print(_selected_line(run), markup=False, highlight=False)  # wrapped to the terminal
        by_test = min(run.results["calibrators"].items(), key=lambda item: item[1]["test_rank"])[0]
        typer.echo(f"Best by test ECE-EM (shown, not used to choose): {by_test}")
        for line in _selection_warnings(run):
            typer.echo(line)
    for line in _bound_warnings(run.results):
        typer.echo(line)
    typer.echo(f"Wrote {run.written}" if run.written is not None else "Not saved: use --json PATH to write the report.")
    if run.saved is not None:
        typer.echo(f"Saved the fitted '{run.best}' calibrator to {run.saved}")
