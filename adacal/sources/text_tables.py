"""Predictions written as text tables: CSV / TSV and np.savetxt tables, each also gzipped (JSON: `json_predictions`).

Every reader here turns one file into plain columns (numpy arrays or lists of JSON values) that
`adacal.sources.formats` interprets: which key holds scores and labels, binary scores, class names. Text is read whole
(within the memory budget: a parsing cost per byte of text is checked first; a gzipped file is decompressed in chunks
and refused once past it) and decoded as UTF-8 (a byte-order mark is dropped).

How text is read (docs/inputs.md repeats these rules); where two readings remain, the file is refused in one line
naming the option that chooses:

1. Numbers. A table cell, a label written as text or a JSON string read as a number is a number only when, stripped
   of the white space around it, it matches `[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?` or is `nan`,
   `inf` or `infinity` (any case, optionally signed; refused later as not finite). No `_`, no space inside, no hex,
   no other digits. Where `;` or tab separates the cells, or the table is one column, `,` may stand for `.` (a
   decimal comma). An integer is `[+-]?[0-9]+`, or a number whose value is whole (`3.0`: pandas' float column),
   below 2**62 in size.
2. Separator. `separator` (--separator: `,`, `;`, tab, or ` ` for runs of spaces and tabs) is used as given; a
   .tsv is read with tab. Any other file is read with each of `,` `;` tab ` ` that occurs in it, and as one column
   when neither `;` nor tab occurs. A reading counts when every line holding something splits into the same number
   of cells, at least one sample is left, and every cell is a number by rule 1 except those of a header line, of a
   row-index column of names (rule 5) and of the label column (true/false; class names only below a header line,
   which names the classes). One column counts only in a .txt and in a file of labels only or of scores only. One
   reading, or several giving the same table: it is used. None: refused, naming the first bad line of the reading
   that got furthest. Several giving different tables: refused; pass --separator.
3. Header (.csv, .tsv). `header` (--header / --no-header) says whether the first line names the columns. Else it
   does when it names a label column or holds a non-number outside the last column (outside every column when all
   are scores). A first line of numbers is a sample, but pandas' column numbers `0,1,...,w-1` above more lines are
   a header (noted) when they cannot be a sample (its label w-1 is out of range: w >= 3), and are refused when they
   can (`0,1`; any width when every column holds scores). In a .txt, `#` starts a comment, and a first line with no
   number in it (however split) is a line of names, skipped.
4. Label column. The column named `labels_key` (--labels-key); else the one column named as labels
   (CSV_LABEL_NAMES, any case): two such columns are refused; else the last column. With `labels_key`, another
   column named as labels is a class (noted).
5. Index and predictions. Below a header, a first column named `""`, `Unnamed: 0`, `index` or `id` holding integers
   or names (3+ columns); without one, a first column holding exactly 0, 1, 2, ... (3+ columns, 3+ lines): pandas'
   row index, dropped (noted). A column named as predictions (CSV_PREDICTION_NAMES) holding integers beside 3+
   other columns: predicted classes, dropped (noted).
6. JSON. A key given twice in one object is refused, in .json, .jsonl and every document `parse_json` reads.
8. Score columns. Every column beside the labels is a class's scores but a row index or counter, a copy of the labels
   and a per-sample figure (`entropy`, `sample_weight`, ...), dropped with a note, or refused naming --score-columns
   where that cannot be told: `adacal.sources.table_columns`.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.sources.table_columns import (
    CSV_INDEX_NAMES, CSV_LABEL_NAMES, CSV_PREDICTION_NAMES, chosen_columns, find_label_column, score_columns,
    without_index, without_label_copies,
)
from adacal.sources.text_numbers import (
    floats_or_none, integers_or_none, number_or_none,
)
from adacal.sources.files import (
    check_allocation,
    human_bytes,
    memory_budget,
    open_regular,
)

# Text formats may also come gzip-compressed (`preds.csv.gz`: pandas' `to_csv` compresses by the name alone).
TEXT_FORMATS = (".csv", ".tsv", ".txt", ".json", ".jsonl")
GZIP_SUFFIX = ".gz"


def format_suffix(path: Path) -> str:
    """The suffix that says how to read `path`: `.csv` for `x.csv` and for `x.csv.gz` (a compressed text format)."""
    suffix = path.suffix.lower()
    if suffix == GZIP_SUFFIX and Path(path.stem).suffix.lower() in TEXT_FORMATS:
        return Path(path.stem).suffix.lower()
    return suffix


def text_stem(path: Path) -> str:
    """The name without its format suffix (and without .gz)."""
    name = path.name[: -len(GZIP_SUFFIX)] if path.suffix.lower() == GZIP_SUFFIX else path.name
    return Path(name).stem


# ------------------------------------------------------------------------------------------------------- text


def read_text(path: Path, what: str, bytes_per_byte: int = 40) -> str:
    """The UTF-8 text of `path` (gunzipped for `.gz`), refused when parsing it would need more memory than there is:
    `bytes_per_byte` of memory per byte of text (Python lists of numbers: about 40 at worst)."""
    with open_regular(path, what) as handle:
        if path.suffix.lower() != GZIP_SUFFIX:
            check_allocation(bytes_per_byte * os.fstat(handle.fileno()).st_size, what=f"the records in {path}")
            raw = handle.read()
        else:
            raw = _gunzip(handle, path, limit=memory_budget() // bytes_per_byte)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"Expected {path} to be UTF-8 text, but byte {exc.start} is not.") from None


def _gunzip(handle: Any, path: Path, *, limit: int) -> bytes:
    """The decompressed bytes of a gzip file, read in chunks and refused past `limit` bytes (a small file can
    decompress to any size)."""
    import gzip
    import zlib

    chunks, total = [], 0
    try:
        with gzip.GzipFile(fileobj=handle, mode="rb") as stream:
            while chunk := stream.read(1 << 20):
                total += len(chunk)
                if total > limit:
                    raise InputError(f"Expected {path} to fit in memory once decompressed, but it holds more than "
                                     f"{human_bytes(limit)} of text.")
                chunks.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"Expected {path} to be a readable gzip file, but it is not "
                         f"({exc.__class__.__name__}).") from None
    return b"".join(chunks)


_BOOLEANS = ("true", "false")

# ---------------------------------------------------------------------------------------------------- separators

_SEPARATORS = (",", ";", "\t", " ")
# Spellings of a tab that survive a shell (`--separator '\t'`, `--separator tab`).
_SEPARATOR_ALIASES = {"\\t": "\t", "tab": "\t"}
_WHITESPACE = re.compile(r"[ \t]+")
_WORDS = re.compile(r"[ \t,;]+")
# White space a cell may hold around it, by separator (none: its cells need no stripping); for ` `, white space
# other than spaces and tabs (which str.split() would also split at).
_SPACE = {",": re.compile(r"[^\S\n]").search, ";": re.compile(r"[^\S\n]").search,
          "\t": re.compile(r"[^\S\t\n]").search, " ": re.compile(r"[^\S \t\n]").search}
_ASCII_SPACE = {",": " \t\r\x0b\x0c\x1c\x1d\x1e\x1f", ";": " \t\r\x0b\x0c\x1c\x1d\x1e\x1f",
                "\t": " \r\x0b\x0c\x1c\x1d\x1e\x1f", " ": "\r\x0b\x0c\x1c\x1d\x1e\x1f"}


def _spaced(text: str, separator: str) -> bool:
    """Whether a cell of `text` split at `separator` may hold white space around it (`_SPACE`)."""
    if text.isascii():
        return any(space in text for space in _ASCII_SPACE[separator])
    return _SPACE[separator](text) is not None


class _NotRead(InputError):
    """A reading of a table that fails rule 2 (cells per line, numbers) at `line`: no candidate."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def _separator_option(separator: str | None) -> str | None:
    if separator is None:
        return None
    value = _SEPARATOR_ALIASES.get(separator, separator) if isinstance(separator, str) else separator
    if value not in _SEPARATORS:
        raise InputError(f"Expected --separator to be ',', ';', '\\t' (tab) or ' ' (runs of spaces and tabs), got "
                         f"{separator!r}.")
    return value


