"""`adacal evaluate` as one library call: the predictions a path points to (a predictions file of any framework, a
checkpoint or a run folder; `adacal.commands.inputs`), measured and reported, written where the command writes
(`--json`, and a run folder's evaluate.json when it has none; never replacing the one train wrote)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from adacal.checks import check_device_name, check_non_negative_int, check_positive_int
from adacal.commands.inputs import EvaluationInput, resolve_evaluation_input
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.evaluation import bins_note, calibrated_probs, confidence_report, evaluation_report
from adacal.metrics.allocation import check_bootstrap_fits
from adacal.metrics.binning import check_n_bins
from adacal.metrics.calibration import resolve_metric_names
from adacal.metrics.calibration_tests import TEST_DISPLAY_NAMES  # noqa: F401  (the CLI's table headers)


@dataclass(frozen=True)
class EvaluationRun:
    """What `run_evaluate` did: the report, where it was written and what it left alone."""

    report: dict[str, Any]
    source: EvaluationInput
    written: list[Path] = field(default_factory=list)  # --json, and a run's evaluate.json when it had none
    kept: Path | None = None  # the run's evaluate.json that was there already: never replaced
    calibrated: bool = False  # the report describes the scores after --calibrator
    # Who wrote `kept`: "train" (the run's own report), "evaluate" (an earlier `adacal evaluate` of a run that had
    # none) or "unreadable" (not a readable evaluate report); `kept_detail` says more (the epoch scored, the problem).
    kept_by: str | None = None
    kept_detail: str | None = None
    # The run's evaluate.json left unwritten (there was none) because the scored checkpoint is not the model the run
    # stands for (best.pt of another epoch than a finished run selected); `not_written_reason` says so.
    not_written: Path | None = None
    not_written_reason: str | None = None

    @property
    def notes(self) -> list[str]:
        """What was assumed reading the input (binary scores, class names, renormalised rows), which epoch's
        checkpoint was scored when training had not finished, and per-bin statistics left out of a report with very
        many bins."""
        checkpoint = (self.report["config"].get("source") or {}).get("checkpoint") or {}
        unfinished = [checkpoint["note"]] if checkpoint.get("note") else []
        return (list(self.source.predictions.notes) + unfinished + bins_note(int(self.report["config"]["n_bins"]))
                + debias_note(self.report["results"]) + top_label_notes(self.report["results"]))

    @property
    def reading(self) -> list[str]:
        """How the input was read (`adacal.interpretation.Interpretation.summary`), one line."""
        from adacal.interpretation import reading_lines

        return reading_lines(self.source.predictions.interpretation)

    @property
    def kept_message(self) -> str | None:
        """The line saying why the run's evaluate.json was left as it is (None when nothing was kept)."""
        if self.kept is None:
            return None
        if self.kept_by == "train":
            return f"Kept {self.kept} as train wrote it; give --json PATH to save this report."
        if self.kept_by == "evaluate":
            detail = f" ({self.kept_detail})" if self.kept_detail else ""
            return (f"Kept {self.kept}, which an earlier 'adacal evaluate' wrote{detail}; give --json PATH to save "
                    "this report.")
        detail = f" ({self.kept_detail})" if self.kept_detail else ""
        return (f"Kept {self.kept} unchanged, though it is not a readable evaluate report{detail}; give --json PATH to "
                "save this report.")

    @property
    def not_written_message(self) -> str | None:
        """The line saying why the run's missing evaluate.json was not written (None when it was, or was there)."""
        if self.not_written is None:
            return None
        return f"Not writing {self.not_written}: {self.not_written_reason}; give --json PATH to save this report."



def top_label_input(source: EvaluationInput) -> bool:
    """Whether the input is top-label `(confidence, correct)` pairs rather than class scores."""
    from adacal.interpretation.confidence import TopLabelPredictions

    return isinstance(source.predictions, TopLabelPredictions)


def top_label_notes(results: dict[str, Any]) -> list[str]:
    """What a report of top-label confidences leaves out, and why."""
    if results.get("assumed_input") != "confidences":
        return []
    skipped = results.get("skipped_metrics") or []
    asked = f" ({', '.join(skipped)} asked for)" if skipped else ""
    return [f"top-label confidences: the metrics of every class's probability (NLL, Brier, classwise ECE) are not "
            f"computed{asked}; NLL-CORRECT and BRIER-TOP are those of whether the top answer was right",
            *(results.get("notes") or [])]


