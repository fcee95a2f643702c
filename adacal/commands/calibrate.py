"""Post-hoc calibration of saved predictions, as `adacal calibrate` runs it: check the options, read the validation
and test predictions (`adacal.sources`), fit and compare the calibrators (`adacal.calibrators.compare_calibrators`),
build the report and write it (and the chosen calibrator).

`run_calibrate` is the whole command as one Python call; it never prints. The CLI only turns its options into the
call and prints the returned `CalibrationRun`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adacal.checks import check_integer, check_positive_int
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError, unknown_name

__all__ = ["CalibrationRun", "calibration_methods", "run_calibrate"]

@dataclass(frozen=True)
class CalibrationRun:
    """What `run_calibrate` did: the report, the chosen calibrator and where things were written."""

    report: dict[str, Any]
    results: dict[str, Any]  # compare_calibrators' results: "calibrators", "best", "selection"
    best: str
    n_val: int
    n_test: int
    methods: list[str]
    written: Path | None = None  # the JSON report (RUN/calibrate.json or --json), None when not saved
    saved: Path | None = None  # the fitted calibrator (--save)
    notes: list[str] = field(default_factory=list)  # what was assumed reading the inputs
    reading: list[str] = field(default_factory=list)  # how each input was read: one line per set (val, test)


def calibration_methods(method: str) -> list[str]:
    """The calibrators `method` names: one registered name, or every one for "all"."""
    from adacal.calibrators import CALIBRATORS

    if method == "all":
        return CALIBRATORS.names()
    if method not in CALIBRATORS:
        raise unknown_name("calibration method", method, [*CALIBRATORS.names(), "all"])
    return [method]


def _check_output_path(option: str, path: Path | None) -> None:
    if path is not None and path.is_dir():
        raise InputError(f"Expected {option} to be a file path, got the folder {path}.")


def _describe_inputs(inputs: Any) -> dict[str, Any]:
    """Reading options and what was assumed reading the input, for the report's config."""
    from adacal.commands.inputs import describe_options

    described = describe_options(inputs.options)
    if inputs.notes:
        described["assumed"] = list(inputs.notes)
    return described


