"""What a path names — a predictions file, a checkpoint, a run folder — resolved to the predictions a command needs.

`evaluate`, `calibrate` and `ood` all come through here, so they accept the same paths and refuse them the same
way. A model is run (`adacal.training.inference.predict_checkpoint`) only when no saved outputs describe it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import CheckpointError, InputError
from adacal.runs import (
    RunFolder, check_predictions_of_run, find_run_folder, predictions_are_from, run_config,
    require_run_folder, selected_checkpoint,
)
from adacal.sources.files import check_regular_file
from adacal.interpretation import (
    Predictions, load_predictions, load_scores, load_split_predictions, load_validation_split, mixed_binary_readings,
    model_interpretation, read_predictions,
)
from adacal.sources.formats import DEFAULT_OPTIONS, ReadOptions, torch_arrays

CHECKPOINT_FORMAT = "adacal-checkpoint"
INPUT_KINDS = ("predictions", "checkpoint", "run")
# #41 LLM outputs: the ReadOptions fields of LLM evaluation outputs and their flags.
LLM_OPTION_FLAGS = {"length_normalize": "--length-normalize", "task": "--task", "answer_is": "--answer-is",
                    "answer_options": "--options", "missing_options": "--missing-options",
                    "verbalized_confidence": "--verbalized-confidence", "more_files": "several PREDICTIONS paths"}


@dataclass(frozen=True)
class EvaluationInput:
    """What a user's path resolved to: the predictions, and where they came from."""

    predictions: Predictions  # or `adacal.interpretation.confidence.TopLabelPredictions`: (confidence, correct) pairs
    kind: str  # one of INPUT_KINDS
    path: Path  # the path as given
    data_path: Path  # the file actually read (predictions file or checkpoint): hashed into the report
    run: RunFolder | None  # the run folder when the input is a checkpoint or run folder
    source: str  # "file", "predictions.npz" or "checkpoint" (model run on the test split)
    options: ReadOptions = field(default=DEFAULT_OPTIONS, compare=False)
    # The checkpoint file as loaded when the input is one (read once: `checkpoint_progress` reads its epoch from it).
    checkpoint: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "kind": self.kind,
            "path": str(self.path),
            "read": str(self.data_path),
            "source": self.source,
            "split": "test",
        }
        described.update(describe_options(self.options))
        if self.predictions.notes:
            described["assumed"] = list(self.predictions.notes)
        return described


def describe_options(options: ReadOptions) -> dict[str, Any]:
    """The reading options that differ from the defaults, for a report's config."""
    described: dict[str, Any] = {}
    if options.logits_key is not None:
        described["logits_key"] = options.logits_key
    if options.labels_key is not None:
        described["labels_key"] = options.labels_key
    if options.labels_file is not None:
        described["labels_file"] = str(options.labels_file)
    if options.renormalize:
        described["renormalize"] = True
    for name in ("scores_kind", "header", "separator", "pt_items", "labels_are", "score_columns",
                 *LLM_OPTION_FLAGS):
        value, default = getattr(options, name), getattr(DEFAULT_OPTIONS, name)
        if value != default:
            described[name] = value
    if options.classes is not None:
        described["classes"] = list(options.classes)
        described["classes_source"] = options.classes_source
    return described


def _check_exists(path: Path, what: str) -> None:
    """A one-line refusal for a missing path, or one that is neither a folder nor a regular file (FIFO, device)."""
    if path.is_dir():
        return
    check_regular_file(path, what)


def _is_checkpoint(path: Path) -> tuple[bool, dict[str, Any] | None]:
    """Whether a .pt file is an adacal checkpoint (and its contents), read once with weights_only=True."""
    if path.suffix.lower() not in (".pt", ".pth"):
        return False, None
    from adacal.sources.files import safe_torch_load

    contents = safe_torch_load(path, what="torch file", error=InputError)
    return isinstance(contents, dict) and contents.get("format") == CHECKPOINT_FORMAT, contents