def convention_lines(results: dict[str, Any]) -> list[str]:
    """The lines beneath the metrics table naming the conventions of its Brier scores and (for a binary model) its
    ECEs, from results.conventions (docs/conventions.md, "Binary models")."""
    conventions = results.get("conventions") or {}
    binary = results.get("num_classes") == 2
    lines = []
    if "brier" in conventions:
        lines.append("Brier is the multi-class sum Σ_k (p_k − y_k)² = 2 × Brier-Positive (sklearn's)." if binary
                     else "Brier is the multi-class sum Σ_k (p_k − y_k)², in [0, 2].")
    if binary and {"ece_ew", "ece_em"} & set(conventions):
        lines.append("ECE-EW/-EM are top-label; the -Positive metrics read P(class 1) against label 1.")
    return lines


def debias_below_resolution(results: dict[str, Any]) -> bool:
    """Whether ECE-DEBIAS reads 0 because its estimate of the squared error is not positive (`results.
    ece_debias_squared`): below the estimator's resolution, not a measured perfect calibration."""
    square = results.get("ece_debias_squared")
    return isinstance(square, (int, float)) and not isinstance(square, bool) and square <= 0.0


def debias_note(results: dict[str, Any]) -> list[str]:
    """The line saying what a clipped ECE-DEBIAS means, when it is clipped."""
    if not debias_below_resolution(results):
        return []
    return [f"ECE-DEBIAS ≤ 0: its estimate of the squared error, {results['ece_debias_squared']:.3g}, is below the "
            "estimator's resolution (the bias correction exceeds the squared gaps); it is no measured perfect "
            "calibration (JSON: results.ece_debias_squared)"]


def check_evaluate_options(
    n_bins: Any, bootstrap: Any, seed: Any, json_path: str | os.PathLike | None = None,
    calibrator: str | os.PathLike | None = None, n_metrics: int = 1, device: Any = "auto",
    test_resamples: Any = None,
) -> None:
    """`adacal evaluate`'s cheap checks, before anything is loaded: bins and resamples that fit in memory, a seed,
    --json a file path, --calibrator a regular file, --device a device name."""
    check_device_name(device)
    check_positive_int(n_bins, "--n-bins")
    check_n_bins(n_bins, name="--n-bins")  # refuses bins that cannot fit in memory
    check_non_negative_int(bootstrap, "--bootstrap", note=" (0 = no intervals)")
    if bootstrap:
        check_bootstrap_fits(bootstrap, 0, n_metrics, name="--bootstrap")
    check_non_negative_int(seed, "--seed")
    if test_resamples is not None:
        from adacal.metrics.calibration_tests import check_resamples

        check_resamples(test_resamples, name="--test-resamples")
    if json_path is not None and Path(json_path).is_dir():
        raise InputError(f"Expected --json to be a file path, but {json_path} is a folder.")
    if calibrator is not None:
        from adacal.sources import check_regular_file

        check_regular_file(calibrator, "a calibrator file (--calibrator)")


