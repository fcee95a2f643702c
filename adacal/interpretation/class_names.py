"""Which class names a file's labels are looked up in (docs/inputs.md §8): `--classes`, else the file's own
(`classes`, a CSV header, a pipeline output's labels), else — for string labels nothing else resolves — the id2label
of the model folder the file sits in or beside, said in a note; and the Hugging Face pipeline's top-1 form read as
top-label confidences when the true labels are given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import to_numpy
from adacal.errors import InputError
from adacal.interpretation.confidence import TOP_LABEL, TopLabelPredictions
from adacal.interpretation.labels import class_readings
from adacal.interpretation.record import Interpretation
from adacal.interpretation.split import WHOLE_FILE, plain_label_key
from adacal.sources.class_names import model_folder_names
from adacal.sources.formats import Arrays, ReadOptions, open_arrays
from adacal.sources.pipeline_outputs import CONFIDENCE, PREDICTED
from adacal.sources.text_numbers import is_integer_text


def _shown(names: Any) -> str:
    names = list(names)
    return ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")


def check_class_count(options: ReadOptions, k: int, name: str) -> None:
    """Refuse `--classes` naming another number of classes than the `k` score columns of `name`.

    >>> check_class_count(ReadOptions(classes=("neg", "pos")), 2, "p.npz")
    """
    if options.classes is not None and len(options.classes) != k:
        raise InputError(f"Expected {options.classes_source} to name the {k} classes of {name}'s score columns, got "
                         f"{len(options.classes)} ({_shown(options.classes)}): give one name per column, in order.")


def _raw_labels(arrays: Arrays, options: ReadOptions, labels_key: str | None) -> Any:
    """The labels as written (in the file, or in --labels FILE), or None when they cannot be read here (the reading
    of the labels then says why)."""
    try:
        if options.labels_file is None:
            return None if labels_key is None else to_numpy(arrays[labels_key])
        with open_arrays(Path(options.labels_file), labels_key=options.labels_key, labels_only=True,
                         options=options) as labels:
            key = plain_label_key(labels, options)
            return None if key is None else to_numpy(labels[key])
    except InputError:
        return None


def _are_names(raw: Any) -> bool:
    array = np.asarray(raw)
    return array.dtype.kind in "US" and array.size > 0 and not all(is_integer_text(str(v)) for v in array.ravel())


def chosen_classes(arrays: Arrays, options: ReadOptions, k: int, own: tuple[str, ...] | None,
                   labels_key: str | None) -> tuple[tuple[str, ...], str, tuple[str, ...]] | None:
    """The class names the labels are looked up in when they are not the file's own `own` (None: keep the file's):
    (names, what they are called in messages, notes). `--classes` must name the `k` columns and agree with names the
    file gives; a model folder's id2label is used only for string labels that nothing else names."""
    name = arrays.path.name
    reading = arrays.pipeline
    if reading is not None:  # (the pipeline reader put the columns in the order of --classes, id2label or names)
        if not reading.positions_known:
            raw = _raw_labels(arrays, options, labels_key)
            if raw is not None and np.size(raw) and not _are_names(raw):
                raise InputError(
                    f"Expected class names as the labels of {name}, whose columns are its pipeline labels sorted (no "
                    "--classes, no config.json id2label beside it): integer labels are positions in the model's "
                    "id2label order, unknown here; pass --classes (the names in id2label order, or the model folder).")
        return None
    if options.classes is not None:
        check_class_count(options, k, name)
        readings = [tuple(reading) for reading in class_readings(list(own))] if own is not None else []
        if own is not None and tuple(options.classes) not in readings and tuple(own) != tuple(map(str, range(k))):
            raise InputError(f"Expected {options.classes_source} ({_shown(options.classes)}) to agree with the class "
                             f"names {name} gives its columns ({_shown(own)}): leave out --classes, or fix one.")
        return tuple(options.classes), str(options.classes_source), (
            f"{name}: class names from {options.classes_source}: {_shown(options.classes)}",)
    if own is not None:
        return None
    raw = _raw_labels(arrays, options, labels_key)
    if raw is None or not _are_names(raw):
        return None
    found = model_folder_names(arrays.path)
    if found is None:
        return None
    names, config = found
    if len(names) != k:
        raise InputError(f"Expected the id2label of {config} beside {name} to name its {k} score columns, got "
                         f"{len(names)} ({_shown(names)}): pass --classes.")
    return names, f"{config} (id2label)", (
        f"{name}: class names from the id2label of {config}: {_shown(names)}",)


