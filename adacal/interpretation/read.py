"""Predictions from a file: the keys of the split wanted (`split`), the kind of the scores (`kind`), the labels
(`labels`), and one `Interpretation` record of how it was all read. The readers of `adacal.sources` only turn bytes
into named arrays; every meaning is decided here, by the rules of docs/inputs.md."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import is_one_hot, mixed_binary_kinds, probability_tolerance, to_numpy
from adacal.errors import InputError
from adacal.interpretation.class_names import check_class_count, chosen_classes, refuse_pipeline_top1
from adacal.interpretation.confidence import refuse_headerless_pairs, refuse_top_label
from adacal.interpretation.kind import (
    PROBABILITY_KEYS, ScoresReading, mixed_binary_readings, read_binary_kind, read_matrix_kind,
)
from adacal.interpretation.labels import (
    class_key, class_names, interpret_labels, label_key_list, labels_from_file, optional_classes, sibling_labels,
)
from adacal.interpretation.record import Interpretation, Predictions
from adacal.interpretation.split import SPLITS, WHOLE_FILE, SplitKeys, has_split, split_keys, unprefixed
from adacal.sources.formats import (
    DEFAULT_OPTIONS, HARD_PREDICTION_KEYS, KEYLESS, SCORE_KEYS, WHOLE, Arrays, ReadOptions, open_arrays,
)
from adacal.sources.text_tables import format_suffix, text_stem


def _check_hard_predictions(arrays: Arrays, key: str, values: np.ndarray, one_per_sample: bool) -> None:
    """Refuse class indices or one-hot rows under a key some frameworks use for hard predictions (`preds`, `y_pred`,
    `predictions`): 0.0 / 1.0 would otherwise pass for probabilities. `values`: the scores as a numpy array."""
    if unprefixed(key) not in HARD_PREDICTION_KEYS:
        return
    integers = np.issubdtype(values.dtype, np.integer) or values.dtype == np.bool_
    if not integers and values.dtype.kind == "f" and values.size:
        with np.errstate(invalid="ignore"):
            integers = bool(np.isfinite(values).all() and (values >= 0).all() and (np.mod(values, 1) == 0).all())
    if integers and (one_per_sample or is_one_hot(values)):
        holds = "one class index per sample" if one_per_sample else "one-hot rows (0 and 1)"
        raise InputError(
            f"Expected {arrays.label(key)} to hold scores (logits or probabilities per class), but it holds {holds}: "
            "hard class predictions carry no confidence to calibrate. Save the model's logits or probabilities "
            "instead."
        )


def _other_split_scores(arrays: Arrays, options: ReadOptions, keys: SplitKeys) -> Any:
    """The raw scores of the file's other split (`val_…` when reading `test_…`), or None: one model's sets of binary
    scores are read alike."""
    if keys.split not in SPLITS:
        return None
    other = "test" if keys.split == "val" else "val"
    for name in (options.logits_key,) if options.logits_key else SCORE_KEYS:
        candidate = f"{other}_{name}"
        if candidate != keys.scores and candidate in arrays:
            try:
                return arrays[candidate]
            except InputError:
                return None
    return None


def _scores(arrays: Arrays, keys: SplitKeys, options: ReadOptions) -> ScoresReading:
    path = arrays.path
    if options.logits_key is not None and arrays.kind in (*KEYLESS, "csv"):
        raise InputError(
            f"Expected --logits-key only with a file of named arrays (.npz, .pt, .safetensors, .mat, .json), not "
            f"with {path.name} (its scores have no key)."
        )
    if options.score_columns is not None and arrays.kind not in ("csv", "txt"):
        raise InputError(f"Expected --score-columns only with a .csv, .tsv or .txt table, not with {path.name} (its "
                         "scores are found by key: --logits-key).")
    if keys.scores is None:
        wanted = (f"'{options.logits_key}' (--logits-key)" if options.logits_key else
                  f"logits or {keys.wanted}_logits (or probs, probabilities, scores)")
        raise InputError(f"Expected {path} to contain {wanted}; it has: {arrays.listing()}.")
    key = keys.scores
    raw = arrays[key]
    name = arrays.label(key)
    one_per_sample = np.ndim(raw) == 1 or tuple(np.shape(raw)[1:]) == (1,)  # a binary model's single score
    # The rounding of the dtype as stored (bfloat16 has no numpy twin), then one conversion that every check reads.
    tolerance = probability_tolerance(raw)
    values = to_numpy(raw, keep_float=True)
    dtype = values.dtype
    if dtype.kind in "OUSV" or dtype.kind == "b":
        raise InputError(f"Expected {name} to be numeric, got dtype {dtype}.")
    if dtype.kind not in "iuf":
        raise InputError(f"Expected {name} to be real numbers, got dtype {dtype}.")
    _check_hard_predictions(arrays, key, values, one_per_sample)
    named = unprefixed(key) in PROBABILITY_KEYS
    if one_per_sample:
        decision = options.decision_scores
        if not decision and not options.renormalize and options.scores_kind == "auto":
            decision = mixed_binary_kinds(values, _other_split_scores(arrays, options, keys))
        spelled = "one score column (N, 1)" if np.ndim(values) == 2 else "1-D scores"
        return read_binary_kind(values, name=name, spelled=spelled, kind=options.scores_kind,
                                renormalize=options.renormalize, named_probabilities=named, decision=decision)
    try:
        return read_matrix_kind(values, name=name, kind=options.scores_kind, renormalize=options.renormalize,
                                named_probabilities=named, tolerance=tolerance)
    except InputError as exc:
        if arrays.pipeline is None:
            raise
        raise InputError(f"{str(exc).rstrip('.')}; Hugging Face pipeline scores whose rows do not sum to 1 are a "
                         "multi-label model's sigmoids (function_to_apply='sigmoid'), not one distribution per input."
                         ) from None


def _record(arrays: Arrays, keys: SplitKeys, reading: ScoresReading, labels_key: str | None,
            labels_file: Path | None, notes: tuple[str, ...]) -> Interpretation:
    n, k = reading.scores.shape
    return Interpretation(
        file=str(arrays.path), format=arrays.kind,
        # A table's "scores" and "labels" are its columns, not keys the file names: recorded as None.
        scores_key=None if keys.scores in (None, WHOLE) or arrays.kind == "csv" else keys.scores,
        labels_key=None if arrays.kind == "csv" else labels_key,
        labels_file=None if labels_file is None else str(labels_file), split=keys.split,
        kind=reading.kind, kind_rule=reading.rule, n=int(n), k=int(k), renormalized_rows=reading.renormalized_rows,
        notes=notes,
    )


def read_scores(arrays: Arrays, *, split: str = "test", options: ReadOptions = DEFAULT_OPTIONS
                ) -> tuple[np.ndarray, Interpretation]:
    """Only the scores (N, K) of one split of an opened file (labels not needed: an OOD set), and how they were read."""
    refuse_pipeline_top1(arrays)
    refuse_top_label(arrays, split, options)
    keys = split_keys(arrays, split, options)
    reading = _scores(arrays, keys, options)
    check_class_count(options, reading.scores.shape[1], arrays.path.name)
    notes = (*arrays.notes, *reading.notes)
    return reading.scores, _record(arrays, keys, reading, None, None, notes)


def read_predictions(arrays: Arrays, *, split: str = "test", options: ReadOptions = DEFAULT_OPTIONS) -> Predictions:
    """The scores and labels of one split of an opened file, with the record of how they were read."""
    refuse_pipeline_top1(arrays)
    refuse_top_label(arrays, split, options)
    keys = split_keys(arrays, split, options)
    reading = _scores(arrays, keys, options)
    try:
        predictions = _with_labels(arrays, keys, reading, options)
    except InputError as exc:
        if reading.kind.startswith("binary") and "in [0, 1]" in str(exc):
            raise InputError(
                f"{str(exc).rstrip('.')} (one score per sample is read as a binary model's; scores of more than 2 "
                "classes must be 2-D, samples × classes)."
            ) from None
        if arrays.kind == "csv" and options.labels_file is None and str(exc).startswith(
                f"Expected {arrays.label('labels')} to be integers"):
            raise InputError(
                f"{str(exc).rstrip('.')} (with no column named label, target or y, a table's last column is read as "
                "its labels; give --labels FILE if it holds only scores)."
            ) from None
        raise
    refuse_headerless_pairs(arrays, reading.kind, predictions.labels, options)
    return predictions


def _with_labels(arrays: Arrays, keys: SplitKeys, reading: ScoresReading, options: ReadOptions) -> Predictions:
    path = arrays.path
    scores = reading.scores
    n, k = scores.shape
    classes_key = class_key(arrays)
    classes = class_names(arrays, classes_key, k)
    # --classes, or a model folder's id2label for string labels (#40): (names, their name in messages, notes).
    chosen = chosen_classes(arrays, options, k, classes, None if options.labels_file else keys.labels)
    if chosen is not None:
        classes = chosen[0]
    labels_file = options.labels_file
    if labels_file is None and keys.labels is None and arrays.kind in KEYLESS:
        labels_file = sibling_labels(path)
        if labels_file is None:
            suffix = format_suffix(path)
            raise InputError(
                f"Expected labels for {path}: give --labels FILE or put them in {text_stem(path)}_labels{suffix} "
                f"(or labels{suffix}) beside it."
            )
        sibling_note = (f"{arrays.label(keys.scores)}: labels read from {labels_file.name} beside it",)
    else:
        sibling_note = ()
    if labels_file is not None:
        scores_classes = optional_classes(arrays, classes_key)[0] if classes_key else None
        classes_label = arrays.label(classes_key) if classes_key else "classes"
        if chosen is not None:
            scores_classes, classes_label = np.array(chosen[0]), chosen[1]
        labels, label_notes = labels_from_file(replace(options, labels_file=labels_file), n, k, scores_classes,
                                               classes_label)
        label_key = None
    else:
        if keys.labels is None and keys.scores == WHOLE:
            raise InputError(f"Expected labels for {path}, which holds one tensor of scores: give --labels FILE.")
        if keys.labels is None and arrays.kind == "npz" and keys.scores == "arr_0":
            raise InputError(
                f"Expected labels for {path}, which holds one unnamed array of scores (arr_0): give --labels FILE, or "
                "save both with np.savez(path, logits=..., labels=...)."
            )
        if keys.labels is None:
            wanted = f"'{options.labels_key}' (--labels-key)" if options.labels_key else label_key_list()
            raise InputError(f"Expected {path} to contain {wanted} beside {arrays.label(keys.scores)}; it has: "
                             f"{arrays.listing()}.")
        label_key = keys.labels
        classes_array, classes_problem = optional_classes(arrays, classes_key)
        classes_label = arrays.label(classes_key) if classes_key else "classes"
        if chosen is not None:
            classes_array, classes_problem, classes_label = np.array(chosen[0]), None, chosen[1]
        labels, label_notes = interpret_labels(
            arrays[label_key], n=n, num_classes=k, name=arrays.label(label_key), classes=classes_array,
            classes_name=classes_label, labels_are=options.labels_are, classes_problem=classes_problem,
        )
    chosen_notes = () if chosen is None else chosen[2]
    notes = tuple(dict.fromkeys((*arrays.notes, *reading.notes, *chosen_notes, *label_notes, *sibling_note)))
    record = _record(arrays, keys, reading, None if label_key in (None, WHOLE) else label_key, labels_file, notes)
    return Predictions(logits=scores, labels=labels, notes=notes, classes=classes, interpretation=record)


def load_predictions(path: str | os.PathLike, *, split: str = "test",
                     options: ReadOptions = DEFAULT_OPTIONS) -> Predictions:
    """Scores and labels of a predictions file: its `test_*` arrays (or `val_*`, with `split="val"`) when it is split,
    else its one set of arrays; see docs/inputs.md. LLM evaluation outputs (lm-evaluation-harness samples, a folder
    or glob of them, option log-probability records) give their options' log-likelihoods (`adacal.interpretation.
    llm`)."""
    from adacal.interpretation.llm_maps import load_questions

    if options.verbalized_confidence is not None:
        raise InputError("Expected --verbalized-confidence only with 'adacal evaluate' (stated confidences are "
                         "measured, not calibrated): this command needs the scores of every class.")
    questions = load_questions(path, options)
    if questions is not None:
        return questions.predictions()
    with open_arrays(path, labels_key=options.labels_key, scores_only=options.labels_file is not None,
                     options=options) as arrays:
        return read_predictions(arrays, split=split, options=options)


def load_scores(path: str | os.PathLike, *, split: str = "test", options: ReadOptions = DEFAULT_OPTIONS,
                notes_out: list[str] | None = None, records_out: list[Interpretation] | None = None) -> np.ndarray:
    """Only the scores (N, K) of a predictions file (labels not needed, e.g. OOD sets); what reading them assumed goes
    to `notes_out` and the record of the reading to `records_out`, when given."""
    with open_arrays(path, labels_key=options.labels_key, labels_optional=True, options=options) as arrays:
        scores, record = read_scores(arrays, split=split, options=options)
    if notes_out is not None:
        notes_out.extend(record.notes)
    if records_out is not None:
        records_out.append(record)
    return scores


def load_split_predictions(path: str | os.PathLike, *, options: ReadOptions = DEFAULT_OPTIONS
                           ) -> dict[str, Predictions | None]:
    """Validation and test predictions from one file of `val_*` and `test_*` arrays (e.g. a run's predictions.npz)."""
    path = Path(path)
    with open_arrays(path, labels_key=options.labels_key, options=options) as arrays:
        refuse_top_label(arrays, "test", options)  # (val_confidence, test_correct, ...: no class scores)
        if not has_split(arrays, "test", options):
            raise InputError(
                f"Expected {path} to hold val_logits, val_labels, test_logits and test_labels (like a run's "
                f"predictions.npz); it has: {arrays.listing()}."
            )
        test = _split_only(arrays, "test", options)
        val = _split_only(arrays, "val", options) if has_split(arrays, "val", options) else None
        if val is not None and not options.renormalize and mixed_binary_readings(val.notes, test.notes):
            alike = replace(options, decision_scores=True)
            test, val = _split_only(arrays, "test", alike), _split_only(arrays, "val", alike)
    if val is not None and val.num_classes != test.num_classes:
        raise InputError(
            f"Expected the validation and test logits in {path} to have the same number of classes, "
            f"got {val.num_classes} and {test.num_classes}."
        )
    return {"val": val, "test": test}


def _split_only(arrays: Arrays, split: str, options: ReadOptions) -> Predictions:
    """The `<split>_` arrays of a split file; a file of plain keys is not one."""
    predictions = read_predictions(arrays, split=split, options=options)
    if predictions.interpretation is not None and predictions.interpretation.split != split:
        raise InputError(f"Expected {arrays.path} to hold {split}_ arrays ({split}_logits, {split}_labels); it has: "
                         f"{arrays.listing()}.")
    return predictions


def load_validation_split(path: str | os.PathLike, *, options: ReadOptions = DEFAULT_OPTIONS) -> Predictions | None:
    """`val_*` scores and labels from a predictions file, or None when it holds no validation split."""
    with open_arrays(path, labels_key=options.labels_key, options=options) as arrays:
        if not has_split(arrays, "val", options):
            return None
        return _split_only(arrays, "val", options)


__all__ = ["Interpretation", "Predictions", "WHOLE_FILE", "load_predictions", "load_scores", "load_split_predictions",
           "load_validation_split", "read_predictions", "read_scores"]