def run_evaluate(
    predictions: str | os.PathLike,
    *,
    n_bins: int = DEFAULT_N_BINS,
    metrics: str | Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    json_path: str | os.PathLike | None = None,
    calibrator: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    device: str = "auto",
    force: bool = False,
    options: Any = None,
    progress: Callable[[int, int], None] | None = None,
    group_by: str | None = None,
    tests: bool = False,
    test_resamples: int = 1000,
    decompose: bool = False,
) -> EvaluationRun:
    """Everything `adacal evaluate` does, without printing.

    Measures the predictions at `predictions` (a predictions file of any framework, a checkpoint or a run folder;
    `options` is a `adacal.sources.ReadOptions`), after `calibrator` (a file saved by `adacal calibrate`) when
    given. The report goes to `json_path` ("-": standard output) and, for a run folder without an evaluate.json
    (training interrupted) and no calibrator, to its evaluate.json; the evaluate.json train wrote is never
    replaced. `progress(done, total)` is called after each bootstrap resample. `group_by` (a key of the input, or a
    group key its reader filled: docs/inputs.md "Group keys") adds `results.groups`, the report's figures per group
    (`adacal.grouped`). `tests` adds `results.calibration_tests` (ECE-EM / ECE-EW consistency resampling with
    `test_resamples` label sets drawn from `seed`, Spiegelhalter's Z, Kolmogorov–Smirnov, Kuiper), `decompose`
    `results.decomposition` (CORP: Brier and log-loss = MCB − DSC + UNC). Every cheap check runs before anything
    is loaded, and nothing is written before the report exists.
    """
    from adacal.runs import EVALUATE_FILE
    from adacal.reports import write_json
    from adacal.sources import ReadOptions
    from adacal.writing import check_output

    predictions = Path(predictions)
    json_path = None if json_path is None else Path(json_path)
    calibrator = None if calibrator is None else Path(calibrator)
    options = options or ReadOptions()
    check_output(json_path, flag="--json", inputs=(predictions, calibrator, options.labels_file), force=force)
    names, names_error = _metric_names(metrics)
    check_evaluate_options(n_bins, bootstrap, seed, json_path, calibrator, len(names), device,
                           test_resamples=test_resamples if tests else None)
    analysis = {"tests": tests, "test_resamples": test_resamples, "decompose": decompose}
    if group_by is not None:
        from adacal.interpretation.groups import check_group_key, check_table_group_key

        group_by = check_group_key(group_by)
        check_table_group_key(predictions, group_by, options=options)
        options = replace(options, group_by=group_by)  # a text table's column of that name is no class's scores
    fitted = None
    if calibrator is not None:
        fitted = _load_calibrator_file(calibrator)

    source = resolve_evaluation_input(predictions, data_dir=data_dir, device=device, options=options)
    described = source.describe()
    if group_by is not None:
        source = _with_groups(source, group_by)
    if source.source == "checkpoint":
        described["checkpoint"] = checkpoint_progress(source.data_path, source.run, contents=source.checkpoint)
    elif source.kind == "checkpoint":  # a checkpoint the run's predictions.npz describes: which epoch, all the same
        described["checkpoint"] = checkpoint_progress(source.path, source.run)
    confidence_map = getattr(fitted, "applies_to", None) == "confidences"  # (adacal.calibrators.confidence_maps)
    if top_label_input(source):
        if fitted is not None and not confidence_map:
            raise InputError(f"Expected class scores for --calibrator {calibrator}, but {predictions.name} holds "
                             "top-label confidences (confidence, correct): a saved calibrator of class scores maps "
                             "every class's scores; fit a confidence map with 'adacal calibrate' on such a file.")
        if confidence_map:  # a map of confidences, applied before measuring (adacal.calibrators.confidence_maps)
            source = replace(source, predictions=replace(
                source.predictions, confidences=fitted.transform(source.predictions.confidences)))
        report = confidence_report(
            source.predictions.confidences, source.predictions.correct, n_bins=n_bins, metric_names=metrics,
            bootstrap=bootstrap, seed=seed, input_path=source.data_path, source=described, progress=progress,
            **analysis,
        )
        if confidence_map:
            report["config"]["calibrator"] = str(calibrator)
    else:
        if confidence_map:
            raise InputError(f"Expected top-label confidences (confidence, correct) for --calibrator {calibrator}, a "
                             f"confidence map, but {predictions.name} holds class scores: apply a calibrator of "
                             "class scores to it.")
        if names_error is not None:
            raise names_error
        scores = source.predictions.logits
        if fitted is not None:
            record = source.predictions.interpretation
            scores = calibrated_probs(fitted, scores, calibrator_path=calibrator,
                                      scores_kind=record.scores_kind if record is not None else None)
        report = evaluation_report(
            # No --metrics: the report's defaults, which add the positive-class metrics for a binary model.
            scores, source.predictions.labels, n_bins=n_bins, metric_names=None if metrics is None else names,
            bootstrap=bootstrap, seed=seed,
            input_path=source.data_path, source=described, calibrator=calibrator, progress=progress, **analysis,
        )
    if group_by is not None:
        _add_groups(report, source, group_by, scores if not top_label_input(source) else None)
    if source.predictions.interpretation is not None:
        report["results"]["input"] = source.predictions.interpretation.to_dict()

    targets = [json_path] if json_path is not None else []
    kept = kept_by = kept_detail = not_written = not_written_reason = None
    if source.run is not None and fitted is None:
        run_report = source.run.report(EVALUATE_FILE)
        if run_report.exists():
            kept = run_report  # evaluate never replaces it: train wrote it, or an earlier evaluate of this run
            kept_by, kept_detail = _written_by(run_report)
        elif json_path is not None and run_report.resolve() == json_path.resolve():
            pass  # --json names it: written once, above
        else:
            not_written_reason = _not_the_runs_model(source, described.get("checkpoint") or {})
            if not_written_reason is None:
                targets.append(run_report)  # an interrupted run has none yet
            else:
                not_written = run_report
    for target in targets:
        write_json(target, report)
    return EvaluationRun(report=report, source=source, written=targets, kept=kept, calibrated=fitted is not None,
                         kept_by=kept_by, kept_detail=kept_detail, not_written=not_written,
                         not_written_reason=not_written_reason)


