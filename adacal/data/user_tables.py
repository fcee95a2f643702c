"""A tabular CSV with a label column as feature vectors and class labels (`adacal train --dataset data.csv`).

The first line names the columns. The separator is a comma (a tab for .tsv; a header line without commas but with
semicolons or tabs uses those). The label column is `--label-column NAME`, else the one column named label, target,
class or y (any case); none or several such columns is refused. Labels are class names or integer numbers: integers
are sorted numerically, names as text; the sorted classes are recorded (evaluate reports them). An empty, NaN or NA
label is refused naming its lines, as is a non-integral number (a regression target). Every other column is a
feature and must hold finite numbers: a text column is refused (encode it as numbers first; nothing is one-hot encoded
silently), as is an empty or non-finite value.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError

LABEL_NAMES = ("label", "target", "class", "y")
MISSING = frozenset({"", "nan", "na", "n/a", "null", "none"})


def _lines_text(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:5])
    more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
    return f"line{'s' if len(lines) > 1 else ''} {shown}{more}"


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"Expected {path} to be UTF-8 text, but byte {exc.start} is not: save it as UTF-8.") from None
    except OSError as exc:
        raise InputError(f"Cannot read {path} ({exc.strerror or exc}).") from None
    header_line = text.split("\n", 1)[0]
    separator = "\t" if path.suffix.lower() == ".tsv" else ","
    if separator == "," and "," not in header_line:
        separator = ";" if ";" in header_line else ("\t" if "\t" in header_line else ",")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator)  # a quoted field may hold a newline
    rows = []
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append((reader.line_num, row))  # the line the row ends on
    except csv.Error as exc:
        raise InputError(f"Cannot read line {reader.line_num} of {path} as CSV ({exc}).") from None
    if not rows:
        raise InputError(f"Expected {path} to hold a header line and rows, got an empty file.")
    (_, header), body = rows[0], rows[1:]
    header = [name.strip() for name in header]
    if len(set(header)) != len(header):
        twice = next(name for name in header if header.count(name) > 1)
        raise InputError(f"Expected distinct column names in the header of {path}, got '{twice}' twice.")
    for number, row in body:
        if len(row) != len(header):
            raise InputError(f"Expected {len(header)} fields on line {number} of {path} (as its header), got "
                             f"{len(row)}.")
    if not body:
        raise InputError(f"Expected rows below the header of {path}, got none.")
    return header, body


def find_label_column(header: list[str], label_column: str | None, path: Path) -> int:
    """The label column's position: `label_column` when given, else the one column with a telling name.

    >>> find_label_column(["age", "Target", "income"], None, Path("data.csv"))
    1
    """
    if label_column is not None:
        if label_column not in header:
            raise InputError(f"Expected --label-column {label_column} to be a column of {path}, got the columns "
                             f"{', '.join(header)}.")
        return header.index(label_column)
    found = [i for i, name in enumerate(header) if name.lower() in LABEL_NAMES]
    if len(found) != 1:
        what = "none" if not found else " and ".join(header[i] for i in found)
        raise InputError(f"Expected one label column named {'|'.join(LABEL_NAMES)} in {path}, got {what} (columns "
                         f"{', '.join(header)}): name it with --label-column.")
    return found[0]


def read_labels(values: list[str], lines: list[int], name: str, path: Path) -> tuple[np.ndarray, list[str]]:
    """Class indices and sorted class names of a label column (see the module doc).

    >>> labels, classes = read_labels(["10", "2", "10", "33"], [2, 3, 4, 5], "grade", Path("data.csv"))
    >>> labels.tolist(), classes
    ([1, 0, 1, 2], ['2', '10', '33'])
    """
    missing = [line for value, line in zip(values, lines) if value.strip().lower() in MISSING]
    if missing:
        raise InputError(f"Expected a label on every row of {path}, but the label column '{name}' is empty or NaN on "
                         f"{_lines_text(missing)}: fill or drop those rows.")
    cleaned = [value.strip() for value in values]
    numbers = []
    for value in cleaned:
        try:
            numbers.append(float(value))
        except ValueError:
            numbers = None
            break
    if numbers is not None:
        bad = [(v, line) for v, number, line in zip(cleaned, numbers, lines)
               if not math.isfinite(number) or number != round(number)]
        if bad:
            raise InputError(f"Expected the label column '{name}' of {path} to hold classes (names or integers), got "
                             f"{bad[0][0]} on line {bad[0][1]}: a regression target cannot train a classifier.")
        ints = [int(round(n)) for n in numbers]
        classes_int = sorted(set(ints))
        lookup = {c: i for i, c in enumerate(classes_int)}
        labels = np.asarray([lookup[v] for v in ints], dtype=np.int64)
        classes = [str(c) for c in classes_int]
    else:
        classes = sorted(set(cleaned))
        lookup = {c: i for i, c in enumerate(classes)}
        labels = np.asarray([lookup[v] for v in cleaned], dtype=np.int64)
    if len(classes) < 2:
        raise InputError(f"Expected at least 2 classes in the label column '{name}' of {path}, got one "
                         f"({classes[0]}).")
    return labels, classes


def read_features(columns: list[tuple[str, list[str]]], lines: list[int], path: Path) -> np.ndarray:
    """The feature columns as float64 (N, D): finite numbers only (see the module doc)."""
    if not columns:
        raise InputError(f"Expected feature columns besides the label column in {path}, got none.")
    out = np.empty((len(lines), len(columns)), dtype=np.float64)
    for j, (name, values) in enumerate(columns):
        for i, value in enumerate(values):
            text = value.strip()
            if text.lower() in MISSING:
                raise InputError(f"Expected a value in the feature column '{name}' of {path} on every row, got none "
                                 f"on line {lines[i]}: fill or drop it.")
            try:
                number = float(text)
            except ValueError:
                raise InputError(
                    f"Expected the feature column '{name}' of {path} to hold numbers, got {text!r} on line {lines[i]}: "
                    "encode it as numbers (e.g. one 0/1 column per category) or drop the column."
                ) from None
            if not math.isfinite(number):
                raise InputError(f"Expected finite numbers in the feature column '{name}' of {path}, got {text!r} on "
                                 f"line {lines[i]}.")
            out[i, j] = number
    return out


def read_table(path: Path, *, label_column: str | None = None, feature_columns: list[str] | None = None
               ) -> tuple[np.ndarray, np.ndarray, list[str], dict[str, Any]]:
    """(features (N, D) float64, labels (N,), classes, details for the split record) of a CSV.

    `feature_columns`: the features a trained model reads (an OOD file must have them; its label column, if any, is
    left out); then labels are not required and come back as -1.
    """
    header, body = _read_rows(path)
    lines = [number for number, _ in body]
    if feature_columns is None:
        position = find_label_column(header, label_column, path)
        labels, classes = read_labels([row[position] for _, row in body], lines, header[position], path)
        names = [name for i, name in enumerate(header) if i != position]
    else:
        absent = [name for name in feature_columns if name not in header]
        if absent:
            raise InputError(f"Expected the feature column '{absent[0]}' the model trained on in {path}, got the "
                             f"columns {', '.join(header)}.")
        names, labels, classes = list(feature_columns), np.full(len(body), -1, dtype=np.int64), []
    columns = [(name, [row[header.index(name)] for _, row in body]) for name in names]
    features = read_features(columns, lines, path)
    details = {"label_column": None if feature_columns is not None else header[position], "feature_columns": names}
    return features, labels, classes, details