def _readings(text: str, separator: str | None, *, one_column: bool) -> tuple[str, ...]:
    """The separators to try (rule 2): the one given, else each that occurs, and `;` for one column (decimal commas
    allowed) when neither `;` nor tab occurs. Readings that cannot count or can only repeat another are left out:
    ` ` beside tab when no space occurs and tabs never meet (nor end a line), and one column beside others unless
    `one_column` (a file that may be one column) and `,` occurs (a decimal comma or a separator)."""
    if separator is not None:
        return (separator,)
    found = [sep for sep in (",", ";", "\t") if sep in text]
    if " " in text or ("\t" in text and _uneven_tabs(text)):
        found.append(" ")
    if ";" not in text and "\t" not in text and (not found or (one_column and "," in text)):
        found.append(";")  # no `;` in the file: one column
    return tuple(found)


def _uneven_tabs(text: str) -> bool:
    """Tabs that a reading at runs of white space would not read as the tab reading does (empty cells, edges)."""
    return any(pair in text for pair in ("\t\t", "\n\t", "\t\n", "\t\r")) or text.startswith("\t") \
        or text.endswith("\t")


def _chosen(path: Path, text: str, outcomes: dict[str, Any], widths: dict[str, int], same: Any) -> Any:
    """The one outcome of the readings that count (rule 2): a table, or the InputError it raised; refused when they
    differ, or when none counts (the failure of the reading that got furthest, the first of those)."""
    counted = {sep: outcome for sep, outcome in outcomes.items() if not isinstance(outcome, _NotRead)}
    if not counted:
        raise max(outcomes.values(), key=lambda failure: failure.line)
    distinct: list[tuple[str, Any]] = []
    for sep, outcome in counted.items():
        if not any(same(outcome, other) for _, other in distinct):
            distinct.append((sep, outcome))
    if len(distinct) > 1:
        names = [f"{widths[sep]} column{'s' if widths[sep] != 1 else ''}"
                 + (" of decimal commas" if sep not in text else "") + f" with {sep!r}" for sep, _ in distinct]
        options = " or ".join(f"--separator {sep!r}" for sep, _ in distinct)
        raise InputError(f"Expected one separator in {path}, but it reads as {', '.join(names[:-1])} and as "
                         f"{names[-1]}: pass {options}.")
    outcome = distinct[0][1]
    if isinstance(outcome, InputError):
        raise outcome
    return outcome


