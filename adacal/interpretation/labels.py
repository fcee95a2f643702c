"""Labels: integer class indices from any spelling a file holds them in (indices, one-hot rows, booleans, class names
or class values through a `classes` array or a CSV header, numbers written as text), or from a labels file beside
the scores; docs/inputs.md §6 gives the rules for class values (`--labels-are`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import check_labels, to_numpy
from adacal.errors import InputError
from adacal.interpretation.split import plain_label_key
from adacal.sources.formats import CLASS_KEYS, LABEL_KEYS, LABELS_ARE, Arrays, ReadOptions, open_arrays
from adacal.sources.text_numbers import is_integer_text, number_or_none
from adacal.sources.text_tables import GZIP_SUFFIX, TEXT_FORMATS, format_suffix, text_stem


def interpret_labels(values: Any, *, n: int, num_classes: int, name: str, classes: Any = None,
                     classes_name: str = "classes", labels_are: str | None = None,
                     classes_problem: str | None = None) -> tuple[np.ndarray, list[str]]:
    """Integer labels (N,) in [0, num_classes): class indices as they are, or class values looked up in `classes`
    (column j holds class classes[j]): string labels always, numbers when they are among the class values and not
    also valid positions that read differently (refused then: `labels_are` chooses, "values" or "positions").
    `classes_problem` says why a `classes` array the file holds could not be read: it matters only where the labels
    need it.

    >>> labels, notes = interpret_labels([3, 1, 2], n=3, num_classes=3, name="y_true", classes=[1, 2, 3])
    >>> labels.tolist(), notes
    ([2, 0, 1], ['y_true: labels read as class values, column j holding classes[j] (1, 2, 3)'])
    """
    if labels_are is not None and labels_are not in LABELS_ARE:
        raise InputError(f"Expected --labels-are to be 'values' or 'positions', got {labels_are!r}.")
    array = to_numpy(values)
    notes = []
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
        notes.append(f"{name}: a column (N, 1) of class labels, read as 1-D")
    if array.ndim == 2 and array.shape[1] >= 2:  # one-hot rows: their columns are the score columns
        return check_labels(array, n=n, num_classes=num_classes, name=name), [
            *notes, f"{name}: one-hot rows read as class indices"]
    keys, problem = _class_keys(classes, num_classes, classes_name)
    problem = problem or classes_problem
    if array.dtype.kind in "US" and array.ndim == 1 and array.size and (keys is None or labels_are == "positions") \
            and all(is_integer_text(str(label)) for label in array):
        # Numbers written as text ("3"; JSON writers, string columns): class indices, as a CSV's cells are read.
        # (With class names, text is a name: "1" is the class named "1", wherever it is.)
        array = np.array([int(float(label)) for label in array], dtype=np.int64)
        notes.append(f"{name}: class indices written as text, read as integers")
    if array.ndim != 1:
        raise InputError(f"Expected {name} to be 1-D, got shape {array.shape}.")
    if array.dtype.kind in "US":
        if keys is None:
            if classes is None and classes_problem is None:
                raise InputError(f"Expected {name} to be integer class indices, got strings; add a 'classes' array "
                                 "naming the classes in column order, or pass indices.")
            size = np.size(classes) if classes is not None and " classes for " in problem else None
            if size is not None:  # (the one problem a count says best)
                raise InputError(f"Expected {classes_name} to name the {num_classes} classes, got {size} name(s).")
            raise InputError(f"Expected {classes_name} to name the classes of {name} (strings), but {problem}.")
        if labels_are == "positions":
            raise InputError(f"Expected {name} to be class positions (--labels-are positions), got strings.")
        mapped, keys_used = _by_value(array.astype(str), keys)
        if mapped is None:
            unknown = next(label for label in array.astype(str) if not _known(label, keys))
            raise InputError(f"Expected every label in {name} to be one of the {num_classes} classes in "
                             f"{classes_name} ({_shown(keys[0])}); {unknown[:40]!r} is not.")
        return check_labels(mapped, n=n, num_classes=num_classes, name=name), [
            *notes, f"{name}: class names mapped to indices by {classes_name}" + _stripped_note(keys_used, keys)]
    if array.dtype == np.bool_:
        notes.append(f"{name}: booleans read as classes 0 (False) and 1 (True)")
    if keys is None or labels_are == "positions" or array.dtype.kind not in "iufb" or not array.size:
        if keys is None and problem is not None and array.dtype.kind in "iufb":
            notes.append(f"{classes_name} ignored ({problem}): the labels are class indices")
        if labels_are == "values":
            raise InputError(f"Expected {classes_name or 'classes'} to name the class of each score column "
                             f"(--labels-are values), but {problem or 'the file holds none'}.")
        return check_labels(array, n=n, num_classes=num_classes, name=name), notes
    return _numbers_by_value(array, keys, n=n, num_classes=num_classes, name=name, classes_name=classes_name,
                             labels_are=labels_are, notes=notes)


def _numbers_by_value(array: np.ndarray, readings: list[list[str]], *, n: int, num_classes: int, name: str,
                      classes_name: str, labels_are: str | None, notes: list[str]) -> tuple[np.ndarray, list[str]]:
    """Numeric labels beside class names `readings` (a `classes` array or header, as written and without a shared
    prefix): by value when they are among the values and cannot be positions, by position when they cannot be
    values, refused when both fit and differ (`labels_are` chooses)."""
    numbers = array.view(np.uint8) if array.dtype == np.bool_ else array
    if numbers.shape[0] != n:
        raise InputError(f"Expected {name} to have {n} entries (one per sample), got {numbers.shape[0]}.")
    unique, inverse = np.unique(numbers, return_inverse=True)
    finite = bool(np.isfinite(unique).all()) if unique.dtype.kind == "f" else True
    whole = finite and bool(np.equal(np.mod(unique, 1), 0).all())
    positions = whole and unique.min() >= 0 and unique.max() < num_classes
    indexes = [{key: i for i, key in enumerate(map(_key, reading)) if key is not None} for reading in readings]
    shown, value_of = _shown(readings[0]), None
    for reading, index in zip(readings, indexes):
        if finite and all(float(value) in index for value in unique):
            value_of = np.array([index[float(value)] for value in unique], dtype=np.int64)
            shown = _shown(reading)
            break
    outside = [value for value in unique if not any(float(value) in index for index in indexes)]
    if labels_are == "values":
        if value_of is None:
            raise InputError(f"Expected every label in {name} to be one of the class values in {classes_name} "
                             f"({shown}) (--labels-are values); {outside[0]:g} is not.")
        return value_of[inverse].astype(np.int64), [
            *notes, f"{name}: labels read as class values (--labels-are values), column j holding {classes_name}[j] "
                    f"({shown})"]
    if value_of is not None and positions:
        if np.array_equal(value_of, unique.astype(np.int64)):
            return check_labels(array, n=n, num_classes=num_classes, name=name), notes  # (the readings agree)
        raise InputError(
            f"Expected the labels in {name} to be read one way, but they are valid both as class values in "
            f"{classes_name} ({shown}) and as column positions 0 to {num_classes - 1}, which read them differently: "
            f"pass --labels-are values or --labels-are positions.")
    if value_of is not None:
        return value_of[inverse].astype(np.int64), [
            *notes, f"{name}: labels read as class values, column j holding {classes_name}[j] ({shown})"]
    if any(index for index in indexes):  # some class is named by a number: the values were a reading
        if positions:
            notes.append(f"{name}: labels read as column positions 0 to {num_classes - 1}: {outside[0]:g} is not "
                         f"among the class values in {classes_name} ({shown})")
        else:
            not_positions = [value for value in unique if not (float(value).is_integer() and 0 <= value < num_classes)]
            both_out = [value for value in not_positions if value in outside]
            neither = (f"{both_out[0]:g} is neither" if both_out else
                       f"{outside[0]:g} is no class value and {not_positions[0]:g} no position")
            raise InputError(f"Expected the labels in {name} to be all class values in {classes_name} ({shown}) or "
                             f"all column positions 0 to {num_classes - 1}; {neither}.")
    return check_labels(array, n=n, num_classes=num_classes, name=name), notes


# The prefix every class-score name may share and that names no class: `prob_` of prob_cat, prob_dog (ending at a
# separator); `c` of c0, c1 (letters before digits); suffixes alike (`_prob` of cat_prob).
_SEPARATOR_END = re.compile(r"(?s).*[_\-. :]")
_LETTERS = re.compile(r"[A-Za-z_\-. ]+(?=[0-9]+$)")


def _class_keys(classes: Any, num_classes: int, classes_name: str) -> tuple[list[list[str]] | None, str | None]:
    """The readings of a `classes` array, one name per score column: as written, then without a prefix or suffix
    every name shares (`prob_cat` -> `cat`, `c0` -> `0`); or None and why it cannot name the columns."""
    if classes is None:
        return None, None
    try:
        array = np.asarray(to_numpy(classes))
    except (InputError, TypeError, ValueError) as exc:
        return None, f"it cannot be read ({str(exc).rstrip('.')})"
    if array.ndim == 2 and array.shape[0] > 1 and array.shape[1] == num_classes:
        # One list per record (a JSON Lines file whose every line names its choices): one naming for all.
        if not (array == array[:1]).all():
            return None, "it names the columns differently from one sample to another"
        array = array[0]
    array = array.reshape(-1)
    if array.size == 1 and num_classes == 2:
        return None, None  # (a binary model's one score column, named: the positive class's)
    if array.dtype.kind not in "USiufb":
        return None, f"it holds {array.dtype} values, not class names or numbers"
    if array.size != num_classes:
        return None, f"it names {array.size} classes for {num_classes} score columns"
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        return None, "it holds a value that is not finite"
    if array.dtype.kind in "iufb":
        names = [str(value) if isinstance(value, bool) else str(int(value)) if float(value).is_integer()
                 else repr(float(value)) for value in array.tolist()]
    else:
        names = [str(value).strip() for value in array.tolist()]
    if len(set(names)) != len(names):
        return None, "its names repeat"
    readings = [names]
    stripped = _strip_shared(names)
    if stripped is not None:
        readings.append(stripped)
    return readings, None


def class_readings(names: Any) -> list[list[str]]:
    """The readings of K class names as written and without a prefix or suffix they all share (`prob_cat` -> `cat`);
    [] when they cannot name K columns.

    >>> class_readings(["prob_neg", "prob_pos"])
    [['prob_neg', 'prob_pos'], ['neg', 'pos']]
    """
    readings, _ = _class_keys(names, len(names), "classes")
    return readings or []


def _key(name: str) -> float | None:
    """A class name as a number, when it writes one (rule 1 of docs/inputs.md; `true`/`false` as 1 and 0)."""
    if name.lower() in ("true", "false"):
        return float(name.lower() == "true")
    return number_or_none(name)


def _strip_shared(names: list[str]) -> list[str] | None:
    """`names` without the prefix and suffix they all share, when that leaves distinct non-empty names."""
    if len(names) < 2:
        return None
    prefix = os.path.commonprefix(names)
    letters = [_LETTERS.match(name) for name in names]
    if all(letters) and len({match.group(0) for match in letters}) == 1:
        cut = letters[0].group(0)
    else:
        match = _SEPARATOR_END.match(prefix)
        cut = match.group(0) if match else ""
    rests = [name[len(cut):] for name in names]
    shared_end = os.path.commonprefix([rest[::-1] for rest in rests])[::-1]
    match = re.search(r"[_\-. :].*$", shared_end)
    suffix = match.group(0) if match else ""
    rests = [rest[: len(rest) - len(suffix)] for rest in rests]
    if (not cut and not suffix) or not all(rests) or len(set(rests)) != len(rests):
        return None
    return rests


def _by_value(labels: np.ndarray, readings: list[list[str]]) -> tuple[np.ndarray | None, list[str] | None]:
    """String labels looked up in the first reading of the class names that holds them all."""
    unique, inverse = np.unique(np.char.strip(labels), return_inverse=True)
    for reading in readings:
        index = {name: i for i, name in enumerate(reading)}
        if all(str(label) in index for label in unique):
            return np.array([index[str(label)] for label in unique], dtype=np.int64)[inverse], reading
    return None, None


def _known(label: str, readings: list[list[str]]) -> bool:
    return any(label.strip() in reading for reading in readings)


def _stripped_note(used: list[str] | None, readings: list[list[str]]) -> str:
    return "" if used is None or used is readings[0] else " (without the prefix or suffix the column names share)"


def _shown(reading: list[str]) -> str:
    return ", ".join(reading[:6]) + (", ..." if len(reading) > 6 else "")


def optional_classes(arrays: Arrays, key: str | None) -> tuple[Any, str | None]:
    """The `classes` array of a file, or None and why it cannot be read (a MATLAB cell array, an object array):
    needed only where the labels are class values, so its problem is told only there."""
    if key is None:
        return None, None
    try:
        return arrays[key], None
    except InputError as exc:
        return None, f"it cannot be read: {str(exc).rstrip('.')}"


def labels_from_file(options: ReadOptions, n: int, num_classes: int, classes: Any = None,
                     classes_name: str = "classes") -> tuple[np.ndarray, list[str]]:
    """The labels in `options.labels_file`, looked up among its own class names or, when it has none, `classes`
    (the scores file's, `classes_name`)."""
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
        own, problem = optional_classes(arrays, classes_key)
        if classes_key is None:
            own = classes
        else:
            classes_name = arrays.label(classes_key)
        labels, label_notes = interpret_labels(values, n=n, num_classes=num_classes, name=arrays.label(key),
                                               classes=own, classes_problem=problem, classes_name=classes_name,
                                               labels_are=options.labels_are)
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