def _predict(checkpoint: Path, splits: tuple[str, ...], options: dict[str, Any],
             contents: dict[str, Any] | None = None) -> dict[str, Predictions]:
    """The checkpoint's model run on `splits` (`contents`: the file already loaded, not read again)."""
    from adacal.training.inference import predict_checkpoint_splits

    predicted = predict_checkpoint_splits(checkpoint, splits, contents=contents, **options)
    return {split: replace(found, interpretation=model_interpretation(str(checkpoint), split, len(found),
                                                                      found.num_classes))
            for split, found in predicted.items()}


def check_checkpoint_of_run(run: RunFolder, path: Path, contents: Any) -> None:
    """Refuse a checkpoint in a run folder that another run trained (copied in): the options it recorded must agree
    with the run's config.json on everything that defines a run, as `adacal train --resume` requires."""
    if not isinstance(contents, dict):
        return
    from adacal.training.checkpoints import check_checkpoint_of_run as check

    check(run, Path(path), contents, run_config(run))


def _checked_checkpoint(path: Path) -> dict[str, Any]:
    from adacal.training.checkpoints import load_checkpoint

    return load_checkpoint(path)


def _raw_checkpoint(path: Path) -> Any:
    """A checkpoint file as torch.load(weights_only=True) reads it, read once: its fields are checked by whoever uses
    them (`load_checkpoint` when its model is run)."""
    from adacal.sources.files import safe_torch_load

    return safe_torch_load(path, what="torch checkpoint", error=CheckpointError)


def _forbid_options(options: ReadOptions, what: str) -> None:
    used = describe_options(options)
    if used:
        flags = {"logits_key": "--logits-key", "labels_key": "--labels-key", "labels_file": "--labels",
                 "renormalize": "--renormalize", "scores_kind": "--scores-kind", "header": "--header",
                 "separator": "--separator", "pt_items": "--pt-items", "labels_are": "--labels-are",
                 "score_columns": "--score-columns", "classes": "--classes", "classes_source": "--classes",
                 **LLM_OPTION_FLAGS}
        flag = flags[next(iter(used))]
        raise InputError(f"Expected {flag} only with a predictions file, not with {what}.")


def resolve_evaluation_input(
    path: str | os.PathLike,
    *,
    data_dir: str | os.PathLike | None = None,
    device: str = "auto",
    options: ReadOptions = DEFAULT_OPTIONS,
) -> EvaluationInput:
    """The test-split predictions that `path` (predictions file, checkpoint or run folder) stands for."""
    path = Path(path)
    llm = load_llm_evaluation(path, options)  # lm-evaluation-harness samples (a folder or glob of them), ...
    if llm is not None:
        predictions, read = llm
        return EvaluationInput(predictions, "predictions", path, read, None, "file", options)
    _check_exists(path, "a predictions file, checkpoint or run folder")
    predict_options: dict[str, Any] = {"device": device}
    if data_dir is not None:
        predict_options["data_dir"] = data_dir
    if path.is_dir():
        _forbid_options(options, "a run folder")
        return _predictions_of_run(require_run_folder(path), None, path, "run", None, predict_options)
    checkpoint, contents = _is_checkpoint(path)
    if checkpoint:
        _forbid_options(options, "a checkpoint")
        run = find_run_folder(path)
        if run is None:
            return EvaluationInput(_predict(path, ("test",), predict_options, contents)["test"], "checkpoint", path,
                                   path, None, "checkpoint", checkpoint=contents)
        return _predictions_of_run(run, path, path, "checkpoint", contents, predict_options)
    # Class scores, or (confidence, correct) pairs measured by the top-label metrics; a .pt already loaded is not
    # read twice.
    predictions = load_evaluation_file(path, options=options, contents=contents)
    return EvaluationInput(predictions, "predictions", path, path, None, "file", options)