def _same(one: Any, other: Any) -> bool:
    """Two outcomes of readings alike: the same error, or the same arrays (tables: their first item)."""
    if isinstance(one, InputError) or isinstance(other, InputError):
        return type(one) is type(other) and str(one) == str(other)
    if isinstance(one, tuple):
        one, other = one[0], other[0]
        return one.keys() == other.keys() and all(_same_arrays(one[key], other[key]) for key in one)
    return _same_arrays(one, other)


def _same_arrays(one: np.ndarray, other: np.ndarray) -> bool:
    if one.shape != other.shape or one.dtype.kind != other.dtype.kind:
        return False
    return bool(np.array_equal(one, other, equal_nan=one.dtype.kind == "f"))


# ----------------------------------------------------------------------------------------------------------- txt


def read_text_table(path: str | os.PathLike, *, separator: str | None = None) -> np.ndarray:
    """The numbers of a text table as np.savetxt writes it: one row per line, `#` comments and blank lines skipped,
    a first line of names (np.savetxt's header without `#`, R's write.table) skipped too, cells separated as
    `separator` says or as the rules of this module find; (N, K) float64, or (N,) for one column.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.txt"
    >>> _ = path.write_text("# logits\\n0,25\\t0,75\\n1,5\\t-2\\n")
    >>> read_text_table(path).tolist()
    [[0.25, 0.75], [1.5, -2.0]]
    """
    path = Path(path)
    separator = _separator_option(separator)
    text = read_text(path, "a predictions file (.txt)")
    comments = "#" in text
    lines = [(number, line) for number, line in
             ((number, (raw.split("#", 1)[0] if comments else raw).strip())
              for number, raw in enumerate(text.splitlines(), start=1)) if line]
    if not lines:
        raise InputError(f"Expected {path} to hold a table of numbers, but it is empty.")
    outcomes: dict[str, Any] = {}
    widths: dict[str, int] = {}
    for sep in _readings(text, separator, one_column=True):
        try:
            outcomes[sep] = _txt_table(path, text, lines, sep)
            widths[sep] = 1 if outcomes[sep].ndim == 1 else outcomes[sep].shape[1]
        except InputError as exc:
            outcomes[sep] = exc
    return _chosen(path, text, outcomes, widths, _same)


