"""Predictions written as text: CSV / TSV tables, np.savetxt tables, JSON and JSON Lines, each also gzipped.

Every reader here turns one file into plain columns (numpy arrays or lists of JSON values) that
`adacal.sources.formats` interprets: which key holds scores and labels, binary scores, class names. Text is read whole
(within the memory budget: a parsing cost per byte of text is checked first; a gzipped file is decompressed in chunks
and refused once past it) and decoded as UTF-8 (a byte-order mark is dropped).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.sources.documents import parse_json
from adacal.sources.files import check_allocation, human_bytes, memory_budget, open_regular

# A label column's header: the label keys of every format (Hugging Face's label_ids, scikit-learn's y_true, ...).
CSV_LABEL_NAMES = ("label", "labels", "target", "targets", "y", "class", "label_ids", "y_true", "true_labels",
                   "true_label")
# A first column with one of these headers (lower-cased) and integer values, or names that are no numbers (a string
# index: sample ids), is a row index, not a class: pandas' `DataFrame.to_csv()` writes its index first with an empty
# header ("Unnamed: 0" once read back by pandas), or the index's name.
CSV_INDEX_NAMES = ("", "unnamed: 0", "index", "id")
# A column with one of these headers and integer values holds the predicted class, beside the per-class scores: it
# is no class of its own (the scores give the prediction) and is dropped.
CSV_PREDICTION_NAMES = ("pred", "preds", "prediction", "predictions", "predicted", "y_pred", "pred_label",
                        "predicted_label", "predicted_class", "argmax")

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


# ------------------------------------------------------------------------------------ text, JSON, JSON Lines, txt


def _read_text(path: Path, what: str, bytes_per_byte: int = 40) -> str:
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


def _columns_of_records(path: Path, records: Iterable[tuple[str, Any]]) -> dict[str, list[Any]]:
    """Columns from (where, record) pairs — one JSON object per sample, every one with the keys of the first."""
    columns: dict[str, list[Any]] = {}
    first = ""
    for where, record in records:
        if not isinstance(record, dict):
            raise InputError(f"Expected {where} of {path} to be a JSON object (one sample), got "
                             f"{type(record).__name__}.")
        if not columns:
            first = where
            columns = {str(key): [] for key in record}
            if not columns:
                raise InputError(f"Expected {where} of {path} to hold keys (scores, label), got {{}}.")
        if set(record) != set(columns):
            raise InputError(f"Expected {where} of {path} to have the keys of {first} "
                             f"({', '.join(columns)}), got {', '.join(map(str, record)) or 'none'}.")
        for key, value in record.items():
            columns[key].append(value)
    return columns


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
        raise InputError(f"Expected {path} to be a readable gzip file, but it is not ({exc.__class__.__name__}).") from None
    return b"".join(chunks)


def read_jsonl(path: str | os.PathLike) -> dict[str, list[Any]]:
    """The columns of a JSON Lines file: one object per line (one sample: e.g. {"probs": [...], "label": 3}, as LLM
    evaluation harnesses write them), every line with the same keys; blank lines are skipped."""
    path = Path(path)
    text = _read_text(path, "a predictions file (.jsonl)")
    # Lines end at "\n" only (the JSON Lines format; "\r\n" leaves a "\r" that JSON reads as white space): not
    # `str.splitlines`, which also breaks at U+2028, U+0085, form feeds, ... that `json.dumps(ensure_ascii=False)`
    # leaves raw inside strings (a prompt's text beside the scores).
    records = ((f"line {number}", parse_json(line, label=f"line {number} of {path}", non_finite=True))
               for number, line in enumerate(text.split("\n"), start=1) if line.strip())
    columns = _columns_of_records(path, records)
    if not columns:
        raise InputError(f"Expected {path} to hold one JSON object per line, but it is empty.")
    return columns


def read_text_table(path: str | os.PathLike) -> np.ndarray:
    """The numbers of a text table as np.savetxt writes it: one row per line, separated by whitespace (or commas),
    `#` comments and blank lines skipped, a first line of names (np.savetxt's header without `#`, R's write.table)
    skipped too; (N, K) float64, or (N,) for one column."""
    path = Path(path)
    text = _read_text(path, "a predictions file (.txt)")
    rows: list[list[float]] = []
    first = 0
    header_seen = ""
    for number, line in enumerate(text.splitlines(), start=1):
        cells = line.split("#", 1)[0].replace(",", " ").split()
        if not cells:
            continue
        try:
            row = [float(cell) for cell in cells]
        except ValueError:
            if not rows and not header_seen and not any(_is_number(cell) for cell in cells):
                header_seen = line.strip()  # column names
                continue
            bad = next(cell for cell in cells if not _is_number(cell))
            raise InputError(f"Expected line {number} of {path} to hold numbers, got {bad[:30]!r}.") from None
        if rows and len(row) != len(rows[0]):
            raise InputError(f"Expected line {number} of {path} to have {len(rows[0])} numbers, like line {first}, "
                             f"got {len(row)}.")
        first = first or number
        rows.append(row)
    if not rows:
        holds = f"holds only a line of names ({header_seen[:40]!r})" if header_seen else "is empty"
        raise InputError(f"Expected {path} to hold a table of numbers, but it {holds}.")
    table = np.array(rows, dtype=np.float64)
    return table[:, 0] if table.shape[1] == 1 else table


def read_json_predictions(path: str | os.PathLike) -> dict[str, list[Any]]:
    """The columns of a .json predictions file: an object of arrays ({"logits": [[...], ...], "labels": [...]},
    keys whose values are not arrays ignored) or an array of per-sample objects ([{"probs": [...], "label": 3}, ...]).
    An adacal report is refused: it holds metrics, not predictions."""
    path = Path(path)
    document = parse_json(_read_text(path, "a predictions file (.json)"), label=str(path), non_finite=True)
    if isinstance(document, list):
        columns = _columns_of_records(path, ((f"item {index}", item) for index, item in enumerate(document)))
        if not columns:
            raise InputError(f"Expected {path} to hold predictions, but it is an empty array.")
        return columns
    if not isinstance(document, dict):
        raise InputError(f"Expected {path} to hold an object of arrays or an array of samples, got "
                         f"{type(document).__name__}.")
    if "schema_version" in document and "kind" in document:
        kind = document["kind"]
        if kind == "train-config":  # a run's config.json: the run folder itself is what evaluate reads
            raise InputError(f"Expected {path} to hold predictions, but it is a run's config.json (options, not "
                             f"scores); give the run folder {path.parent} instead.")
        hint = "; `plot reliability` draws an evaluate report" if kind == "evaluate" else ""
        raise InputError(f"Expected {path} to hold predictions, but it is an adacal {kind!r} report (results, not "
                         f"per-sample scores){hint}.")
    columns = {str(key): value for key, value in document.items() if isinstance(value, list)}
    if not columns:
        raise InputError(f"Expected {path} to hold arrays (e.g. \"logits\" and \"labels\"), but none of its keys "
                         f"({', '.join(map(str, document)) or 'none'}) holds one.")
    return columns


def json_column(path: Path, key: str, values: list[Any]) -> np.ndarray:
    """One key of every record as an array: numbers (N,), strings (N,), or equal-length lists of numbers (N, K)."""
    if all(isinstance(v, str) for v in values):
        return np.array(values)
    scalar = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    rows = all(isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
               for v in values)
    if rows and len({len(v) for v in values}) == 1 or scalar:
        array = np.array(values)
        return array if array.dtype.kind in "if" else array.astype(np.float64)
    if all(isinstance(v, bool) for v in values):
        return np.array(values, dtype=bool)
    raise InputError(f"Expected '{key}' in {path} to hold a number, a string or a list of numbers (one length for "
                     "every sample) per sample, but it does not.")


# ---------------------------------------------------------------------------------------------------------- csv


def _parse_number(text: str, decimal_comma: bool = False) -> float:
    return float(text.replace(",", ".") if decimal_comma else text)


def _is_number(text: str, decimal_comma: bool = False) -> bool:
    try:
        _parse_number(text, decimal_comma)
    except ValueError:
        return False
    return True


def read_csv_with_notes(path: str | os.PathLike, *, labels_key: str | None = None, labels_only: bool = False,
                        scores_only: bool = False, labels_optional: bool = False
                        ) -> tuple[dict[str, np.ndarray], list[str]]:
    """The columns of a CSV / TSV table of scores and labels ("scores" (N, K), "labels", and "classes" from a
    header), and the sentences saying what was assumed (a row-index column dropped, decimal commas). With
    `scores_only` (the labels come from another file), a table with no column named as labels is all scores; with
    `labels_optional` (OOD sets), so is one whose last column is not class indices (not all integers)."""
    path = Path(path)
    notes: list[str] = []
    # Parsed row by row into floats: about 16 bytes of memory per byte of text at worst.
    text = _read_text(path, "a predictions file (.csv)", bytes_per_byte=16)
    try:
        sample = text[:4096]
        dialect = csv.Sniffer().sniff(sample, delimiters=",;\t") if sample.strip() else csv.excel
    except csv.Error:
        dialect = csv.excel
    if getattr(dialect, "delimiter", ",") == ",":
        # "0,25;0,75;1": decimal commas between semicolons (or tabs), which the sniffer can take for commas.
        dialect = next((d for d in (_Semicolons, csv.excel_tab) if _on_every_line(sample, d.delimiter)), dialect)
    try:
        rows = [(number, row) for number, row in enumerate(csv.reader(io.StringIO(text), dialect), start=1)
                if row and any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise InputError(f"Expected {path} to be a CSV table, but it could not be parsed ({exc}).") from None
    if not rows:
        raise InputError(f"Expected {path} to hold a table of scores and labels, but it is empty.")
    header: list[str] | None = None
    first = [cell.strip() for cell in rows[0][1]]
    width = len(first)
    if labels_only and width == 1:
        has_header = not _is_number(first[0]) and first[0].lower() in CSV_LABEL_NAMES + ((labels_key or "").lower(),)
        cells = [row[0].strip() for _, row in (rows[1:] if has_header else rows)]
        if any(len(row) != 1 for _, row in rows):
            bad = next(number for number, row in rows if len(row) != 1)
            raise InputError(f"Expected line {bad} of {path} to have 1 column, like the first, but it does not.")
        return {"labels": _labels_array(cells)}, notes
    # With ';' or tab between cells, a comma inside one is a decimal comma (what spreadsheets write in many locales).
    decimal_comma = getattr(dialect, "delimiter", ",") != ","
    named_label = any(cell.lower() in CSV_LABEL_NAMES for cell in first) or (labels_key is not None and labels_key in first)
    unnamed = not named_label and labels_key is None
    all_scores = unnamed and (scores_only or (labels_optional and not all(
        is_integer_text(row[-1].strip()) for _, row in rows[1:] if row)))
    if named_label or not all(_is_number(cell, decimal_comma) for cell in (first if all_scores else first[:-1])):
        header, rows = first, rows[1:]
    elif width >= 2 and len(rows) > 1 and first == [str(i) for i in range(width)]:
        # pandas names unnamed columns 0, 1, 2, ... and writes them as a header (`pd.DataFrame(array).to_csv()`);
        # no sample holds exactly those scores with that label (the label would be K, out of range).
        header, rows = first, rows[1:]
        notes.append(f"{path.name}: first line {','.join(first[:4])}{',...' if width > 4 else ''} read as pandas' "
                     "column numbers (a header), not as a sample")
    index_cells = [row[0].strip() for _, row in rows if len(row) == width]
    if (header is not None and width > 2 and header[0].lower() in CSV_INDEX_NAMES and rows
            and header[0] != labels_key and len(index_cells) == len(rows)
            and (all(is_integer_text(cell) for cell in index_cells)
                 or all(cell and not _is_number(cell, decimal_comma) for cell in index_cells))):
        # Integers as pandas numbers rows, or names (a string index: sample ids, file names), which no score is.
        kind = "integers" if is_integer_text(index_cells[0]) else "names"
        notes.append(f"{path.name}: first column {header[0]!r} read as a row index and ignored" if header[0] else
                     f"{path.name}: first column (no name, {kind}: a row index as pandas writes it) ignored")
        header, width = header[1:], width - 1
        rows = [(number, row[1:]) for number, row in rows]
    elif (header is None and width > 2 and len(rows) >= 3 and len(index_cells) == len(rows)
            and all(is_integer_text(cell) and float(cell) == i for i, cell in enumerate(index_cells))):
        # `to_csv(header=False)` keeps pandas' row numbers 0, 1, 2, ...: a column of scores never counts the rows.
        notes.append(f"{path.name}: first column (0, 1, 2, ...: a row index as pandas writes it) ignored")
        width -= 1
        rows = [(number, row[1:]) for number, row in rows]
    predicted = [i for i, name in enumerate(header or []) if name.lower() in CSV_PREDICTION_NAMES]
    if (predicted and width > 3 and rows
            and all(len(row) == width and is_integer_text(row[predicted[0]].strip()) for _, row in rows)):
        column = predicted[0]
        notes.append(f"{path.name}: column {header[column]!r} (predicted classes, integers) ignored: the class scores "
                     "give the prediction")
        header, width = header[:column] + header[column + 1:], width - 1
        rows = [(number, row[:column] + row[column + 1:]) for number, row in rows]
    if width < 2 and not all_scores:
        raise InputError(f"Expected {path} to have a column per class and a label column, got {width} column(s).")
    if header is not None and len(set(header)) != len(header):
        raise InputError(f"Expected the column names in {path} to differ, but some repeat.")
    if all_scores:
        label_column = None
    elif labels_key is not None:
        if header is None or labels_key not in header:
            names = ", ".join(header) if header else "no header"
            raise InputError(f"Expected a column named '{labels_key}' (--labels-key) in {path}; it has: {names}.")
        label_column = header.index(labels_key)
    else:
        named = [i for i, name in enumerate(header or []) if name.lower() in CSV_LABEL_NAMES]
        label_column = named[0] if named else width - 1
    if not rows:
        raise InputError(f"Expected {path} to hold at least one row of scores, but it has only a header.")
    scores = np.empty((len(rows), width - (label_column is not None)), dtype=np.float64)
    labels: list[str] = []
    for index, (number, row) in enumerate(rows):
        if len(row) != width:
            raise InputError(f"Expected line {number} of {path} to have {width} columns, got {len(row)}.")
        cells = [cell.strip() for cell in row]
        if label_column is not None:
            labels.append(cells.pop(label_column))
            if not labels[-1]:
                raise InputError(f"Expected a label on line {number} of {path}, got an empty cell.")
        try:
            scores[index] = [_parse_number(cell, decimal_comma) for cell in cells]
        except ValueError:
            bad = next(cell for cell in cells if not _is_number(cell, decimal_comma))
            raise InputError(f"Expected the scores on line {number} of {path} to be numbers, got {bad[:30]!r}.") from None
    if decimal_comma and any("," in cell for _, row in rows[:1000] for cell in row):
        notes.append(f"{path.name}: commas inside cells read as decimal commas")
    # One score column is a binary model's: 1-D scores, read as such (see `binary_columns`).
    table: dict[str, np.ndarray] = {"scores": scores[:, 0] if scores.shape[1] == 1 else scores}
    if label_column is not None:
        table["labels"] = _labels_array(labels)
    if header is not None:
        table["classes"] = np.array([name for i, name in enumerate(header) if i != label_column])
    return table, notes


class _Semicolons(csv.excel):
    delimiter = ";"


def _on_every_line(sample: str, separator: str) -> bool:
    """Every full line of `sample` holds `separator` the same non-zero number of times."""
    lines = [line for line in sample.splitlines()[:-1] if line.strip()] or sample.splitlines()
    counts = {line.count(separator) for line in lines if line.strip()}
    return len(counts) == 1 and counts.pop() > 0


def _labels_array(labels: list[str]) -> np.ndarray:
    """Integer labels when every cell is an integer, numbers when every cell is one (refused later as non-integer),
    booleans as pandas writes them (True/False: classes 1/0), else the strings (mapped through class names later)."""
    if labels and all(label.lower() in ("true", "false") for label in labels):
        return np.array([label.lower() == "true" for label in labels])
    if all(is_integer_text(label) for label in labels):
        return np.array([int(float(label)) for label in labels], dtype=np.int64)
    if all(_is_number(label) for label in labels):
        return np.array([float(label) for label in labels])
    return np.array(labels)


def is_integer_text(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return value.is_integer() and abs(value) < 2**62
