"""Group keys for `--group-by KEY`: one group name per sample (a task, a subject, a dataset), read from the file the
predictions came from only when asked, by the rule of docs/inputs.md ("Group keys"):

- a reader that knows its groups (an LLM harness dump: "task", "subject") fills `Predictions.groups`; KEY is taken
  from there first;
- else KEY is a per-sample key of the file: an .npz / .pt / .safetensors / .mat array, a JSON / JSONL key or a CSV /
  TSV column named KEY (or `<split>_KEY`, as `test_task` beside `test_logits`), one value per sample;
- its values are strings, integers or booleans (read as their text: 3 and 3.0 are the group "3"); numbers with a
  fraction (scores), lists, empty cells and a length other than N are refused, naming the key;
- a KEY the file does not hold is refused in one line listing the keys that could be group keys (group names,
  not all distinct: a per-sample id is not listed).
Ordinary reading never looks at these keys: `attach_groups` opens the file again for the one KEY.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.interpretation.split import SPLITS
from adacal.sources.formats import LABEL_KEYS, SCORE_KEYS, WHOLE, ReadOptions, open_arrays
from adacal.sources.named_columns import column_values, read_named_columns
from adacal.sources.text_tables import format_suffix

_TEXT_TABLES = (".csv", ".tsv")


def check_group_key(key: Any, *, flag: str = "--group-by") -> str:
    """A grouping key: a non-empty name, stripped.

    Example:
        >>> check_group_key(" task ")
        'task'
    """
    if not isinstance(key, str) or not key.strip():
        raise InputError(f"Expected {flag} to be a key or column name (task, subject, ...), got {key!r}.")
    return key.strip()


def group_names(values: Any, *, n: int) -> np.ndarray | None:
    """One group name per sample as a str array, or None when `values` cannot be one (for the listing of keys):
    1-D of length `n`, strings (non-empty), integers, booleans or integral floats.

    Example:
        >>> group_names(np.array([3.0, 1.0]), n=2).tolist(), group_names([0.5, 1.0], n=2)
        (['3', '1'], None)
    """
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        return None
    if hasattr(values, "detach"):  # a torch tensor
        array = values.detach().cpu().numpy()
    if array.ndim != 1 or array.shape[0] != n:
        return None
    if array.dtype.kind == "S":
        array = np.char.decode(array, "utf-8")
    if array.dtype.kind == "O":
        if not all(isinstance(v, (str, bool, int, np.integer)) for v in array):
            return None
        array = np.array([str(v) for v in array])
    if array.dtype.kind == "U":
        names = np.char.strip(array)
        return None if (names == "").any() else names
    if array.dtype.kind == "b":
        return array.astype(str)
    if array.dtype.kind in "iu":
        return array.astype(np.int64).astype(str)
    if array.dtype.kind == "f" and np.isfinite(array).all() and (array == np.round(array)).all() \
            and (np.abs(array) < 2.0**53).all():  # (whole numbers a float holds exactly)
        return array.astype(np.int64).astype(str)
    return None


def _why_not(values: Any, n: int) -> str:
    array = np.asarray(values) if not hasattr(values, "detach") else values.detach().cpu().numpy()
    if array.ndim != 1:
        return f"shape {tuple(array.shape)}, not one value per sample"
    if array.shape[0] != n:
        return f"{array.shape[0]} values for {n} samples"
    if array.dtype.kind == "U" and (np.char.strip(array) == "").any():
        return f"{int((np.char.strip(array) == '').sum())} empty value(s)"
    if array.dtype.kind == "f":
        return "numbers with a fraction (scores, not group names)"
    return f"values of dtype {array.dtype}"


def _table_columns(path: Path, options: ReadOptions) -> dict[str, Any]:
    read = read_named_columns(path, separator=options.separator, header=options.header)
    if read is None:
        raise InputError(f"Expected {path.name} to be a table with the same number of cells on every line, for "
                         "--group-by.")
    names, columns, decimal_comma = read
    out: dict[str, Any] = {}
    for name in names:
        cells = columns[name]
        try:
            out[name] = column_values(path, name, cells, decimal_comma)
        except InputError:
            out[name] = np.array(cells)  # an empty cell: refused below, naming the column
    return out


def _candidates(path: Path, options: ReadOptions) -> tuple[list[str], Any, Any]:
    """(keys, getter, closer) of the file's arrays, for group keys."""
    if format_suffix(path) in _TEXT_TABLES:
        columns = _table_columns(path, options)
        return list(columns), columns.__getitem__, None
    arrays = open_arrays(path, labels_key=options.labels_key, options=options)
    return [key for key in arrays.keys() if key != WHOLE], arrays.__getitem__, arrays.close


def _scores_or_labels(key: str) -> bool:
    """Whether a key names scores, labels (of any split: `val_labels` beside the test arrays) or the class names."""
    for split in SPLITS:
        key = key.removeprefix(f"{split}_")
    return key in LABEL_KEYS or key in SCORE_KEYS or key == "classes"