def _split(line: str, separator: str) -> list[str]:
    return _WHITESPACE.split(line) if separator == " " else [cell.strip() for cell in line.split(separator)]


def _txt_table(path: Path, text: str, lines: list[tuple[int, str]], separator: str) -> np.ndarray:
    """One reading of a .txt table (rules 1 to 3), its lines stripped of comments and white space."""
    decimal_comma = separator in (";", "\t")
    if _spaced(text, separator):
        rows = [_split(line, separator) for _, line in lines]
    else:  # (the same cells, faster)
        rows = [line.split() if separator == " " else line.split(separator) for _, line in lines]
    names = ""
    if any(number_or_none(cell, decimal_comma) is None for cell in rows[0]) \
            and not any(number_or_none(word) is not None for word in _WORDS.split(lines[0][1])):
        names, lines, rows = lines[0][1], lines[1:], rows[1:]  # column names: no number in it, however it is split
    if not rows:
        raise _NotRead(1, f"Expected {path} to hold a table of numbers, but it holds only a line of names "
                          f"({names[:40]!r}).")
    width = len(rows[0])
    values = None
    if all(len(row) == width for row in rows) and None not in [number_or_none(cell, decimal_comma) for cell in rows[0]]:
        # (a wrong reading fails at once)
        values = floats_or_none([cell for row in rows for cell in row], decimal_comma)
    if values is None:  # the first line that fails, as the reader of one line at a time finds it
        for (number, _), cells in zip(lines, rows):
            bad = next((cell for cell in cells if number_or_none(cell, decimal_comma) is None), None)
            if bad is not None:
                raise _NotRead(number, f"Expected line {number} of {path} to hold numbers, got {bad[:30]!r}.")
            if len(cells) != width:
                raise _NotRead(number, f"Expected line {number} of {path} to have {width} numbers, like line "
                                       f"{lines[0][0]}, got {len(cells)}.")
        raise AssertionError("a table that is no table has a line that fails")  # pragma: no cover
    table = values.reshape(len(rows), width)
    return table[:, 0] if width == 1 else table


# ---------------------------------------------------------------------------------------------------------- csv