def load_llm_evaluation(path: Path, options: ReadOptions) -> tuple[Any, Path] | None:
    """What `evaluate` reads from an LLM evaluation output, and the file hashed into the report (the first of a
    folder or glob): questions of K options each as class scores, of different numbers of options as top-label
    confidences; stated confidences with --verbalized-confidence; None for any other input."""
    from adacal.interpretation.llm_maps import load_questions
    from adacal.interpretation.llm_maps import verbalized_top_label

    if options.verbalized_confidence is not None:
        if options.more_files:
            raise InputError("Expected one predictions file with --verbalized-confidence, got "
                             f"{1 + len(options.more_files)}.")
        _check_exists(path, "a predictions file")
        if path.is_dir():
            raise InputError("Expected --verbalized-confidence only with a predictions file, not with a folder.")
        return verbalized_top_label(path, options), path
    questions = load_questions(path, options)
    if questions is None:
        return None
    read = Path(questions.extra.get("files", [questions.file])[0])
    return (questions.top_label() if questions.ragged else questions.predictions()), read


def load_evaluation_file(path: Path, *, options: ReadOptions = DEFAULT_OPTIONS, contents: Any = None) -> Any:
    """What `evaluate` reads from a predictions file: its top-label confidences (`adacal.interpretation.confidence.
    TopLabelPredictions`) when it holds them, else its test `Predictions`, the file opened once (`contents`: a .pt
    file already loaded)."""
    from adacal.interpretation.confidence import find_top_label, load_top_label, read_top_label
    from adacal.sources.formats import open_arrays
    from adacal.sources.text_tables import format_suffix

    if format_suffix(path) in (".csv", ".tsv"):
        top_label = load_top_label(path, options=options)
        return top_label if top_label is not None else load_predictions(path, options=options)
    arrays = torch_arrays(path, contents, options.pt_items) if contents is not None else open_arrays(
        path, labels_key=options.labels_key, scores_only=options.labels_file is not None, options=options)
    with arrays:
        if arrays.pipeline is not None and arrays.pipeline.top1:  # Hugging Face pipeline, top class only (#40)
            from adacal.interpretation.class_names import read_pipeline_top_label

            return read_pipeline_top_label(arrays, options)
        keys = find_top_label(arrays, "test", options)
        return read_top_label(arrays, keys, "test") if keys is not None else read_predictions(arrays, options=options)


def _predictions_of_run(
    run: RunFolder, checkpoint: Path | None, given: Path, kind: str, contents: dict[str, Any] | None,
    predict_options: dict[str, Any],
) -> EvaluationInput:
    """The run's predictions.npz when it holds the outputs asked for (the run's selected model, or the checkpoint
    given, whose loaded `contents` tell its epoch); otherwise the checkpoint's own test logits (a best.pt of another
    epoch than the model training evaluated is scored itself, not described by the other model's predictions)."""
    if checkpoint is not None:
        check_checkpoint_of_run(run, checkpoint, contents)  # not another run's checkpoint copied in
    if run.predictions.is_file() and (checkpoint is None or predictions_are_from(run, contents)):
        predictions = load_predictions(run.predictions)
        check_predictions_of_run(run, {"test": len(predictions)})
        return EvaluationInput(predictions, kind, given, run.predictions, run, "predictions.npz")
    if checkpoint is None:
        checkpoint = selected_checkpoint(run)  # the model training selected (best.pt for best-val)
        contents = _raw_checkpoint(checkpoint)  # validated where the model is built
        check_checkpoint_of_run(run, checkpoint, contents)
    predictions = _predict(checkpoint, ("test",), predict_options, contents)["test"]
    return EvaluationInput(predictions, kind, given, checkpoint, run, "checkpoint", checkpoint=contents)


@dataclass(frozen=True)
class CalibrationInput:
    """Validation and test predictions for `calibrate`, the file they came from and the run folder, if any."""

    val: Predictions
    test: Predictions
    input_path: Path
    run: RunFolder | None
    options: ReadOptions = field(default=DEFAULT_OPTIONS, compare=False)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.val.notes + self.test.notes))


