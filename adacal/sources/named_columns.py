"""A text table's columns by the names its header gives them, cells kept as text — for tables whose columns are not
one per class (a `(confidence, correct)` record beside ids and question text, as an evaluation script writes it):
`adacal.interpretation.confidence` decides what the names mean. Quoted cells (`"What is 2,3?"`) are read as the csv
module reads them; cells are the numbers of docs/inputs.md §4 rule 1 only when `column_values` is asked for them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np

from adacal.errors import InputError
from adacal.sources.text_numbers import number_or_none
from adacal.sources.text_tables import format_suffix, read_text

# Tried in this order when --separator does not say (a .tsv: tab): the first that splits the header into 2+ cells
# and every line into as many.
_SEPARATORS = (",", ";", "\t")


def read_named_columns(path: str | Path, *, separator: str | None = None, header: bool | None = None,
                       wanted: Callable[[list[str]], bool] | None = None
                       ) -> tuple[list[str], dict[str, list[str]], bool] | None:
    """(column names, {name: cells}, decimal comma) of a CSV / TSV table, or None when no separator splits it evenly,
    or when `wanted(names)` is false (then only the first line is split). Without a header (`header` False, or a
    first line of numbers only) the columns are named "0", "1", ...; names are stripped. Where `;` or tab separates
    the cells, a `,` inside a number is a decimal comma (docs/inputs.md §4 rule 1).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "answers.csv"
        >>> _ = path.write_text('id,question,confidence,correct\\n7,"2,3?",0.73,true\\n')
        >>> names, columns, _ = read_named_columns(path)
        >>> names, columns["question"], columns["correct"]
        (['id', 'question', 'confidence', 'correct'], ['2,3?'], ['true'])
    """
    path = Path(path)
    text = read_text(path, "a predictions file (.csv)", bytes_per_byte=16)
    if separator is None and format_suffix(path) == ".tsv":
        separator = "\t"
    start = text.lstrip("\r\n")
    line = start[:start.find("\n")] if "\n" in start else start
    for sep in _SEPARATORS if separator is None else (separator,):
        try:
            first = [cell.strip() for cell in next(csv.reader([line], delimiter=sep), [])]
        except csv.Error:
            continue
        if len(first) < 2:
            continue
        decimal_comma = sep in (";", "\t")
        named = header if header is not None else any(number_or_none(cell, decimal_comma) is None for cell in first)
        names = first if named else [str(i) for i in range(len(first))]
        if wanted is not None and not wanted(names):
            return None
        try:
            rows = [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(text), delimiter=sep)]
        except csv.Error:
            continue
        rows = [row for row in rows if any(row)]
        if not rows or any(len(row) != len(first) for row in rows):
            continue
        body = rows[1:] if named else rows
        if not body or len(set(names)) != len(names):
            return None
        return names, {name: [row[i] for row in body] for i, name in enumerate(names)}, decimal_comma
    return None


def column_values(path: Path, name: str, cells: list[str], decimal_comma: bool = False) -> np.ndarray:
    """One column's cells as float64 when every one is a number (docs/inputs.md §4 rule 1), else as strings."""
    values = [number_or_none(cell, decimal_comma) for cell in cells]
    if all(value is not None for value in values):
        return np.array(values, dtype=np.float64)
    if not all(cells):
        empty = cells.index("")
        raise InputError(f"Expected a value in column {name!r} on line {empty + 2} of {path}, got an empty cell.")
    return np.array(cells)


__all__ = ["column_values", "read_named_columns"]