def read_csv_with_notes(path: str | os.PathLike, *, labels_key: str | None = None, labels_only: bool = False,
                        scores_only: bool = False, labels_optional: bool = False, separator: str | None = None,
                        header: bool | None = None, score_columns: str | None = None,
                        set_aside: tuple[str, ...] = ()) -> tuple[dict[str, np.ndarray], list[str]]:
    """The columns of a CSV / TSV table of scores and labels ("scores" (N, K), "labels", and "classes" from a
    header), and the sentences saying what was assumed (a row-index column dropped, decimal commas), read by the
    rules of this module. With `scores_only` (the labels come from another file), a table with no column named as
    labels is all scores; with `labels_optional` (OOD sets), so is one whose last column is not class indices (not
    all integers). `separator` and `header` (None: decided by the rules) choose where the file leaves two readings;
    `score_columns` (--score-columns) selects the score columns (`table_columns.parse_score_columns`), else rule 8
    decides which columns beside the labels are class scores. `set_aside`: header names of columns that are neither
    (a --group-by key), left out before the rules run (not with `score_columns`, whose positions count every column).

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
    >>> _ = path.write_text("cat;dog;label\\n0,2;0,8;1\\n0,6;0,4;0\\n")
    >>> table, notes = read_csv_with_notes(path)
    >>> table["scores"].tolist(), table["labels"].tolist(), table["classes"].tolist()
    ([[0.2, 0.8], [0.6, 0.4]], [1, 0], ['cat', 'dog'])
    """
    path = Path(path)
    separator = _separator_option(separator)
    if header is not None and not isinstance(header, bool):
        raise InputError(f"Expected the header option to be true, false or unset, got {header!r}.")
    # Parsed row by row into floats: about 16 bytes of memory per byte of text at worst.
    text = read_text(path, "a predictions file (.csv)", bytes_per_byte=16)
    if separator is None and format_suffix(path) == ".tsv":
        separator = "\t"
    outcomes: dict[str, Any] = {}
    widths: dict[str, int] = {}
    set_aside = () if score_columns is not None else tuple(set_aside)
    for sep in _readings(text, separator, one_column=labels_only or scores_only or labels_optional):
        try:
            rows = _csv_rows(path, text, sep, labels_key, labels_only, header, probe=score_columns is None,
                             set_aside=set_aside)
            widths[sep] = len(rows[0][1])
            outcomes[sep] = _csv_table(path, rows, sep, labels_key=labels_key, labels_only=labels_only,
                                       scores_only=scores_only, labels_optional=labels_optional, header=header,
                                       score_columns=score_columns, set_aside=set_aside)
        except InputError as exc:
            outcomes[sep] = exc
        rows = []  # (one reading's cells in memory at a time)
    return _chosen(path, text, outcomes, widths, _same)


def _csv_rows(path: Path, text: str, separator: str, labels_key: str | None, labels_only: bool,
              header: bool | None, probe: bool = True, set_aside: tuple[str, ...] = ()
              ) -> list[tuple[int, list[str]]]:
    """(line number, stripped cells) of every line holding something, all with the cells of the first (rule 2);
    read in chunks, the first small, so that a reading that splits the lines unevenly fails at once."""
    if separator == " ":
        reader: Iterator[list[str]] = csv.reader(
            (line.strip() for line in io.StringIO(text.replace("\t", " "))), delimiter=" ", skipinitialspace=True)
    else:
        reader = csv.reader(io.StringIO(text), delimiter=separator)
    strip = _spaced(text, separator)
    rows: list[tuple[int, list[str]]] = []
    number, size, probed = 0, 64, not probe  # (--score-columns: only the columns chosen must be numbers)
    try:
        while chunk := list(itertools.islice(reader, size)):
            if strip:
                chunk = [[cell.strip() for cell in row] for row in chunk]
            kept = [(line, row) for line, row in zip(range(number + 1, number + 1 + len(chunk)), chunk) if any(row)]
            number, size = number + len(chunk), 1 << 16
            width = len(rows[0][1]) if rows else len(kept[0][1]) if kept else 0
            if any(len(row) != width for _, row in kept):
                line, row = next((line, row) for line, row in kept if len(row) != width)
                raise _NotRead(line, f"Expected line {line} of {path} to have {width} columns, got {len(row)}.")
            rows.extend(kept)
            if rows and not probed:
                _probe(path, rows, separator, labels_key, labels_only, header, set_aside)
                probed = True
    except csv.Error as exc:
        raise _NotRead(number + 1, f"Expected {path} to be a CSV table, but it could not be parsed ({exc}).") from None
    if not rows:
        raise InputError(f"Expected {path} to hold a table of scores and labels, but it is empty.")
    return rows


