"""`adacal calibrate`: fit post-hoc calibrators on validation predictions and compare test metrics before and after."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from adacal.cli.common import ForceOption, guarded, metrics_line
from adacal.cli.inputs import LabelsFile, LabelsKey, LogitsKey, Renormalize, print_notes, read_options

HELP = (
    "Fit post-hoc calibrators on validation logits and judge them on test.\n\n"
    "RUN_OR_PREDICTIONS is a run folder written by 'adacal train' (or a checkpoint or predictions.npz inside one), "
    "or a predictions file (.npz or .pt) holding val_logits, val_labels, test_logits and test_labels, or the test "
    "predictions of any framework with --val FILE for the validation ones (formats as in 'adacal evaluate'). For a run, its "
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


def _describe_inputs(inputs: Any) -> dict[str, Any]:
    """Reading options and what was assumed reading the input, for the report's config."""
    from adacal.sources.resolve import describe_options

    described = describe_options(inputs.options)
    if inputs.notes:
        described["assumed"] = list(inputs.notes)
    return described


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
    val: Path | None = None,
    options: Any = None,
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

    own_inputs = (source, val, getattr(options, "labels_file", None))
    check_output(json_path, flag="--json", inputs=own_inputs, force=force)
    check_output(save, flag="--save", inputs=own_inputs, force=force)
    _check_output_path("--json", json_path)
    _check_output_path("--save", save)
    if is_stdout(json_path) and is_stdout(save):
        raise InputError("Expected at most one of --json and --save to be '-' (standard output), got both.")

    from adacal.sources import ReadOptions, resolve_calibration_input

    val_path = val
    inputs = resolve_calibration_input(source, val=val, options=options or ReadOptions())
    val, test, input_path, run = inputs.val, inputs.test, inputs.input_path, inputs.run
    comparison = compare_calibrators(
        val.logits, val.labels, test.logits, test.labels, methods=methods, objective=used_objective, n_bins=n_bins
    )
    report = make_report(
        "calibrate",
        config={"method": method, "objective": used_objective, "n_bins": n_bins, "input": str(source),
                **({"val": str(val_path)} if val_path is not None else {}), **_describe_inputs(inputs)},
        results=comparison.results,
        input_path=input_path,
    )

    out_path = json_path if json_path is not None else (run.report(CALIBRATE_FILE) if run is not None else None)
    if out_path is not None:
        write_json(out_path, report)
    if save is not None:
        save_calibrator(comparison.fitted[comparison.best], save)

    print_notes(inputs.notes, quiet)
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
        val: Annotated[
            Optional[Path],
            typer.Option("--val", help="Validation predictions to fit on (any format evaluate reads); "
                                       "RUN_OR_PREDICTIONS then holds the test predictions.", show_default=False),
        ] = None,
        logits_key: LogitsKey = None,
        labels_key: LabelsKey = None,
        labels: LabelsFile = None,
        renormalize: Renormalize = False,
    ) -> None:
        run_calibrate(
            source, method=method, objective=objective, n_bins=n_bins, json_path=json_path, save=save, quiet=quiet,
            force=force, val=val, options=read_options(logits_key, labels_key, labels, renormalize),
        )