def refuse_pipeline_top1(arrays: Arrays) -> None:
    """Refuse, for every reading of class scores, pipeline outputs of the top class only."""
    if arrays.pipeline is not None and arrays.pipeline.top1:
        raise InputError(f"Expected every class's score in {arrays.path.name}, but it holds Hugging Face pipeline "
                         "outputs of the top class only ({label, score} per input): run the pipeline with "
                         "top_k=None ('adacal evaluate' reads the top class's score with --labels).")


def read_pipeline_top_label(arrays: Arrays, options: ReadOptions) -> TopLabelPredictions:
    """The pipeline's top-1 form ({label, score} per input) as top-label confidences: the score, and whether the
    label is the true one (labels in the records or --labels FILE: names, or positions in --classes / id2label)."""
    from adacal.metrics.confidences import check_confidences

    reading, name = arrays.pipeline, arrays.path.name
    labels_key = None if options.labels_file is not None else plain_label_key(arrays, options)
    raw = _raw_labels(arrays, options, labels_key)
    if raw is None:
        if options.labels_file is not None:  # (the labels file's own reading says what is wrong with it)
            from adacal.interpretation.labels import labels_from_file

            labels_from_file(options, len(arrays[CONFIDENCE]), 2)
        raise InputError(f"Expected true labels for {name}, which holds Hugging Face pipeline outputs of the top "
                         "class only ({label, score} per input, the default top_k=1): give --labels FILE, or run the "
                         "pipeline with top_k=None to read every class's score.")
    predicted = np.asarray(arrays[PREDICTED]).astype(str)
    true = np.asarray(raw).reshape(-1)
    where = str(options.labels_file) if options.labels_file is not None else arrays.label(labels_key)
    if true.shape[0] != predicted.shape[0]:
        raise InputError(f"Expected {where} to hold {predicted.shape[0]} labels (one per input), got {true.shape[0]}.")
    classes = reading.classes
    if classes is not None and len(classes) == 1:
        raise InputError(f"Expected {reading.order} to name 2 or more classes for {name}, got one "
                         f"({classes[0][:40]!r}): a model with one output (num_labels=1) scores P({classes[0][:40]}) "
                         "with a sigmoid; save those scores with their 0/1 labels (np.savez(path, probs=p, labels=y)).")
    if _are_names(true):
        true = np.char.strip(true.astype(str))
        if classes is not None and not set(true.tolist()) <= set(classes):
            unknown = sorted(set(true.tolist()) - set(classes))[0]
            raise InputError(f"Expected every label in {where} to be one of the classes of {reading.order} "
                             f"({_shown(classes)}); {unknown[:40]!r} is not.")
    else:
        if classes is None or not reading.positions_known:
            raise InputError(f"Expected class names as the labels of {name}'s top-class outputs, got integers: they "
                             "are positions in the model's id2label order, unknown here; pass --classes (the names "
                             "in id2label order, or the model folder).")
        values = np.asarray(true.astype(str) if true.dtype.kind in "US" else true)
        if values.dtype.kind in "US":
            values = np.array([int(v) for v in values])
        if values.dtype.kind not in "iub" and not (values.dtype.kind == "f" and np.isfinite(values).all()
                                                  and (np.mod(values, 1) == 0).all()):
            raise InputError(f"Expected {where} to hold class names or positions, got {values.dtype} values.")
        values = values.astype(np.int64)
        if values.size and (values.min() < 0 or values.max() >= len(classes)):
            bad = int(values[(values < 0) | (values >= len(classes))][0])
            raise InputError(f"Expected the labels in {where} to be positions 0 to {len(classes) - 1} of "
                             f"{reading.order}, got {bad}.")
        check_class_count(options, len(classes), name)
        true = np.array(classes)[values]
    confidences, notes = check_confidences(arrays[CONFIDENCE], name=arrays.label(CONFIDENCE))
    correct = predicted == true
    notes = (*arrays.notes, *notes, f"{name}: correct where the pipeline's label is the true label")
    record = Interpretation(
        file=str(arrays.path), format=arrays.kind, scores_key=reading.key, labels_key=labels_key,
        labels_file=None if options.labels_file is None else str(options.labels_file), split=WHOLE_FILE,
        kind=TOP_LABEL, kind_rule="Hugging Face pipeline outputs of the top class: its score and whether its label "
                                  "is the true one", n=int(confidences.shape[0]), k=None, notes=notes)
    return TopLabelPredictions(confidences, correct, notes, record)


__all__ = ["check_class_count", "chosen_classes", "read_pipeline_top_label", "refuse_pipeline_top1"]