def _probe(path: Path, rows: list[tuple[int, list[str]]], separator: str, labels_key: str | None,
           labels_only: bool, header: bool | None, set_aside: tuple[str, ...] = ()) -> None:
    """Refuse a reading at once when a cell that `_csv_table` would take for a score is no number, whatever it finds
    further down: below the first line (from it when it is data), outside the first column (an index) and the last
    (labels), and outside columns that the first line names as labels; in one column, every cell but in a labels
    file."""
    first = rows[0][1]
    exempt = {len(first) - 1,
              *(i for i, cell in enumerate(first) if cell.lower() in CSV_LABEL_NAMES or cell == labels_key),
              *(i for i, cell in enumerate(first) if header is not False and cell in set_aside)}
    named_first = header is not False and number_or_none(first[0], separator in (";", "\t")) is None
    if first[0].lower() in CSV_INDEX_NAMES or named_first:
        exempt.add(0)  # (a row index of names under a header: rule 5 decides, and refuses cells that are no number)
    if len(first) == 1 and not labels_only:
        exempt = set()  # (one column is a table only when all its cells are scores)
    decimal_comma = separator in (";", "\t")
    for number, cells in rows[header is not False:]:
        bad = next((cell for i, cell in enumerate(cells)
                    if i not in exempt and number_or_none(cell, decimal_comma) is None), None)
        if bad is not None:
            hint = "" if len(first) <= 2 else " (text beside the scores: pass --score-columns to select them)"
            raise _NotRead(number, f"Expected the scores on line {number} of {path} to be numbers, got "
                                   f"{bad[:30]!r}{hint}.")


