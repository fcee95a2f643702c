"""Labels: integer class indices from any spelling a file holds them in (indices, one-hot rows, booleans, class names
through a `classes` array or a CSV header, numbers written as text), or from a labels file beside the scores."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import check_labels, to_numpy
from adacal.errors import InputError
from adacal.interpretation.split import plain_label_key
from adacal.sources.formats import CLASS_KEYS, LABEL_KEYS, Arrays, ReadOptions, open_arrays
from adacal.sources.text_numbers import is_integer_text
from adacal.sources.text_tables import GZIP_SUFFIX, TEXT_FORMATS, format_suffix, text_stem


def interpret_labels(values: Any, *, n: int, num_classes: int, name: str, classes: Any = None,
                     classes_name: str = "classes") -> tuple[np.ndarray, list[str]]:
    """Integer labels (N,) in [0, num_classes); string labels are looked up in `classes`."""
    array = to_numpy(values)
    notes = []
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
        notes.append(f"{name}: a column (N, 1) of class labels, read as 1-D")
    if array.dtype.kind in "US" and classes is None and array.ndim == 1 and array.size \
            and all(is_integer_text(str(label)) for label in array):
        # Numbers written as text ("3"; JSON writers, string columns): class indices, as a CSV's cells are read.
        array = np.array([int(float(label)) for label in array], dtype=np.int64)
        notes.append(f"{name}: class indices written as text, read as integers")
    if array.dtype.kind in "US":
        if classes is None:
            raise InputError(
                f"Expected {name} to be integer class indices, got strings; add a 'classes' array naming the "
                "classes in column order, or pass indices."
            )
        names = [str(c) for c in to_numpy(classes).reshape(-1).astype(str)]
        if len(names) != num_classes:
            raise InputError(f"Expected {classes_name} to name the {num_classes} classes, got {len(names)} name(s).")
        if len(set(names)) != len(names):
            raise InputError(f"Expected the names in {classes_name} to differ, but some repeat.")
        index = {c: i for i, c in enumerate(names)}
        flat = array.reshape(-1).astype(str) if array.ndim == 1 else None
        if flat is None:
            raise InputError(f"Expected {name} to be 1-D, got shape {array.shape}.")
        unknown = next((label for label in flat if label not in index), None)
        if unknown is not None:
            raise InputError(
                f"Expected every label in {name} to be one of the {num_classes} classes in {classes_name}; "
                f"{unknown[:40]!r} is not."
            )
        mapped = np.fromiter((index[label] for label in flat), dtype=np.int64, count=flat.size)
        return check_labels(mapped, n=n, num_classes=num_classes, name=name), [
            *notes, f"{name}: class names mapped to indices by {classes_name}"]
    if array.ndim == 2 and array.shape[1] >= 2:
        notes.append(f"{name}: one-hot rows read as class indices")
    elif array.dtype == np.bool_:
        notes.append(f"{name}: booleans read as classes 0 (False) and 1 (True)")
    return check_labels(array, n=n, num_classes=num_classes, name=name), notes


def labels_from_file(options: ReadOptions, n: int, num_classes: int) -> tuple[np.ndarray, list[str]]:
    path = Path(options.labels_file)
    with open_arrays(path, labels_key=options.labels_key, labels_only=True, options=options) as arrays:
        key = plain_label_key(arrays, options)
        if key is None and format_suffix(path) in (".csv", ".tsv") and "scores" in arrays:
            key = "scores"
        if key is None:
            wanted = options.labels_key or label_key_list()
            raise InputError(f"Expected the labels file {path} to contain {wanted}; it has: {arrays.listing()}.")
        values = arrays[key]
        if key == "scores" and np.ndim(values) == 2 and np.shape(values)[1] == 1:
            values = np.asarray(values).reshape(-1)
        notes = []
        if (arrays.kind == "csv" and np.ndim(values) == 1 and len(values) == n + 1 and values.dtype.kind in "iu"
                and values[0] == 0):
            # `pd.Series(y).to_csv(path, index=False)` writes the column's name, 0, as a first line: one line more
            # than the scores have samples, starting with it, is that header.
            values = values[1:]
            notes.append(f"{path.name}: first line '0' read as pandas' column name (a header), not as a label: the "
                         f"file has one line more than the {n} samples")
        classes_key = class_key(arrays)
        classes = arrays[classes_key] if classes_key else None
        labels, label_notes = interpret_labels(values, n=n, num_classes=num_classes, name=arrays.label(key),
                                               classes=classes,
                                               classes_name=arrays.label(classes_key) if classes_key else "classes")
        return labels, notes + label_notes


def sibling_labels(path: Path) -> Path | None:
    """The labels of an .npy (or .txt) of scores when no labels file is given: `<stem>_labels.npy` beside it, else
    `labels.npy` beside it (the layout of CIFAR-10-C: `<name>.npy` + `labels.npy`), with the scores' own suffix;
    None when neither exists."""
    suffix = format_suffix(path)
    # The suffix as the scores spell it comes first (`X.NPY` beside `X_labels.NPY`), then lower-case.
    spelled = text_stem_suffix(path)
    suffixes = tuple(dict.fromkeys((spelled, suffix)))
    names = tuple(dict.fromkeys(f"{stem}{ending}" for stem in (f"{text_stem(path)}_labels", "labels")
                                for ending in suffixes))
    endings = ("", GZIP_SUFFIX, GZIP_SUFFIX.upper()) if suffix in TEXT_FORMATS else ("",)
    for candidate in (path.with_name(name + ending) for name in names for ending in endings):
        if candidate != path and os.path.lexists(candidate):
            return candidate
    return None


def text_stem_suffix(path: Path) -> str:
    """The format suffix of `path` as its name spells it (`.NPY` for `x.NPY`, `.txt` for `x.txt.gz`)."""
    name = path.name[: -len(GZIP_SUFFIX)] if path.suffix.lower() == GZIP_SUFFIX else path.name
    return Path(name).suffix


def class_names(arrays: Arrays, key: str | None, num_classes: int) -> tuple[str, ...] | None:
    """The class names of a `classes` array or CSV header, as strings, when there is one per score column; None when
    there is none or it cannot be read (it matters then only where labels are names, which reads it with its errors)."""
    if key is None:
        return None
    try:
        names = np.asarray(to_numpy(arrays[key])).reshape(-1)
    except InputError:
        return None
    if names.size != num_classes or names.dtype.kind not in "USiuf":
        return None
    return tuple(str(name).strip() for name in names.tolist())




def class_key(arrays: Arrays) -> str | None:
    """The key of the class names (`classes`, `class_names`), if the file has one."""
    return next((key for key in CLASS_KEYS if key in arrays), None)


def label_key_list() -> str:
    return " or ".join(LABEL_KEYS[:3]) + f" (or {', '.join(LABEL_KEYS[3:])})"
