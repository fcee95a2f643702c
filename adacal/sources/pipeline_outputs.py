"""Hugging Face `pipeline` outputs as named arrays (docs/inputs.md §8): `pipeline(texts, top_k=None)` writes one
list of `{"label": name, "score": p}` per input, sorted by score (not in column order); the default call (and
`top_k=1`) one `{"label", "score"}` per input, the top class only. Read from a .json list (or .jsonl, one input a
line), bare or under a key of per-sample records (`{"label": "POSITIVE", "predictions": [...]}`, a `datasets`
row with an integer `label`).

Columns are put in one order by name: `--classes`, else the id2label of a model folder the file sits in or beside,
else the names `LABEL_0` ... `LABEL_<K-1>` (transformers' default id2label) by their number, else the names sorted
(then integer labels, which are positions in the model's order, are refused: `adacal.interpretation.class_names`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.sources.class_names import model_folder_names

SCORES = "probs"  # the key the scores (N, K) are read under: pipeline scores are probabilities (§2 rule 2)
CLASSES = "classes"
CONFIDENCE = "confidence"  # the top-1 form: the top class's score ...
PREDICTED = "predicted_label"  # ... and its name
_DEFAULT_NAME = re.compile(r"(?i)^label_(0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class PipelineReading:
    """How a file of pipeline outputs was read: the top class only (`top1`) or every class; the class names in
    column order (None: the top-1 form without --classes or id2label) and whether that order is the model's
    (`positions_known`: from --classes, id2label or LABEL_i names; sorted names are not)."""

    key: str | None  # the records' key holding the outputs; None for bare lists
    top1: bool
    classes: tuple[str, ...] | None
    positions_known: bool
    order: str  # where the column order came from, for the notes


def _is_score(item: Any) -> bool:
    return (isinstance(item, dict) and set(item) == {"label", "score"} and isinstance(item["label"], str)
            and isinstance(item["score"], (int, float)) and not isinstance(item["score"], bool))


def _is_output(value: Any) -> bool:
    """One input's pipeline output: a non-empty list of {label, score} dicts, or one such dict (the top-1 form)."""
    return _is_score(value) or isinstance(value, list) and bool(value) and all(map(_is_score, value))


def pipeline_items(path: Path, items: list[tuple[str, Any]]) -> tuple[str | None, list[Any], dict[str, list[Any]]] \
        | None:
    """The pipeline outputs in `items` ((where, value) per input: a .json list's items, a .jsonl's lines): the key
    holding them (None: bare), one output per input, and the records' other columns; None when they are no pipeline
    outputs. Bare inputs must all be outputs; records must all hold one under the same key."""
    if not items:
        return None
    where, first = items[0]
    if _is_output(first):
        for where, value in items:
            if not _is_output(value):
                raise InputError(f"Expected {where} of {path} to be a pipeline output like the first ({{label, "
                                 "score}} per class), but it is not.")
        return None, [value for _, value in items], {}
    if not isinstance(first, dict):
        return None
    keys = [key for key, value in first.items() if _is_output(value)]
    if not keys:
        return None
    if len(keys) > 1:
        raise InputError(f"Expected one key of pipeline outputs in {path}, got {', '.join(keys[:4])}: keep one.")
    key = keys[0]
    outputs, columns = [], {name: [] for name in first if name != key}
    for where, record in items:
        if not isinstance(record, dict) or set(record) != set(first):
            raise InputError(f"Expected {where} of {path} to have the keys of the first record "
                             f"({', '.join(map(str, first))}), but it does not.")
        if not _is_output(record[key]):
            raise InputError(f"Expected '{key}' in {where} of {path} to be a pipeline output ({{label, score}} per "
                             "class), but it is not.")
        outputs.append(record[key])
        for name in columns:
            columns[name].append(record[name])
    return key, outputs, columns


def pipeline_object(path: Path, columns: dict[str, list[Any]]) -> tuple[str, list[Any], dict[str, list[Any]]] \
        | None:
    """The pipeline outputs of a .json object of arrays (`{"predictions": classifier(texts, top_k=None), "label":
    dataset["label"]}`): the key holding them, one output per input, and the other arrays; None when no array holds
    only pipeline outputs."""
    keys = [key for key, values in columns.items() if values and _is_output(values[0])]
    if not keys:
        return None
    if len(keys) > 1:
        raise InputError(f"Expected one key of pipeline outputs in {path}, got {', '.join(keys[:4])}: keep one.")
    key = keys[0]
    bad = next((index for index, value in enumerate(columns[key]) if not _is_output(value)), None)
    if bad is not None:
        raise InputError(f"Expected item {bad} of '{key}' in {path} to be a pipeline output like the first ({{label, "
                         "score}} per class), but it is not.")
    return key, columns[key], {name: values for name, values in columns.items() if name != key}


