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
    method: str | None = None,
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
    val_fraction: float | None = None,
    group_by: str | None = None,
) -> CalibrationRun:
    """Everything `adacal calibrate` does, without printing.

    Fits `method` (a calibrator name or "all"; None: temperature for class scores, platt for top-label
    confidences) on the validation predictions of `source` (a run folder, a checkpoint
    or predictions.npz in one, or a file with val_/test_ logits and labels; or the test predictions with `val` for
    the validation ones) and measures it on test. Writes the report to `json_path` ("-": standard output), else to
    the run folder's calibrate.json for a run; `save` receives the chosen calibrator. `options` is a
    `adacal.sources.ReadOptions`; `progress(done, total, description)` is called after each fit. `val_fraction` F
    fits on a seeded (`seed`), stratified random F of one file's rows and tests on the rest. Top-label
    `(confidence, correct)` inputs get the confidence maps (`adacal.commands.calibrate_confidences`), and
    `group_by` KEY their before/after figures per group. Every cheap check
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
    from adacal.calibrators.confidence_maps import CONFIDENCE_MAPS, DEFAULT_MAP, confidence_map_methods

    default_method = method is None
    if default_method:
        method = "temperature"

    try:
        methods: list[str] | None = calibration_methods(method)
    except InputError:
        if method not in CONFIDENCE_MAPS:
            raise
        methods = None  # a confidence map only (platt): known once the input is read
    map_methods = ([DEFAULT_MAP] if default_method else confidence_map_methods(method)
                   if method in (*CONFIDENCE_MAPS, "all") else None)
    several = method == "all"
    if val_fraction is not None:
        from adacal.calibrators.holdout import check_val_fraction

        val_fraction = check_val_fraction(val_fraction)
        if val is not None:
            raise InputError("Expected at most one of --val and --val-fraction, got both: --val FILE gives the "
                             "validation rows, --val-fraction F draws them from RUN_OR_PREDICTIONS.")
        if source.is_dir() and not _is_llm_folder(source):
            raise InputError("Expected --val-fraction with a predictions file of one set of rows, not a run folder, "
                             "which has its own val and test splits: drop --val-fraction.")
    if group_by is not None:
        from adacal.interpretation.groups import check_group_key

        group_by = check_group_key(group_by)
    if objective is not None and "temperature" not in (methods or []):
        raise InputError(f"Expected --objective only with --method temperature or all, got --method {method}.")
    if objective is not None and objective not in TEMPERATURE_OBJECTIVES:
        raise unknown_name("objective", objective, TEMPERATURE_OBJECTIVES)
    check_positive_int(n_bins, "--n-bins")
    for option, value in (("--folds", folds), ("--select-metric", select_metric)):
        if value is not None and not several:
            raise InputError(f"Expected {option} only with --method all (to choose between calibrators), "
                             f"got --method {method}.")
    if folds is not None:
        check_integer(folds, "--folds", minimum=2)
    check_integer(seed, "--seed", minimum=0)  # numpy's generator takes no negative seed
    folds = DEFAULT_FOLDS if folds is None else folds
    select_metric = DEFAULT_SELECTION_METRIC if select_metric is None else select_metric
    check_selection(select_metric, folds)
    used_objective = (objective or "nll") if "temperature" in (methods or []) else None
    if methods is not None:
        build_calibrators(methods, objective=used_objective, n_bins=n_bins)

    options = options or ReadOptions()
    if group_by is not None:
        from dataclasses import replace

        from adacal.interpretation.groups import check_table_group_key

        check_table_group_key(source, group_by, options=options)
        options = replace(options, group_by=group_by)  # a text table's column of that name is no class's scores
    own_inputs = (source, val, getattr(options, "labels_file", None))
    check_output(json_path, flag="--json", inputs=own_inputs, force=force)
    check_output(save, flag="--save", inputs=own_inputs, force=force)
    _check_output_path("--json", json_path)
    _check_output_path("--save", save)
    if is_stdout(json_path) and is_stdout(save):
        raise InputError("Expected at most one of --json and --save to be '-' (standard output), got both.")

    top_label = _confidence_sets(source, val, val_fraction, seed, options, group_by)
    if top_label is not None:
        return _calibrate_confidences(
            top_label, source=source, val=val, val_fraction=val_fraction,
            method=DEFAULT_MAP if default_method else method, methods=map_methods,
            objective=objective, n_bins=n_bins, folds=folds, select_metric=select_metric, seed=seed,
            json_path=json_path, save=save, group_by=group_by, options=options, progress=progress)
    if methods is None:
        raise InputError(f"Expected top-label confidences (confidence, correct) for --method {method} (a confidence "
                         f"map), but {source.name} holds class scores: choose a calibrator of class scores, e.g. "
                         "--method temperature.")
    if val_fraction is not None:
        inputs = _split_one_file(source, val_fraction, seed, options, group_by)
    else:
        inputs = resolve_calibration_input(source, val=val, options=options)
        if group_by is not None:
            inputs = _with_test_groups(inputs, group_by)
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
    split_record = getattr(inputs, "split", None)
    if split_record is not None:
        config.update({"val_fraction": val_fraction, "seed": seed})
    results = {**comparison.results, "input": {name: split.interpretation.to_dict() for name, split in
                                               (("val", inputs.val), ("test", inputs.test))
                                               if split.interpretation is not None},
               **({"split": split_record} if split_record is not None else {})}
    if group_by is not None:
        config["group_by"] = group_by
        results["groups"] = _score_groups(inputs.test, group_by, comparison.fitted[comparison.best], n_bins)
    report = make_report("calibrate", config=config, results=results, input_path=inputs.input_path)

    written = report_path
    if written is not None:
        write_json(written, report)
    if save is not None:
        save_calibrator(comparison.fitted[comparison.best], save)
    return CalibrationRun(
        report=report, results=results, best=comparison.best, n_val=len(inputs.val),
        n_test=len(inputs.test), methods=methods, written=written, saved=save,
        notes=list(inputs.notes) + _split_notes(split_record, source)
        + _missing_classes_note(inputs.val.labels, inputs.val.num_classes)
        + convergence_notes(results) + ece_noise_notes(results),
        reading=reading_lines(inputs.val.interpretation, inputs.test.interpretation, names=("val", "test")),
    )


def _confidence_sets(source: Path, val: Path | None, val_fraction: float | None, seed: int, options: Any,
                     group_by: str | None) -> Any:
    """The top-label pairs of a predictions file (`read_confidence_sets`), or None for class scores, a run folder
    or an adacal checkpoint."""
    from adacal.commands.calibrate_confidences import read_confidence_sets
    from adacal.commands.inputs import find_run_folder

    if source.is_dir() and _is_llm_folder(source):
        return read_confidence_sets(source, val=val, val_fraction=val_fraction, seed=seed, options=options,
                                    group_by=group_by)
    if source.is_dir() or not source.is_file() or find_run_folder(source) is not None:
        return None
    if source.suffix.lower() in (".pt", ".pth"):
        from adacal.commands.inputs import _is_checkpoint

        if _is_checkpoint(source)[0]:
            return None
    return read_confidence_sets(source, val=val, val_fraction=val_fraction, seed=seed, options=options,
                                group_by=group_by)


def _is_llm_folder(path: Path) -> bool:
    """A folder of lm-evaluation-harness sample files, read as one input (docs/inputs.md §10), not a run folder."""
    from adacal.interpretation.llm import harness_input

    return harness_input(path) is not None


@dataclass(frozen=True)
class _Described:
    options: Any
    notes: tuple[str, ...]


@dataclass(frozen=True)
class _SplitInput:
    """One file's rows split by --val-fraction, shaped as `resolve_calibration_input`'s answer."""

    val: Any
    test: Any
    input_path: Path
    split: dict[str, Any]
    run: None = None
    options: Any = None

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.val.notes + self.test.notes))


def _with_test_groups(inputs: Any, key: str) -> Any:
    """The calibration input with `test.groups[key]` filled from its file (docs/inputs.md §9); a model's outputs
    recomputed from a checkpoint carry no per-sample keys."""
    from dataclasses import replace

    from adacal.interpretation.groups import attach_groups
    from adacal.interpretation.record import Interpretation

    record = inputs.test.interpretation
    if not isinstance(record, Interpretation) or record.format == "model":
        raise InputError(f"Expected --group-by {key} with a predictions file, got {inputs.input_path.name}, whose "
                         f"test outputs were computed from a checkpoint and carry no per-sample keys: calibrate a "
                         f"predictions file that holds '{key}'.")
    return replace(inputs, test=attach_groups(inputs.test, Path(record.file), key, options=inputs.options))


def _score_groups(test: Any, key: str, fitted: Any, n_bins: int) -> dict[str, Any]:
    """Per-group figures of the test rows of class scores, uncalibrated and after the chosen calibrator."""
    from adacal.evaluation import evaluate_predictions
    from adacal.grouped import grouped_results

    kind = _read_kind(test)
    probs = fitted.transform(test.logits, scores_kind=None if kind == "auto" else kind)
    tables = {}
    for stage, scores, stage_kind in (("before", test.logits, kind), ("after", probs, "probs")):
        overall = evaluate_predictions(scores, test.labels, n_bins=n_bins, scores_kind=stage_kind)
        tables[stage] = grouped_results(scores, test.labels, test.groups[key], key=key, overall=overall,
                                        n_bins=n_bins)
    return {"key": key, **tables}


def _split_one_file(source: Path, val_fraction: float, seed: int, options: Any,
                    group_by: str | None = None) -> _SplitInput:
    """--val-fraction on class scores: the file's one set of rows split, stratified by label."""
    from adacal.calibrators.holdout import holdout_split
    from adacal.commands.calibrate_confidences import split_rows
    from adacal.interpretation.split import WHOLE_FILE
    from adacal.interpretation.read import load_predictions

    if not source.is_file():
        raise InputError(f"Expected RUN_OR_PREDICTIONS to be a predictions file for --val-fraction, got {source}.")
    whole = load_predictions(source, options=options)
    record = whole.interpretation
    if record is not None and record.split != WHOLE_FILE:
        raise InputError(f"Expected --val-fraction with a file of one set of rows, but {source.name} has its own "
                         "val_ and test_ splits: drop --val-fraction to fit on its val_ rows.")
    if group_by is not None:
        from adacal.interpretation.groups import attach_groups

        whole = attach_groups(whole, source, group_by, options=options)
    val_rows, test_rows = holdout_split(whole.labels, val_fraction, seed=seed)
    split = {"source": "--val-fraction", "val_fraction": val_fraction, "seed": seed, "stratified_by": "label",
             "n_val": int(val_rows.size), "n_test": int(test_rows.size)}
    return _SplitInput(split_rows(whole, val_rows), split_rows(whole, test_rows), source, split, options=options)