def check_same_classes(first: Predictions, second: Predictions, first_name: str, second_name: str) -> Predictions:
    """`first` with its classes in `second`'s order, when both files name their columns (a `classes` array, a CSV
    header) with the same names in another order: its score columns and labels are permuted by name, with a note (a
    calibrator fitted on one order and applied to the other would scramble the classes). Different names are read by
    position, with a note; so are files that do not both name their columns."""
    if first.classes is None or second.classes is None or first.classes == second.classes:
        return first
    shown = lambda names: ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")  # noqa: E731
    k = len(second.classes)
    if sorted(first.classes) != sorted(second.classes) or len(set(second.classes)) != k:
        note = (f"{first_name} names its classes {shown(first.classes)} and {second_name} {shown(second.classes)}: "
                "columns matched by position")
        return replace(first, notes=first.notes + (note,))
    order = np.array([first.classes.index(name) for name in second.classes])  # first's column of each class
    position = np.empty(k, dtype=np.int64)
    position[order] = np.arange(k)  # first's class index -> second's
    note = (f"{first_name}: columns and labels put in {second_name}'s class order ({shown(second.classes)}), "
            f"matched by name from {shown(first.classes)}")
    return replace(first, logits=first.logits[:, order], labels=position[first.labels],
                   notes=first.notes + (note,), classes=second.classes)


def resolve_calibration_input(
    source: str | os.PathLike, *, val: str | os.PathLike | None = None, options: ReadOptions = DEFAULT_OPTIONS,
    data_dir: str | os.PathLike | None = None, device: str = "auto",
) -> CalibrationInput:
    """Validation predictions to fit on and test predictions to judge on.

    `source` is a run folder (or a checkpoint / predictions.npz inside one), or a file with `val_*` and `test_*`
    arrays; or, with `val` (a second predictions file), `source` holds the test predictions and `val` the
    validation ones, each in any format `load_predictions` reads.
    """
    source = Path(source)
    _check_exists(source, "a run folder, checkpoint or predictions file")
    predict_options: dict[str, Any] = {"device": device}
    if data_dir is not None:
        predict_options["data_dir"] = data_dir
    if val is not None:
        val = Path(val)
        if source.is_dir() or _is_checkpoint(source)[0]:
            raise InputError("Expected --val only with a predictions file of test outputs, not with a run or "
                             "checkpoint.")
        _check_exists(val, "a predictions file of validation outputs (--val)")
        test_predictions = load_predictions(source, options=options)
        # --labels names the labels of the test file; the validation file carries its own (or <stem>_labels.npy).
        val_predictions = load_predictions(val, split="val", options=replace(options, labels_file=None))
        if not options.renormalize and mixed_binary_readings(val_predictions.notes, test_predictions.notes):
            # One model's sets, read alike.
            test_predictions = load_predictions(source, options=replace(options, decision_scores=True))
            val_predictions = load_predictions(val, split="val",
                                               options=replace(options, labels_file=None, decision_scores=True))
        if val_predictions.num_classes != test_predictions.num_classes:
            raise InputError(
                f"Expected the validation ({val.name}) and test ({source.name}) predictions to have the same number "
                f"of classes, got {val_predictions.num_classes} and {test_predictions.num_classes}."
            )
        val_predictions = check_same_classes(val_predictions, test_predictions, val.name, source.name)
        return CalibrationInput(val_predictions, test_predictions, source, None, options)
    run, checkpoint = None, None
    if source.is_dir():
        run = require_run_folder(source)
    else:
        found = find_run_folder(source)
        if found is not None and source.resolve() == found.predictions.resolve():
            run = found
        elif found is not None and source.resolve().parent == found.checkpoints.resolve():
            run, checkpoint = found, source
    if run is not None:
        _forbid_options(options, "a run folder or checkpoint")
    if run is None:
        if options.labels_file is not None:
            raise InputError("Expected --labels only with --val (labels of the test file), not with a file of "
                             "val_ and test_ arrays, which holds its own.")
        splits, input_path = load_split_predictions(source, options=options), source
    else:
        contents = None if checkpoint is None else _checked_checkpoint(checkpoint)
        if checkpoint is not None:
            check_checkpoint_of_run(run, checkpoint, contents)  # not another run's checkpoint copied in
        if run.predictions.is_file() and (contents is None or predictions_are_from(run, contents)):
            splits, input_path = load_split_predictions(run.predictions), run.predictions
            check_predictions_of_run(run, {name: len(split) for name, split in splits.items() if split is not None})
        else:
            if checkpoint is None:
                checkpoint = selected_checkpoint(run)  # the model training selected (best.pt for --select best-val)
                contents = _raw_checkpoint(checkpoint)  # validated where the model is built
                check_checkpoint_of_run(run, checkpoint, contents)
            input_path = checkpoint
            splits = _predict(checkpoint, ("val", "test"), predict_options, contents)
    if splits.get("val") is None:
        raise InputError(
            f"Expected {input_path} to hold validation predictions (val_logits, val_labels) to fit calibrators on, "
            "found none; or give them with --val FILE."
        )
    return CalibrationInput(splits["val"], splits["test"], input_path, run, options)


