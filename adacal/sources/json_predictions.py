"""Predictions written as JSON: a .json object of arrays or array of per-sample objects, and .jsonl (one object per
sample), each also gzipped; read with `parse_json`'s limits, duplicate keys refused (docs/inputs.md, "Text files")."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.sources.documents import parse_json
from adacal.sources.text_tables import read_text


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


def read_jsonl(path: str | os.PathLike, pipeline: list[Any] | None = None) -> dict[str, list[Any]]:
    """The columns of a JSON Lines file: one object per line (one sample: e.g. {"probs": [...], "label": 3}, as LLM
    evaluation harnesses write them), every line with the same keys; blank lines are skipped. `pipeline`: a list that
    receives Hugging Face pipeline outputs (`adacal.sources.pipeline_outputs.pipeline_items`) when the lines hold
    them; the columns are then {}."""
    path = Path(path)
    text = read_text(path, "a predictions file (.jsonl)")
    # Lines end at "\n" only (the JSON Lines format; "\r\n" leaves a "\r" that JSON reads as white space): not
    # `str.splitlines`, which also breaks at U+2028, U+0085, form feeds, ... that `json.dumps(ensure_ascii=False)`
    # leaves raw inside strings (a prompt's text beside the scores).
    records = ((f"line {number}", parse_json(line, label=f"line {number} of {path}", non_finite=True))
               for number, line in enumerate(text.split("\n"), start=1) if line.strip())
    if pipeline is not None and _pipeline(path, records := list(records), pipeline):
        return {}
    columns = _columns_of_records(path, records)
    if not columns:
        raise InputError(f"Expected {path} to hold one JSON object per line, but it is empty.")
    return columns


def read_json_predictions(path: str | os.PathLike, pipeline: list[Any] | None = None) -> dict[str, list[Any]]:
    """The columns of a .json predictions file: an object of arrays ({"logits": [[...], ...], "labels": [...]},
    keys whose values are not arrays ignored) or an array of per-sample objects ([{"probs": [...], "label": 3}, ...]).
    An adacal report is refused: it holds metrics, not predictions. `pipeline`: as for `read_jsonl`."""
    path = Path(path)
    document = parse_json(read_text(path, "a predictions file (.json)"), label=str(path), non_finite=True)
    if pipeline is not None and isinstance(document, list) and _pipeline(
            path, [(f"item {index}", item) for index, item in enumerate(document)], pipeline):
        return {}
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
    if pipeline is not None and columns and _pipeline_object(path, columns, pipeline):
        return {}
    if not columns:
        raise InputError(f"Expected {path} to hold arrays (e.g. \"logits\" and \"labels\"), but none of its keys "
                         f"({', '.join(map(str, document)) or 'none'}) holds one.")
    return columns


def _pipeline(path: Path, items: list[tuple[str, Any]], found: list[Any]) -> bool:
    """Whether `items` are Hugging Face pipeline outputs (#40), appended to `found` when they are."""
    from adacal.sources.pipeline_outputs import pipeline_items

    read = pipeline_items(path, items)
    if read is not None:
        found.append(read)
    return read is not None


def _pipeline_object(path: Path, columns: dict[str, list[Any]], found: list[Any]) -> bool:
    """Whether an object of arrays holds Hugging Face pipeline outputs under one key ({"predictions": [...],
    "label": [...]}), appended to `found` as records (their key, one output per input, the other arrays)."""
    from adacal.sources.pipeline_outputs import pipeline_object

    read = pipeline_object(path, columns)
    if read is not None:
        found.append(read)
    return read is not None


def json_column(path: Path, key: str, values: list[Any]) -> np.ndarray:
    """One key of every record as an array: numbers (N,), strings (N,), or equal-length lists of numbers or of
    strings (N, K)."""
    if all(isinstance(v, str) for v in values):
        return np.array(values)
    scalar = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    rows = all(isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
               for v in values)
    if values and all(isinstance(v, list) and v and all(isinstance(x, str) for x in v) for v in values) \
            and len({len(v) for v in values}) == 1:
        return np.array(values)  # (names per sample: the choices a record names, its `classes`)
    if rows and len({len(v) for v in values}) == 1 or scalar:
        array = np.array(values)
        return array if array.dtype.kind in "if" else array.astype(np.float64)
    if all(isinstance(v, bool) for v in values):
        return np.array(values, dtype=bool)
    raise InputError(f"Expected '{key}' in {path} to hold a number, a string or a list of numbers (one length for "
                     "every sample) per sample, but it does not.")