def _calibrate_confidences(sets: Any, *, source: Path, val: Path | None, val_fraction: float | None, method: str,
                           methods: list[str] | None, objective: str | None, n_bins: int, folds: int,
                           select_metric: str, seed: int, json_path: Path | None, save: Path | None,
                           group_by: str | None, options: Any, progress: Any) -> CalibrationRun:
    """`run_calibrate` on top-label pairs: the confidence maps, the report, the saved map."""
    from adacal.calibrators.confidence_maps import CONFIDENCE_MAPS, save_confidence_map
    from adacal.commands.calibrate_confidences import calibrate_confidences
    from adacal.interpretation import reading_lines
    from adacal.reports import make_report, write_json

    if methods is None:
        raise InputError(f"Expected --method {', '.join(CONFIDENCE_MAPS)} or all for top-label confidences "
                         f"(confidence, correct), got {method}, a calibrator of class scores.")
    if objective is not None:
        raise InputError("Expected --objective only with class scores (temperature scaling), got top-label "
                         "confidences: drop --objective.")
    key = select_metric.replace("-", "_")
    results, fitted, best = calibrate_confidences(sets, methods=methods, n_bins=n_bins, folds=folds, metric=key,
                                                  seed=seed, group_by=group_by, progress=progress)
    results["split"] = sets.split
    results["input"] = {name: part.interpretation.to_dict() for name, part in (("val", sets.val), ("test", sets.test))
                        if part.interpretation is not None}
    config = {"method": method, "n_bins": n_bins, "input": str(source), **({"val": str(val)} if val else {}),
              **({"val_fraction": val_fraction, "seed": seed} if val_fraction is not None else {}),
              **({"group_by": group_by} if group_by is not None else {}),
              **_describe_inputs(_Described(options, sets.notes))}
    if len(methods) > 1:
        config.update({"folds": folds, "select_metric": key, "seed": seed})
    report = make_report("calibrate", config=config, results=results, input_path=source)
    if _same_file(json_path, save):
        raise InputError(f"Expected --save and --json to be different files, got {save} for both: one would "
                         "overwrite the other.")
    if json_path is not None:
        write_json(json_path, report)
    if save is not None:
        save_confidence_map(fitted[best], save)
    return CalibrationRun(
        report=report, results=results, best=best, n_val=len(sets.val), n_test=len(sets.test), methods=methods,
        written=json_path, saved=save, notes=list(sets.notes) + _split_notes(sets.split, source) + _map_notes(results),
        reading=reading_lines(sets.val.interpretation, sets.test.interpretation, names=("val", "test")),
    )


def _split_notes(split: dict[str, Any] | None, source: Path) -> list[str]:
    """The line saying how --val-fraction split the file (none for other inputs)."""
    if not split or split.get("source") != "--val-fraction":
        return []
    total = split["n_val"] + split["n_test"]
    return [f"--val-fraction {split['val_fraction']:g}: {split['n_val']} of {source.name}'s {total} rows drawn for "
            f"validation (seed {split['seed']}, stratified by {split['stratified_by']}), the other {split['n_test']} "
            "tested on"]


def _map_notes(results: dict[str, Any]) -> list[str]:
    notes = []
    platt = (results["calibrators"].get("platt") or {}).get("params") or {}
    if platt.get("converged") is False:
        notes.append("platt did not converge: the answers are (nearly) separated by confidence on validation, so "
                     "its slope grew without bound; prefer isotonic or histogram, or give more validation rows")
    return notes


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