def run_calibrate(
    source: str | os.PathLike,
    *,
    method: str = "temperature",
    objective: str | None = None,
    n_bins: int = DEFAULT_N_BINS,
    folds: int | None = None,
    select_metric: str | None = None,
    seed: int = 0,
    json_path: str | os.PathLike | None = None,
    save: str | os.PathLike | None = None,
    force: bool = False,
    val: str | os.PathLike | None = None,
    options: Any = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> CalibrationRun:
    """Everything `adacal calibrate` does, without printing.

    Fits `method` (a calibrator name or "all") on the validation predictions of `source` (a run folder, a checkpoint
    or predictions.npz in one, or a file with val_/test_ logits and labels; or the test predictions with `val` for
    the validation ones) and measures it on test. Writes the report to `json_path` ("-": standard output), else to
    the run folder's calibrate.json for a run; `save` receives the chosen calibrator. `options` is a
    `adacal.sources.ReadOptions`; `progress(done, total, description)` is called after each fit. Every cheap check
    (names, numbers, output paths) runs before anything is read, and nothing is written before the fits succeed.
    """
    from adacal.calibrators import TEMPERATURE_OBJECTIVES, build_calibrators, compare_calibrators, save_calibrator
    from adacal.calibrators.compare import DEFAULT_FOLDS, DEFAULT_SELECTION_METRIC, check_selection
    from adacal.reports import make_report, write_json
    from adacal.runs import CALIBRATE_FILE
    from adacal.interpretation import reading_lines
    from adacal.commands.inputs import resolve_calibration_input
    from adacal.sources import ReadOptions
    from adacal.writing import check_output, is_stdout

    source = Path(source)
    val = None if val is None else Path(val)
    json_path = None if json_path is None else Path(json_path)
    save = None if save is None else Path(save)

    # Cheap checks first: names, numbers, output paths.
    methods = calibration_methods(method)
    if objective is not None and "temperature" not in methods:
        raise InputError(f"Expected --objective only with --method temperature or all, got --method {method}.")
    if objective is not None and objective not in TEMPERATURE_OBJECTIVES:
        raise unknown_name("objective", objective, TEMPERATURE_OBJECTIVES)
    check_positive_int(n_bins, "--n-bins")
    for option, value in (("--folds", folds), ("--select-metric", select_metric)):
        if value is not None and len(methods) == 1:
            raise InputError(f"Expected {option} only with --method all (to choose between calibrators), "
                             f"got --method {method}.")
    if folds is not None:
        check_integer(folds, "--folds", minimum=2)
    check_integer(seed, "--seed", minimum=0)  # numpy's generator takes no negative seed
    folds = DEFAULT_FOLDS if folds is None else folds
    select_metric = DEFAULT_SELECTION_METRIC if select_metric is None else select_metric
    check_selection(select_metric, folds)
    used_objective = (objective or "nll") if "temperature" in methods else None
    build_calibrators(methods, objective=used_objective, n_bins=n_bins)

    options = options or ReadOptions()
    own_inputs = (source, val, getattr(options, "labels_file", None))
    check_output(json_path, flag="--json", inputs=own_inputs, force=force)
    check_output(save, flag="--save", inputs=own_inputs, force=force)
    _check_output_path("--json", json_path)
    _check_output_path("--save", save)
    if is_stdout(json_path) and is_stdout(save):
        raise InputError("Expected at most one of --json and --save to be '-' (standard output), got both.")

    inputs = resolve_calibration_input(source, val=val, options=options)
    report_path = json_path if json_path is not None else (
        inputs.run.report(CALIBRATE_FILE) if inputs.run is not None else None)
    if _same_file(report_path, save):
        where = "--json" if json_path is not None else f"the report ({report_path})"
        raise InputError(f"Expected --save and {where} to be different files, got {save} for both: one would "
                         "overwrite the other.")
    comparison = compare_calibrators(
        inputs.val.logits, inputs.val.labels, inputs.test.logits, inputs.test.labels, methods=methods,
        objective=used_objective, n_bins=n_bins, folds=folds, metric=select_metric, seed=seed, progress=progress,
        scores_kind=_read_kind(inputs.val), test_scores_kind=_read_kind(inputs.test),
    )
    selection = comparison.results["selection"]
    config = {"method": method, "objective": used_objective, "n_bins": n_bins, "input": str(source),
              **({"val": str(val)} if val is not None else {}), **_describe_inputs(inputs)}
    if len(methods) > 1:
        config.update({"folds": folds, "select_metric": selection["metric"], "seed": seed})
    results = {**comparison.results, "input": {name: split.interpretation.to_dict() for name, split in
                                               (("val", inputs.val), ("test", inputs.test))
                                               if split.interpretation is not None}}
    report = make_report("calibrate", config=config, results=results, input_path=inputs.input_path)

    written = report_path
    if written is not None:
        write_json(written, report)
    if save is not None:
        save_calibrator(comparison.fitted[comparison.best], save)
    return CalibrationRun(
        report=report, results=results, best=comparison.best, n_val=len(inputs.val),
        n_test=len(inputs.test), methods=methods, written=written, saved=save,
        notes=list(inputs.notes) + _missing_classes_note(inputs.val.labels, inputs.val.num_classes)
        + convergence_notes(results) + ece_noise_notes(results),
        reading=reading_lines(inputs.val.interpretation, inputs.test.interpretation, names=("val", "test")),
    )


def _read_kind(predictions: Any) -> str:
    """The kind the file reader decided for a set ("logits" / "probs"), or "auto" for predictions without a record."""
    record = getattr(predictions, "interpretation", None)
    return record.scores_kind if record is not None else "auto"


def convergence_notes(results: dict[str, Any]) -> list[str]:
    """What to try for each calibrator whose fit stopped at its iteration limit before converging (its parameters,
    and so its test figures, may be far from the optimum the method stands for)."""
    notes = []
    for name, entry in (results.get("calibrators") or {}).items():
        params = entry.get("params") or {}
        if params.get("converged", True) is False:
            limit = f" after {params['n_iter']} iterations" if params.get("n_iter") else ""
            notes.append(
                f"{name} did not converge{limit}: its fit may be far from its optimum; prefer a calibrator with "
                "fewer parameters (temperature, vector scaling), give more validation samples, or from Python raise "
                f"its iteration limit or its regularisation (build_calibrator({name!r}, max_iter=2000))"
            )
    return notes


def ece_noise_notes(results: dict[str, Any]) -> list[str]:
    """How noisy 15-bin ECE is on a small validation split (under SMALL_VALIDATION samples): the ECE-EM a perfectly
    calibrated model with the same confidences would show there by chance (`adacal.calibrators.compare.ece_noise`)."""
    selection = results.get("selection") or {}
    noise = selection.get("ece_noise")
    if not noise:
        return []
    n, bins = noise["n"], noise["n_bins"]
    fold = (f" and ~{100 * noise['expected_fold_ece_em']:.1f}% on one {noise['fold_size']}-sample fold of the "
            "cross-validation") if noise.get("expected_fold_ece_em") is not None else ""
    advice = ("" if not selection.get("folds") else "; the choice is by CV NLL, a proper scoring rule"
              if selection.get("metric") == "nll" else "; --select-metric nll (the default) chooses by a proper "
              "scoring rule instead")
    return [f"the validation split has only {n} samples: its {bins}-bin ECE-EM is noisy there, a perfectly calibrated "
            f"model with these confidences would still show ~{100 * noise['expected_ece_em']:.1f}% on {n} samples"
            f"{fold} (mean of {noise['simulations']} seeded simulations), so ECE differences below that are "
            f"noise{advice}"]


def _same_file(first: Path | None, second: Path | None) -> bool:
    """Whether two output paths name one file (never for standard output, "-")."""
    from adacal.writing import is_stdout

    if first is None or second is None or is_stdout(first) or is_stdout(second):
        return False
    return os.path.realpath(first) == os.path.realpath(second)


def _missing_classes_note(labels: Any, num_classes: int) -> list[str]:
    """A warning when the validation labels leave out classes: every calibrator is fitted without seeing them, and
    the class-specific ones (vector and matrix scaling, Dirichlet) learn nothing of them."""
    import numpy as np

    present = np.unique(labels)
    if present.size == num_classes:
        return []
    missing = sorted(set(range(num_classes)) - set(present.tolist()))
    shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
    return [f"the validation labels hold {present.size} of the {num_classes} classes (none of class {shown}): "
            "calibrators fitted on them have not seen those classes, and cross-validated selection is unreliable"]
