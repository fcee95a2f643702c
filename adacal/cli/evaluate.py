"""`adacal evaluate`: calibration metrics (ECE variants, MCE, classwise ECE, NLL, Brier, error) of saved predictions."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from adacal.cli.common import ForceOption, guarded, metrics_line
from adacal.cli.inputs import LabelsFile, LabelsKey, LogitsKey, Renormalize, print_notes, read_options
from adacal.errors import InputError

HELP = """Measure calibration of a model's test predictions: ECE (equal-width, equal-mass, debiased, sweep, smooth), MCE,
classwise ECE, NLL, Brier score and top-1 error, optionally with bootstrap confidence intervals.

PREDICTIONS is a predictions file of any framework (.npz or .pt with `logits`/`probs`/`scores` and
`labels`/`targets`/`y`, or `test_logits`/`test_labels` like a run's predictions.npz; a .pt (logits, labels) pair; an
.npy of scores with --labels FILE or <stem>_labels.npy (or labels.npy) beside it; a .csv with one column per class
and a label column), a checkpoint, or a run folder written by 'adacal train'. 1-D binary scores are taken as
positive-class probabilities when all in [0, 1], else as decision scores (logits); string labels are mapped through
a `classes` array (or a .csv header). Rows that are all in [0, 1] and sum
to 1 are taken as probabilities, anything else as logits; the table and JSON say which was assumed.
The table shows fractions as %; the JSON holds fractions (NLL in nats).

For a checkpoint or run folder whose training did not finish, the report is also written to the run folder as
evaluate.json (unless --calibrator is given); the evaluate.json that train wrote is never replaced. Otherwise a JSON
report is written only with --json.

Examples:

  adacal evaluate preds.npz

  adacal evaluate runs/RUN --metrics ece-em,ece-ew,nll --bootstrap 1000

  adacal evaluate preds.npz --calibrator calibrator.json --json calibrated.json
"""

_UNITS = {"nll": "nats", "brier": ""}


def _check_options(
    n_bins: int, bootstrap: int, seed: int, json_path: Path | None, calibrator: Path | None, n_metrics: int = 1
) -> None:
    from adacal.metrics.binning import check_n_bins
    from adacal.metrics.memory import check_bootstrap_fits

    if n_bins < 1:
        raise InputError(f"Expected --n-bins to be a positive integer, got {n_bins}.")
    check_n_bins(n_bins, name="--n-bins")  # refuses bins that cannot fit in memory, before loading anything
    if bootstrap < 0:
        raise InputError(f"Expected --bootstrap to be a non-negative integer (0 = no intervals), got {bootstrap}.")
    if bootstrap:
        check_bootstrap_fits(bootstrap, 0, n_metrics, name="--bootstrap")
    if seed < 0:
        raise InputError(f"Expected --seed to be a non-negative integer, got {seed}.")
    if json_path is not None and json_path.is_dir():
        raise InputError(f"Expected --json to be a file path, but {json_path} is a folder.")
    if calibrator is not None:
        from adacal.sources import check_regular_file

        check_regular_file(calibrator, "a calibrator file (--calibrator)")


def _format(name: str, value: float) -> str:
    from adacal.metrics import FRACTION_METRICS

    return f"{100 * value:.2f}" if name in FRACTION_METRICS else f"{value:.4f}"


def _print_table(report: dict[str, Any], label: str, calibrated: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from adacal.metrics import FRACTION_METRICS, display_name, metric_key

    results = report["results"]
    config = report["config"]
    assumed = results["assumed_input"]
    kind = "probabilities" if assumed == "probs" else "logits"
    if calibrated:
        kind = f"logits, calibrated by {config['calibrator']}"
    console = Console()
    console.print(
        f"{label}: {results['n_samples']} samples, {results['num_classes']} classes; "
        f"input assumed: {kind}; {config['n_bins']} bins."
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
        unit = "%" if name in FRACTION_METRICS else _UNITS.get(name, "")
        row = [display_name(name), _format(name, value), unit]
        if intervals:
            ci = intervals[key]
            row += [f"{_format(name, ci['low'])} – {_format(name, ci['high'])}", _format(name, ci["std"])]
        table.add_row(*row)
    console.print(table)


@contextlib.contextmanager
def _bootstrap_progress(total: int, silent: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar (count, elapsed, ETA) on stderr for the bootstrap resamples, when stderr is a terminal; yields
    the callback the library calls after each resample (None: nothing is drawn when silent or piped)."""
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
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("bootstrap", total=total)
        yield lambda done, _total: bar.update(task, completed=done)