def _load_calibrator_file(path: Path) -> Any:
    """A calibrator file `adacal calibrate --save` wrote: a confidence map (for top-label files) when it says
    `"applies_to": "confidences"`, else a calibrator of class scores (`load_calibrator`, which names any problem)."""
    from adacal.sources.documents import read_report

    try:
        report = read_report(path, kind="calibrator")
    except InputError:
        report = None  # load_calibrator says what is wrong with it
    results = report.get("results") if isinstance(report, dict) else None
    data = results.get("calibrator") if isinstance(results, dict) else None
    if isinstance(data, dict) and data.get("applies_to") == "confidences":
        from adacal.calibrators.confidence_maps import load_confidence_map

        return load_confidence_map(path)
    from adacal.calibrators import load_calibrator

    return load_calibrator(path)


def _with_groups(source: EvaluationInput, key: str) -> EvaluationInput:
    """The input with `predictions.groups[key]` filled (docs/inputs.md "Group keys"): from its reader's groups, else
    from the predictions file read (a run's predictions.npz too); a model's outputs computed from a checkpoint have
    no per-sample keys."""
    from adacal.interpretation.groups import attach_groups

    groups = source.predictions.groups or {}
    if key not in groups and source.source == "checkpoint":
        raise InputError(f"Expected --group-by {key} with a predictions file, got {source.data_path.name}, a "
                         "checkpoint whose test outputs carry no per-sample keys: evaluate a predictions file that "
                         f"holds '{key}'.")
    path = None if key in groups else source.data_path
    return replace(source, predictions=attach_groups(source.predictions, path, key, options=source.options))


def _add_groups(report: dict[str, Any], source: EvaluationInput, key: str, scores: Any) -> None:
    """`results.groups` and `config.group_by` of the report: its figures per group (`adacal.grouped`)."""
    from adacal.grouped import grouped_results

    config, results = report["config"], report["results"]
    predictions = source.predictions
    top_label = scores is None
    values, labels = ((predictions.confidences, predictions.correct) if top_label else (scores, predictions.labels))
    results["groups"] = grouped_results(
        values, labels, predictions.groups[key], key=key, overall=results, n_bins=config["n_bins"],
        metric_names=config["metrics"], bootstrap=config["bootstrap"], seed=config["seed"],
        confidence=config["confidence"],
    )
    config["group_by"] = key


def _metric_names(metrics: Any) -> tuple[tuple[str, ...], InputError | None]:
    """The metrics of class scores asked for, and, when some are metrics of top-label confidences only
    (`nll-correct`, `auroc-correct`), those and the error to raise if the input holds class scores."""
    try:
        return resolve_metric_names(metrics), None
    except InputError as exc:
        from adacal.metrics.confidences import resolve_top_label_metrics

        try:
            return resolve_top_label_metrics(metrics)[0], exc
        except InputError:
            raise exc from None