def load_ood_scores(path: str | os.PathLike, *, split: str = "test", options: ReadOptions = DEFAULT_OPTIONS,
                    notes_out: list[str] | None = None, records_out: list[Any] | None = None):
    """Scores (N, K) of a saved set of model outputs (labels optional), for `ood --in-preds/--out-preds`; what
    reading them assumed goes to `notes_out`, and the record of the reading to `records_out`, when given."""
    return load_scores(path, split=split, options=options, notes_out=notes_out, records_out=records_out)


def resolve_ood_inputs(
    in_preds: str | os.PathLike, out_preds: str | os.PathLike, *, options: ReadOptions = DEFAULT_OPTIONS,
    with_val: bool = False, notes_out: list[str] | None = None, records_out: dict[str, Any] | None = None,
) -> tuple[Any, Any, Predictions | None]:
    """(in-distribution scores, OOD scores, validation predictions or None) for `ood --in-preds/--out-preds`: both
    sets of the same number of classes; with `with_val`, the validation split of `in_preds` (needed, not optional).
    What reading the files assumed goes to `notes_out`, and how each set was read to `records_out` ("in", "out",
    "val"), when given."""
    in_preds, out_preds = Path(in_preds), Path(out_preds)

    def read(alike: ReadOptions) -> tuple[Any, Any, Predictions | None, list[str], list[str], list[Any]]:
        in_notes, out_notes, records = [], [], []
        in_scores = load_ood_scores(in_preds, options=alike, notes_out=in_notes, records_out=records)
        out_scores = load_ood_scores(out_preds, options=alike, notes_out=out_notes, records_out=records)
        val = load_validation_split(in_preds, options=alike) if with_val else None
        return in_scores, out_scores, val, in_notes, out_notes, records

    in_scores, out_scores, val, in_notes, out_notes, records = read(options)
    if not options.renormalize and mixed_binary_readings(in_notes, out_notes, () if val is None else val.notes):
        # One model's sets: a binary model's scores outside [0, 1] in one make the others decision scores too.
        in_scores, out_scores, val, in_notes, out_notes, records = read(replace(options, decision_scores=True))
    if notes_out is not None:
        notes_out.extend([*in_notes, *out_notes])
    if records_out is not None:
        records_out.update({"in": records[0], "out": records[1]})
        if val is not None and val.interpretation is not None:
            records_out["val"] = val.interpretation
    if in_scores.shape[1] != out_scores.shape[1]:
        raise InputError(
            f"Expected {in_preds.name} and {out_preds.name} to have the same number of classes, "
            f"got {in_scores.shape[1]} and {out_scores.shape[1]}."
        )
    if with_val and val is None:
        raise InputError(f"Expected val_logits and val_labels in {in_preds} to fit the temperature "
                         "(--fit-temperature).")
    return in_scores, out_scores, val
