"""`adacal calibrate`: fit post-hoc calibrators on validation predictions and compare test metrics before and after."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from adacal.cli.common import ForceOption, guarded, metrics_line

HELP = (
    "Fit post-hoc calibrators on validation logits and judge them on test.\n\n"
    "RUN_OR_PREDICTIONS is a run folder written by 'adacal train' (or a checkpoint or predictions.npz inside one), "
    "or a predictions file (.npz or .pt) holding val_logits, val_labels, test_logits and test_labels. For a run, its "
    "predictions.npz is used (for a checkpoint, only when it holds that checkpoint's outputs); otherwise the logits "
    "are recomputed from the checkpoint (for a run folder, the one training selected). The report is written to "
    "calibrate.json in the run folder; nothing else there is touched. For a predictions file the results are only "
    "printed unless --json is given.\n\n"
    "Methods: temperature (temperature scaling), ets (ensemble temperature scaling, Zhang et al. 2020), spline "
    "(Gupta et al. 2021), histogram (equal-mass histogram binning), isotonic (isotonic regression), or all. The "
    "table shows test metrics before and after calibration (ECE and error in %), best first by test ECE-EM after "
    "calibration; with --method all that first row is the 'best' of calibrate.json and what --save writes.\n\n"
    "Example: adacal calibrate runs/RUN --method temperature\n\n"
    "Example: adacal calibrate preds.npz --method all --json calibrate.json --save best.json"
)

# (key in compute_metrics, column header, scale)
TABLE_COLUMNS = (
    ("ece_em", "ECE-EM", 100.0),
    ("ece_ew", "ECE-EW", 100.0),
    ("ece_debias", "ECE-debias", 100.0),
    ("nll", "NLL", 1.0),
    ("brier", "Brier", 1.0),
    ("error", "Error", 100.0),
)


def _methods(method: str) -> list[str]:
    from adacal.calibrators import CALIBRATORS
    from adacal.errors import unknown_name

    if method == "all":
        return CALIBRATORS.names()
    if method not in CALIBRATORS:
        raise unknown_name("calibration method", method, [*CALIBRATORS.names(), "all"])
    return [method]


def _check_output_path(option: str, path: Path | None) -> None:
    from adacal.errors import InputError

    if path is not None and path.is_dir():
        raise InputError(f"Expected {option} to be a file path, got the folder {path}.")


def _load_inputs(source: Path) -> tuple[Any, Any, Path, Any]:
    """(validation predictions, test predictions, the file they came from, the run folder or None)."""
    from adacal.errors import InputError
    from adacal.predictions import load_split_predictions
    from adacal.runs import find_run_folder, require_run_folder, selected_checkpoint

    if not source.exists():
        raise InputError(f"Expected a run folder, checkpoint or predictions file at {source}, but it does not exist.")
    run, checkpoint = None, None
    if source.is_dir():
        run = require_run_folder(source)
    else:
        found = find_run_folder(source)
        if found is not None and source.resolve() == found.predictions.resolve():
            run = found
        elif found is not None and source.resolve().parent == found.checkpoints.resolve():
            run, checkpoint = found, source
    if run is None:
        splits, input_path = load_split_predictions(source), source
    elif run.predictions.is_file() and (checkpoint is None or _predictions_are_from(run, checkpoint)):
        splits, input_path = load_split_predictions(run.predictions), run.predictions
    else:
        if checkpoint is None:
            checkpoint = selected_checkpoint(run)  # the model training selected (best.pt for --select best-val)
        from adacal.training import predict_checkpoint

        input_path = checkpoint
        splits = {split: predict_checkpoint(input_path, split=split) for split in ("val", "test")}
    if splits.get("val") is None:
        raise InputError(
            f"Expected {input_path} to hold validation predictions (val_logits, val_labels) to fit calibrators on, "
            "found none."
        )
    return splits["val"], splits["test"], input_path, run


def _predictions_are_from(run: Any, checkpoint: Path) -> bool:
    """Whether the run's predictions.npz holds this checkpoint's outputs (else a best.pt of another epoch than the
    model training evaluated would be calibrated with the other model's logits)."""
    from adacal.runs import predictions_are_from
    from adacal.training import load_checkpoint

    return predictions_are_from(run, load_checkpoint(checkpoint))


def _describe(params: dict[str, Any]) -> str:
    parts = []
    if "temperature" in params:
        parts.append(f"T={params['temperature']:.3g}")
    if "weights" in params:
        parts.append("w=" + "/".join(f"{round(w, 2):g}" for w in params["weights"]))
    for key, unit in (("n_knots", "knots"), ("n_bins", "bins"), ("n_thresholds", "steps")):
        if key in params:
            parts.append(f"{params[key]} {unit}")
    return "\n".join(parts)  # one per line: the table keeps its metric columns readable at 80 columns


def _cell(metrics: dict[str, Any], key: str, scale: float) -> str:
    value = metrics.get(key)
    if value is None or value != value:
        return "-"
    return f"{value * scale:.2f}" if scale != 1.0 else f"{value:.3f}"


def _print_table(results: dict[str, Any], *, n_val: int, n_test: int) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title="Test metrics before and after calibration (ECE and error in %)",
        caption=f"fitted on {n_val} validation samples, tested on {n_test}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("method", no_wrap=True)
    for _, header, _ in TABLE_COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("params", overflow="fold")
    entries = results["calibrators"]
    before = next(iter(entries.values()))["test_pre"]
    table.add_row("uncalibrated", *(_cell(before, key, scale) for key, _, scale in TABLE_COLUMNS), "", end_section=True)
    for name, entry in entries.items():
        cells = (_cell(entry["test_post"], key, scale) for key, _, scale in TABLE_COLUMNS)
        table.add_row(name, *cells, _describe(entry["params"]))
    Console().print(table)


def run_calibrate(
    source: Path,
    *,
    method: str = "temperature",
    objective: str | None = None,
    n_bins: int = 15,
    json_path: Path | None = None,
    save: Path | None = None,
    quiet: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Everything `adacal calibrate` does; returns the report (written to calibrate.json / --json when there is one)."""
    from adacal.calibrators import TEMPERATURE_OBJECTIVES, build_calibrators, compare_calibrators, save_calibrator
    from adacal.errors import InputError, unknown_name
    from adacal.reports import make_report, write_json
    from adacal.runs import CALIBRATE_FILE

    # Cheap checks first: names, numbers, output paths.
    methods = _methods(method)
    if objective is not None and "temperature" not in methods:
        raise InputError(f"Expected --objective only with --method temperature or all, got --method {method}.")
    if objective is not None and objective not in TEMPERATURE_OBJECTIVES:
        raise unknown_name("objective", objective, TEMPERATURE_OBJECTIVES)
    if isinstance(n_bins, bool) or n_bins < 1:
        raise InputError(f"Expected --n-bins to be a positive integer, got {n_bins}.")
    used_objective = (objective or "ece-em") if "temperature" in methods else None
    build_calibrators(methods, objective=used_objective, n_bins=n_bins)
    from adacal.writing import check_output, is_stdout

    check_output(json_path, flag="--json", inputs=(source,), force=force)
    check_output(save, flag="--save", inputs=(source,), force=force)
    _check_output_path("--json", json_path)
    _check_output_path("--save", save)
    if is_stdout(json_path) and is_stdout(save):
        raise InputError("Expected at most one of --json and --save to be '-' (standard output), got both.")

    val, test, input_path, run = _load_inputs(source)
    comparison = compare_calibrators(
        val.logits, val.labels, test.logits, test.labels, methods=methods, objective=used_objective, n_bins=n_bins
    )
    report = make_report(
        "calibrate",
        config={"method": method, "objective": used_objective, "n_bins": n_bins, "input": str(source)},
        results=comparison.results,
        input_path=input_path,
    )

    out_path = json_path if json_path is not None else (run.report(CALIBRATE_FILE) if run is not None else None)
    if out_path is not None:
        write_json(out_path, report)
    if save is not None:
        save_calibrator(comparison.fitted[comparison.best], save)

    if is_stdout(json_path) or is_stdout(save):
        return report  # the JSON is the whole of stdout
    if quiet:
        best = comparison.results["calibrators"][comparison.best]
        typer.echo(f"{comparison.best}: test {metrics_line(best['test_post'])} (uncalibrated: {metrics_line(best['test_pre'])})")
    if not quiet:
        _print_table(comparison.results, n_val=len(val), n_test=len(test))
        if len(methods) > 1:
            typer.echo(f"Best by test ECE-EM after calibration: {comparison.best}")
        typer.echo(f"Wrote {out_path}" if out_path is not None else "Not saved: use --json PATH to write the report.")
        if save is not None:
            typer.echo(f"Saved the fitted '{comparison.best}' calibrator to {save}")
    return report


def register(app: typer.Typer) -> None:
    @app.command("calibrate", help=HELP)
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
            str,
            typer.Option(
                help="Calibrator: temperature, ets, spline, histogram, isotonic, or all (fit each and compare)."
            ),
        ] = "temperature",
        objective: Annotated[
            Optional[str],
            typer.Option(
                help="Temperature scaling objective: ece-em (the paper: grid T = 0.1..10.0 minimising validation "
                "ECE-EM), ece-ew (same grid, ECE-EW) or nll (continuous NLL minimum). Default ece-em; "
                "only with --method temperature or all.",
                show_default=False,
            ),
        ] = None,
        n_bins: Annotated[
            int, typer.Option("--n-bins", help="Bins for the ECE metrics, the ECE objectives and histogram binning.")
        ] = 15,
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
                help="Save the fitted calibrator as JSON (the best one with --method all); load it with "
                "adacal.calibrators.load_calibrator.",
                show_default=False,
            ),
        ] = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print one summary line instead of the table.")] = False,
        force: ForceOption = False,
    ) -> None:
        run_calibrate(
            source, method=method, objective=objective, n_bins=n_bins, json_path=json_path, save=save, quiet=quiet,
            force=force,
        )
