"""Rule 1 of docs/inputs.md "Text files": one grammar for every number written as text (table cells, labels written as
text, JSON strings read as numbers). Python's float() is never given user text the grammar did not pass."""

from __future__ import annotations

import re

import numpy as np

# Rule 1: one grammar for every number written as text. Python's float() is never given user text it did not pass:
# it also takes "1_000", " 1", Arabic-Indic digits, "infinity", ...
_DECIMAL = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_COMMA_OR_POINT = _DECIMAL.replace(r"\.", "[.,]")
_NOT_FINITE = r"[+-]?(?i:nan|inf(?:inity)?)"
_NUMBER = re.compile(_DECIMAL).fullmatch
_COMMA_NUMBER = re.compile(_DECIMAL.replace(r"\.", ",")).fullmatch
_NON_FINITE = re.compile(_NOT_FINITE).fullmatch
_INTEGER = re.compile(r"[+-]?[0-9]+").fullmatch
# Whole columns at once, one cell per line (a cell holding a line break passes here and fails float() later).
_NUMBERS = re.compile(rf"(?>{_DECIMAL}|{_NOT_FINITE})(?:\n(?>{_DECIMAL}|{_NOT_FINITE}))*+").fullmatch
_COMMA_NUMBERS = re.compile(
    rf"(?>{_COMMA_OR_POINT}|{_NOT_FINITE})(?:\n(?>{_COMMA_OR_POINT}|{_NOT_FINITE}))*+").fullmatch
_INTEGERS = re.compile(r"[+-]?[0-9]{1,18}(?:\n[+-]?[0-9]{1,18})*+").fullmatch
_LARGEST_INTEGER = 2**62
_BOOLEANS = ("true", "false")


def parse_number(text: str, *, decimal_comma: bool = False) -> float | None:
    """The number `text` writes by rule 1 (white space around it ignored), or None when it writes none.

    >>> parse_number(" 0.25"), parse_number("1e-3"), parse_number("0_25"), parse_number("0,25", decimal_comma=True)
    (0.25, 0.001, None, 0.25)
    """
    return number_or_none(text.strip(), decimal_comma)


def is_integer_text(text: str) -> bool:
    """Whether `text` writes an integer by rule 1: `3`, `-2`, or a whole number such as `3.0` or `1e3`.

    >>> is_integer_text("3"), is_integer_text("3.0"), is_integer_text("3.5"), is_integer_text("3_0")
    (True, True, False, False)
    """
    return integer_or_none(text.strip()) is not None


def number_or_none(cell: str, decimal_comma: bool = False) -> float | None:
    """`parse_number` of a cell already stripped."""
    if _NUMBER(cell) or _NON_FINITE(cell):
        return float(cell)
    if decimal_comma and _COMMA_NUMBER(cell):
        return float(cell.replace(",", "."))
    return None


def integer_or_none(cell: str, decimal_comma: bool = False) -> int | None:
    """The integer a stripped cell writes by rule 1 (`3`, or a whole number such as `3.0`), else None."""
    if _INTEGER(cell):
        value = int(cell)
    else:
        number = number_or_none(cell, decimal_comma)
        if number is None or not number.is_integer():  # (NaN and Inf are not)
            return None
        value = int(number)
    return value if abs(value) < _LARGEST_INTEGER else None


def floats_or_none(cells: list[str], decimal_comma: bool) -> np.ndarray | None:
    """The numbers of stripped `cells` by rule 1 as float64, or None when one is no number."""
    if not cells:
        return np.empty(0)
    joined = "\n".join(cells)
    try:
        if _NUMBERS(joined):
            return np.array(cells, dtype=np.float64)
        if decimal_comma and _COMMA_NUMBERS(joined):
            return np.array(joined.replace(",", ".").split("\n"), dtype=np.float64)
    except ValueError:  # a cell holding a line break
        pass
    return None


def integers_or_none(cells: list[str], decimal_comma: bool) -> list[int] | None:
    """The integers of stripped `cells` by rule 1, or None when one is none."""
    if cells and _INTEGERS("\n".join(cells)):
        return list(map(int, cells))
    values = [integer_or_none(cell, decimal_comma) for cell in cells]
    return None if None in values else values  # type: ignore[return-value]