def _order(path: Path, seen: set[str], classes: tuple[str, ...] | None, top1: bool
           ) -> tuple[tuple[str, ...] | None, bool, str]:
    """The class names in column order, whether it is the model's, and where it came from (module docstring)."""
    if classes is not None:
        source = "--classes"
    else:
        found = model_folder_names(path)
        classes, source = (None, None) if found is None else (found[0], f"{found[1]} (id2label)")
    if classes is not None:
        unknown = sorted(seen - set(classes))
        if unknown:
            raise InputError(f"Expected every label in {path.name} to be one of the classes of {source} "
                             f"({', '.join(classes[:8])}{', ...' if len(classes) > 8 else ''}); {unknown[0][:40]!r} "
                             "is not: pass --classes with the model's names.")
        if not top1 and set(classes) != seen:
            missing = sorted(set(classes) - seen)
            raise InputError(f"Expected {path.name} to score the {len(classes)} classes of {source}, but it has "
                             f"{len(seen)} ({missing[0][:40]!r} is missing): pass --classes with the model's names.")
        return tuple(classes), True, source
    if top1:
        return None, False, "no class names"
    numbered = [_DEFAULT_NAME.match(name) for name in seen]
    if all(numbered) and sorted(int(match.group(1)) for match in numbered) == list(range(len(seen))):
        names = sorted(seen, key=lambda name: int(_DEFAULT_NAME.match(name).group(1)))
        return tuple(names), True, "the names LABEL_0 ... by number (transformers' default id2label)"
    return tuple(sorted(seen)), False, "the names sorted (no --classes, no config.json id2label beside)"


def pipeline_columns(path: Path, key: str | None, outputs: list[Any], columns: dict[str, list[Any]],
                     classes: tuple[str, ...] | None) -> tuple[dict[str, Any], PipelineReading, tuple[str, ...]]:
    """The named arrays of pipeline outputs: `probs` (N, K) and `classes` (K,) in one column order (every input
    must score the same classes), or, for the top-1 form, `confidence` and `predicted_label` (N,); beside them the
    records' other columns (their labels). With the reading and its notes."""
    top1 = all(_is_score(output) or len(output) == 1 for output in outputs)
    rows = [[output] if _is_score(output) else output for output in outputs]
    where = f"'{key}' in {path.name}" if key else path.name
    for reserved in (SCORES, CLASSES, CONFIDENCE, PREDICTED):
        if reserved in columns:
            raise InputError(f"Expected {path.name} to hold either pipeline outputs ('{key}') or '{reserved}', not "
                             "both: keep one.")
    if top1:
        names = [row[0]["label"].strip() for row in rows]
        order, known, source = _order(path, set(names), classes, True)
        arrays = {CONFIDENCE: np.array([float(row[0]["score"]) for row in rows]), PREDICTED: np.array(names)}
        if order is not None:
            arrays[CLASSES] = np.array(order)
        note = (f"{where}: Hugging Face pipeline outputs of the top class only ({{label, score}} per input, the "
                "default top_k=1): read as top-label confidences")
        return ({**arrays, **columns}, PipelineReading(key, True, order, known, source), (note,))
    seen: set[str] | None = None
    for index, row in enumerate(rows):
        names = [item["label"].strip() for item in row]
        if len(set(names)) != len(names):
            twice = next(name for name in names if names.count(name) > 1)
            raise InputError(f"Expected input {index} of {where} to score each class once, but {twice[:40]!r} is "
                             "given twice.")
        if seen is None:
            seen = set(names)
        elif set(names) != seen:
            odd = sorted(set(names) ^ seen)[0]
            raise InputError(f"Expected every input of {where} to score the same classes (run the pipeline with "
                             f"top_k=None), but input {index} differs from input 0 in {odd[:40]!r}.")
    order, known, source = _order(path, seen, classes, False)
    column = {name: j for j, name in enumerate(order)}
    scores = np.empty((len(rows), len(order)), dtype=np.float64)
    for index, row in enumerate(rows):
        for item in row:
            scores[index, column[item["label"].strip()]] = float(item["score"])
    note = (f"{where}: Hugging Face pipeline outputs ({{label, score}} per class, sorted by score), columns put in "
            f"the order of {source}: {', '.join(order[:8])}{', ...' if len(order) > 8 else ''}")
    return ({SCORES: scores, CLASSES: np.array(order), **columns}, PipelineReading(key, False, order, known, source),
            (note,))


__all__ = ["PipelineReading", "pipeline_columns", "pipeline_items", "pipeline_object"]