def _groups_of(getter: Any, key: str, n: int) -> bool:
    """Whether `key` could group the samples: group names, not all distinct (an id column is no grouping), and not
    named as scores or labels."""
    if _scores_or_labels(key):
        return False
    try:
        names = group_names(getter(key), n=n)
    except (InputError, KeyError, ValueError, TypeError):
        return False
    return names is not None and (n == 1 or np.unique(names).size < n)


def read_group_key(path: str | Path, key: str, *, n: int, split: str = "test", options: ReadOptions | None = None,
                   exclude: tuple[str | None, ...] = (), known: tuple[str, ...] = ()) -> np.ndarray:
    """The group name of each of the `n` samples under `key` (or `<split>_key`) of the predictions file `path`.

    Args:
        path: the predictions file the samples were read from.
        key: the grouping key (`--group-by`).
        n: the number of samples read.
        split: the split read (its prefix is tried after `key`).
        options: how the file was read (a text table's separator and header).
        exclude: keys holding the scores and labels (never listed as group keys).
        known: group keys a reader already filled (listed beside the file's).

    Returns:
        A str array (N,).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.npz"
        >>> np.savez(path, probs=[[0.9, 0.1], [0.4, 0.6]], labels=[0, 1], task=["a", "b"])
        >>> read_group_key(path, "task", n=2).tolist()
        ['a', 'b']
    """
    path = Path(path)
    key = check_group_key(key)
    keys, getter, close = _candidates(path, options or ReadOptions())
    try:
        return _group_key(path, key, n, split, keys, getter, exclude, known)
    finally:
        if close is not None:
            close()


def _group_key(path: Path, key: str, n: int, split: str, keys: list[str], getter: Any,
               exclude: tuple[str | None, ...], known: tuple[str, ...]) -> np.ndarray:
    for name in (key, f"{split}_{key}"):
        if name in keys:
            values = getter(name)
            names = group_names(values, n=n)
            if names is None:
                raise InputError(f"Expected --group-by key '{name}' in {path.name} to hold one group name per sample "
                                 f"(strings or integers, {n} of them), got {_why_not(values, n)}.")
            return names
    listed = sorted({*known, *(k for k in keys if k not in exclude and k not in known and _groups_of(getter, k, n))})
    shown = ", ".join(listed) if listed else "none (no per-sample key of strings or integers beside the scores)"
    raise InputError(f"Expected --group-by key '{key}' in {path.name}, found none: its group keys are {shown}.")


def check_table_group_key(path: str | Path, key: str, *, options: ReadOptions | None = None) -> None:
    """Before a .csv / .tsv is read: refuse a --group-by KEY its header does not name (`<split>_KEY` included), in one
    line listing its columns, so that a misspelled key is not first reported as text beside the scores. Other files
    (and tables that do not split evenly: the reader says why) pass.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
        >>> _ = path.write_text("task,cat,dog,label\\nlaw,0.2,0.8,1\\n")
        >>> check_table_group_key(path, "task")
    """
    path = Path(path)
    if format_suffix(path) not in _TEXT_TABLES or not path.is_file():
        return
    options = options or ReadOptions()
    seen: list[str] = []

    def wanted(names: list[str]) -> bool:
        seen.extend(names)
        return False  # (only the first line is split)

    read_named_columns(path, separator=options.separator, header=options.header, wanted=wanted)
    if seen and key not in seen and not any(name.endswith(f"_{key}") and name.split("_")[0] in ("test", "val")
                                            for name in seen):
        raise InputError(f"Expected --group-by key '{key}' among the columns of {path.name}, found none: its columns "
                         f"are {', '.join(seen)}.")


def attach_groups(predictions: Any, path: str | Path | None, key: str, *, options: ReadOptions | None = None
                  ) -> Any:
    """`predictions` (a `Predictions` or `TopLabelPredictions`) with `groups[key]` filled: from the groups a reader
    filled, else from the file `path` (`read_group_key`); a KEY found in neither is refused listing the keys.

    Example:
        >>> from adacal.interpretation import Predictions
        >>> task = {"task": np.array(["a", "b"])}
        >>> pred = Predictions(np.array([[0.9, 0.1], [0.4, 0.6]]), np.array([0, 1]), groups=task)
        >>> attach_groups(pred, None, "task").groups["task"].tolist()
        ['a', 'b']
    """
    key = check_group_key(key)
    groups = dict(predictions.groups or {})
    if key in groups:
        return predictions
    n = len(predictions)
    if path is None or Path(path).is_dir():  # (a folder read as one input: its reader's groups are all it has)
        shown = ", ".join(sorted(groups)) or "none"
        raise InputError(f"Expected --group-by key '{key}' among the input's group keys, found none: they are "
                         f"{shown}.")
    record = predictions.interpretation
    exclude = (record.scores_key, record.labels_key) if record is not None else ()
    if predictions.classes:
        exclude = (*exclude, *predictions.classes)
    split = record.split if record is not None and record.split in ("test", "val") else "test"
    groups[key] = read_group_key(path, key, n=n, split=split, options=options, exclude=exclude,
                                 known=tuple(groups))
    return replace(predictions, groups=groups)


__all__ = ["attach_groups", "check_group_key", "check_table_group_key", "group_names", "read_group_key"]