def _csv_table(path: Path, rows: list[tuple[int, list[str]]], separator: str, *, labels_key: str | None,
               labels_only: bool, scores_only: bool, labels_optional: bool, header: bool | None,
               score_columns: str | None = None, set_aside: tuple[str, ...] = ()
               ) -> tuple[dict[str, np.ndarray], list[str]]:
    """One reading of a CSV table (rules 1 to 5), from its rows split at `separator`; the columns a header names in
    `set_aside` left out first."""
    notes: list[str] = []
    # With ';' or tab between cells (or one column: read with ';'), a comma inside one is a decimal comma (what
    # spreadsheets write in many locales).
    decimal_comma = separator in (";", "\t")
    first = rows[0][1]
    width = len(first)
    if labels_only and width == 1:
        if header is None:
            header = first[0].lower() in CSV_LABEL_NAMES + ((labels_key or "").lower(),)
        body = rows[1:] if header else rows
        labels = _labels_array([cells[0] for _, cells in body], decimal_comma)
        if not header:
            _check_label_names(path, body, 0, labels, decimal_comma)
        return {"labels": labels}, notes
    named_label = header is not False and (any(cell.lower() in CSV_LABEL_NAMES for cell in first)
                                           or (labels_key is not None and labels_key in first))
    unnamed = not named_label and labels_key is None
    all_scores = unnamed and (scores_only or (labels_optional and integers_or_none(
        [cells[-1] for _, cells in (rows if header is False else rows[1:])], decimal_comma) is None))
    if header is None:
        header = named_label or any(number_or_none(cell, decimal_comma) is None
                                    for cell in (first if all_scores else first[:-1]))
        if not header and width >= 2 and len(rows) > 1 and first == [str(i) for i in range(width)]:
            # pandas names unnamed columns 0, 1, 2, ... and writes them as a header (`pd.DataFrame(array).to_csv()`):
            # a header when no sample can read so (its label, w - 1, would be out of range), else two readings.
            mark = separator if separator in ",;" else " "
            shown = mark.join(first[:4]) + (f"{mark}..." if width > 4 else "")
            sample = all_scores or width - 1 < max(2, width - 1)  # (its label w - 1 a class: only when w = 2)
            if sample:
                raise InputError(f"Expected {path} to start with a header or a sample, but its first line {shown} is "
                                 "either pandas' column numbers or a sample: pass --header or --no-header.")
            header = True
            notes.append(f"{path.name}: first line {shown} read as pandas' column numbers (a header), not as a "
                         "sample")
    names: list[str] | None = first if header else None
    if header:
        rows = rows[1:]
    aside = [i for i, name in enumerate(names or ()) if name in set_aside]
    if aside and names is not None:  # (a --group-by column: neither scores nor labels)
        names = [name for i, name in enumerate(names) if i not in aside]
        rows = [(line, [cell for i, cell in enumerate(cells) if i not in aside]) for line, cells in rows]
        width = len(names)
        notes.append(f"{path.name}: column{'s' if len(aside) > 1 else ''} "
                     f"{', '.join(repr(first[i]) for i in aside)} set aside as the --group-by key")
    if not rows:  # (no reading that leaves no sample counts)
        raise _NotRead(1, f"Expected {path} to hold at least one row of scores, but it has only a header.")
    if score_columns is not None:
        names, rows, label_column = chosen_columns(path, names, rows, score_columns, labels_key,
                                                    all_scores or scores_only, notes)
        width = len(rows[0][1])
        scores, labels = _score_table(path, rows, label_column, decimal_comma)
    else:
        scores, labels, names, label_column, rows = _scores_and_labels(
            path, names, width, rows, labels_key, decimal_comma, all_scores, notes)
    if names is not None and len(set(names)) != len(names):
        raise InputError(f"Expected the column names in {path} to differ, but some repeat.")
    table: dict[str, np.ndarray] = {"scores": scores[:, 0] if scores.shape[1] == 1 else scores}
    if labels is not None:
        table["labels"] = _labels_array(labels, decimal_comma)
        if names is None:
            _check_label_names(path, rows, label_column, table["labels"], decimal_comma)
        if not all(labels):
            empty = rows[labels.index("")][0]
            raise InputError(f"Expected a label on line {empty} of {path}, got an empty cell.")
    if names is not None:
        table["classes"] = np.array([name for i, name in enumerate(names) if i != label_column])
    if separator in (";", "\t") and any("," in cell for _, cells in rows[:1000] for cell in cells):
        notes.append(f"{path.name}: commas inside cells read as decimal commas")
    return table, notes