@guarded
def evaluate(
    predictions: Annotated[
        Path,
        typer.Argument(
            help="Predictions file (.npz, .pt, .npy or .csv), checkpoint, or run folder.",
            show_default=False,
        ),
    ],
    n_bins: Annotated[int, typer.Option("--n-bins", help="Number of bins for the binned metrics.")] = 15,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            help="Comma-separated metrics: error, nll, brier, ece-ew, ece-em, ece-debias, ece-sweep-ew, "
            "ece-sweep-em, ece-smooth, mce, classwise-ece (default: all); ece_em and ECE-EM are accepted too.",
        ),
    ] = None,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap resamples for 95% confidence intervals (0 = none).")
    ] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap resampling.")] = 0,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the JSON report to this file ('-': to stdout, and nothing else goes there).")] = None,
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
) -> None:
    from adacal.writing import check_output, is_stdout
    from adacal.evaluation import calibrated_probs, evaluation_report, resolve_evaluation_input
    from adacal.metrics import resolve_metric_names
    from adacal.reports import write_json
    from adacal.runs import EVALUATE_FILE

    check_output(json_path, flag="--json", inputs=(predictions, calibrator, labels), force=force)
    names = resolve_metric_names(metrics)
    _check_options(n_bins, bootstrap, seed, json_path, calibrator, len(names))
    fitted = None
    if calibrator is not None:
        from adacal.calibrators import load_calibrator

        fitted = load_calibrator(calibrator)

    source = resolve_evaluation_input(
        predictions, data_dir=data_dir, device=device,
        options=read_options(logits_key, labels_key, labels, renormalize),
    )
    scores = source.predictions.logits
    if fitted is not None:
        scores = calibrated_probs(fitted, scores, calibrator_path=calibrator)
    with _bootstrap_progress(bootstrap, quiet) as progress:
        report = evaluation_report(
            scores,
            source.predictions.labels,
            n_bins=n_bins,
            metric_names=names,
            bootstrap=bootstrap,
            seed=seed,
            input_path=source.data_path,
            source=source.describe(),
            calibrator=calibrator,
            progress=progress,
        )

    targets = [json_path] if json_path is not None else []
    kept_run_report = None
    if source.run is not None and fitted is None:
        run_report = source.run.report(EVALUATE_FILE)
        if run_report.exists():
            kept_run_report = run_report  # train wrote it: evaluate never modifies what train wrote
        elif json_path is None or run_report.resolve() != json_path.resolve():
            targets.append(run_report)  # an interrupted run has none yet
    for target in targets:
        write_json(target, report)
    print_notes(source.predictions.notes, quiet)
    if is_stdout(json_path):
        return  # the report is the whole of stdout
    if quiet:
        typer.echo(metrics_line(report["results"]["metrics"]))
    else:
        _print_table(report, str(predictions), calibrated=fitted is not None)
        for target in targets:
            typer.echo(f"Wrote {target}")
        if kept_run_report is not None and json_path is None:
            typer.echo(f"Kept {kept_run_report} as train wrote it; give --json PATH to save this report.")
        if source.run is not None and fitted is not None:
            typer.echo(f"Not writing {EVALUATE_FILE} into {source.run.root}: it describes the uncalibrated model.")