def _not_the_runs_model(source: EvaluationInput, progress: dict[str, Any]) -> str | None:
    """Why a report may not stand as the run's evaluate.json, or None when it may: it scored the run's selected
    model (its predictions.npz, or the selected checkpoint), or a checkpoint of a training that has not finished
    (the report notes its epoch). A checkpoint of another epoch than a finished run selected (best.pt of a
    --select last run) is scored, but its report is not the run's."""
    from adacal.runs import selected_checkpoint

    if source.source != "checkpoint" or source.kind == "run" or progress.get("finished") is False:
        return None
    try:
        if source.run is not None and _same_file(selected_checkpoint(source.run), source.data_path):
            return None
    except InputError:
        pass
    epoch = progress.get("epoch")
    held = f" (epoch {epoch})" if isinstance(epoch, int) else ""
    return f"{source.data_path}{held} is not the model the finished run selected"


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def checkpoint_progress(path: str | os.PathLike, run: Any = None, contents: Any = None) -> dict[str, Any]:
    """Which point of training the scored checkpoint holds: {"path", "epoch", "epochs" (the run's target),
    "finished" (whether training had reached it)}, plus "batch" for a mid-epoch checkpoint (interrupted.pt) and a
    "note" when training had not finished (an epoch-0 checkpoint holds the untrained initial weights)."""
    from adacal.runs import run_config
    from adacal.sources.files import safe_torch_load

    checkpoint = contents  # the file as the caller loaded it; else read for these few fields only
    if checkpoint is None:
        try:
            checkpoint = safe_torch_load(path, what="torch checkpoint")
        except InputError:
            return {"path": str(path)}
    epoch = checkpoint.get("epoch") if isinstance(checkpoint, dict) else None
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        return {"path": str(path)}
    config = checkpoint.get("config") if isinstance(checkpoint.get("config"), dict) else {}
    epochs = config.get("epochs")
    if run is not None:  # the run's own target, which a later --resume may have raised
        recorded = (run_config(run) or {}).get("config")
        if isinstance(recorded, dict):
            epochs = recorded.get("epochs", epochs)
    epochs = int(epochs) if isinstance(epochs, int) and not isinstance(epochs, bool) else None
    partial = checkpoint.get("partial_epoch")
    batch = int(partial["batch"]) if isinstance(partial, dict) else None
    if batch is not None:
        finished: bool | None = False
    else:  # None: the checkpoint records no target (not written by adacal train)
        finished = None if epochs is None else max(epoch, _epochs_trained(run)) >= epochs
    progress: dict[str, Any] = {"path": str(path), "epoch": epoch, "epochs": epochs, "finished": finished}
    if batch is not None:
        progress["batch"] = batch
    if finished is False:
        target = f" of {epochs}" if epochs is not None else ""
        if batch is not None:
            held = f"epoch {epoch}{target} and {batch} batch(es) of epoch {epoch + 1}"
        elif epoch == 0:
            held = f"epoch 0{target} (the untrained initial weights)"
        else:
            held = f"epoch {epoch}{target}"
        progress["note"] = f"training has not finished; scored {path}, the model of {held}"
    elif epoch is not None:
        target = f" of {epochs}" if epochs is not None else ""
        progress["note"] = f"scored {Path(path).name}, the model of epoch {epoch}{target}"
    return progress


def _epochs_trained(run: Any) -> int:
    """The last epoch a run's history.jsonl records (a best.pt of an earlier epoch is scored after training ended)."""
    if run is None or not run.history.is_file():
        return 0
    from adacal.sources.documents import read_history

    try:
        records = read_history(run.history, torn_tail=True)
    except InputError:
        return 0
    return max((int(r["epoch"]) for r in records), default=0)


def _written_by(path: Path) -> tuple[str, str | None]:
    """Who wrote a run's evaluate.json: ("train", None) — train's report names the epoch it selected —,
    ("evaluate", what it scored) or ("unreadable", why)."""
    from adacal.sources.documents import read_report

    try:
        report = read_report(path, kind="evaluate")
    except InputError as exc:
        return "unreadable", str(exc).rstrip(".")
    config = report.get("config") if isinstance(report.get("config"), dict) else {}
    model = config.get("model")
    selected = model.get("selected_epoch") if isinstance(model, dict) else None
    if isinstance(selected, int) and not isinstance(selected, bool):
        return "train", None
    source = config.get("source") if isinstance(config.get("source"), dict) else {}
    checkpoint = source.get("checkpoint") if isinstance(source.get("checkpoint"), dict) else {}
    epoch = checkpoint.get("epoch")
    if isinstance(epoch, int) and not isinstance(epoch, bool):
        return "evaluate", f"from the checkpoint of epoch {epoch}"
    return "evaluate", None