def _scores_and_labels(path: Path, names: list[str] | None, width: int, rows: list[tuple[int, list[str]]],
                       labels_key: str | None, decimal_comma: bool, all_scores: bool, notes: list[str]
                       ) -> tuple[np.ndarray, list[str] | None, list[str] | None, int | None,
                                  list[tuple[int, list[str]]]]:
    """Rules 4, 5 and 8: the label column, then the class scores without a row index, predicted classes, a copy of
    the labels and per-sample figures (`table_columns.score_columns`)."""
    before = width
    names, width, rows = without_index(path, names, width, rows, labels_key, decimal_comma, notes)
    file_columns = list(range(before - width, before))
    predicted = [i for i, name in enumerate(names or []) if name.lower() in CSV_PREDICTION_NAMES]
    if predicted and width > 3 and rows and integers_or_none([cells[predicted[0]] for _, cells in rows],
                                                      decimal_comma) is not None:
        column = predicted[0]
        notes.append(f"{path.name}: column {names[column]!r} (predicted classes, integers) ignored: the class scores "
                     "give the prediction")
        names, width = names[:column] + names[column + 1:], width - 1
        del file_columns[column]
        rows = [(number, cells[:column] + cells[column + 1:]) for number, cells in rows]
    if width < 2 and not all_scores:
        raise _NotRead(1, f"Expected {path} to have a column per class and a label column, got {width} column(s).")
    if names is not None and not all_scores and labels_key is None:
        names, width, rows, file_columns = without_label_copies(path, names, width, rows, file_columns, notes)
    label_column = None if all_scores else find_label_column(path, names, width, labels_key, notes)
    scores, labels = _score_table(path, rows, label_column, decimal_comma)
    if label_column is not None:
        del file_columns[label_column]
    integer_labels = None
    if labels is not None:
        integer_labels = integers_or_none(labels, decimal_comma)
        integer_labels = None if integer_labels is None else np.array(integer_labels, dtype=np.float64)
    score_names = None if names is None else [name for i, name in enumerate(names) if i != label_column]
    if scores.shape[0] >= 1 and scores.shape[1] >= 2:
        keep = score_columns(path, score_names, scores, integer_labels, file_columns, notes)
        if len(keep) < scores.shape[1]:
            scores = scores[:, keep]
            if names is not None:
                kept_names = [score_names[j] for j in keep]
                if label_column is not None:
                    kept_names.append(names[label_column])
                    label_column = len(kept_names) - 1
                names = kept_names
    return scores, labels, names, label_column, rows


def _score_table(path: Path, rows: list[tuple[int, list[str]]], label_column: int | None, decimal_comma: bool
                 ) -> tuple[np.ndarray, list[str] | None]:
    """The numbers of every cell outside `label_column`, (N, columns), and the cells of that column; the first line
    of a cell that is no number is refused. (One score column is a binary model's: read as 1-D scores by the
    caller, see `binary_columns`.)"""
    width = len(rows[0][1])
    cells = list(itertools.chain.from_iterable(row for _, row in rows))
    labels = None
    if label_column is not None:
        labels = cells[label_column::width]
        del cells[label_column::width]
        width -= 1
    values = None
    # (a wrong reading fails here, at once)
    if None not in [number_or_none(cell, decimal_comma) for cell in cells[:width]]:
        values = floats_or_none(cells, decimal_comma)
    if values is None:
        for index, (number, _) in enumerate(rows):
            bad = next((cell for cell in cells[index * width:(index + 1) * width]
                        if number_or_none(cell, decimal_comma) is None), None)
            if bad is not None:
                raise _NotRead(number, f"Expected the scores on line {number} of {path} to be numbers, got "
                                       f"{bad[:30]!r}.")
        raise AssertionError("a cell that is no number is in some line")  # pragma: no cover
    return values.reshape(len(rows), width), labels


def _check_label_names(path: Path, rows: list[tuple[int, list[str]]], column: int, labels: np.ndarray,
                       decimal_comma: bool) -> None:
    """Without a header no names map class names to columns: a label column holding one is no reading (rule 2)."""
    if labels.dtype.kind != "U":
        return
    for number, cells in rows:
        cell = cells[column]
        if cell and cell.lower() not in _BOOLEANS and number_or_none(cell, decimal_comma) is None:
            raise _NotRead(number, f"Expected the label on line {number} of {path} to be a class index, got "
                                   f"{cell[:30]!r}: class names need a header line naming the classes.")


def _labels_array(labels: list[str], decimal_comma: bool = False) -> np.ndarray:
    """Integer labels when every cell is an integer, numbers when every cell is one (refused later as non-integer),
    booleans as pandas writes them (True/False: classes 1/0), else the strings (mapped through class names later)."""
    if labels and all(label.lower() in _BOOLEANS for label in labels):
        return np.array([label.lower() == "true" for label in labels])
    integers = integers_or_none(labels, decimal_comma)
    if integers is not None:
        return np.array(integers, dtype=np.int64)
    numbers = floats_or_none(labels, decimal_comma)
    return numbers if numbers is not None else np.array(labels)
