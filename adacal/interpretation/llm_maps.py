"""What option log-probability records mean (`adacal.sources.logprob_maps` reads them), and verbalised confidences
("I am 80% sure") read from text where --verbalized-confidence KEY says so; the rules are docs/inputs.md's ("LLM
evaluation outputs"); and `load_questions`, the entry that reads any LLM evaluation output as `Questions`.

Options of a question: --options A,B,C,D when given; else the letters A, B, ... of the record's option texts
(`options` / `choices`), a token naming an option by its letter or its text; else, when every token of the map is a
letter, the letters from A to the last one present. Tokens are named by `normal_option` (" A", "A.", "(a)" -> "A");
spellings of one option are summed (their probabilities add). An option missing from a map (an API gives the top-n
tokens only) is refused, naming --missing-options zero, which reads it as probability 0.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.interpretation.confidence import TOP_LABEL, TopLabelPredictions, is_correct_name
from adacal.interpretation.llm import (
    LETTERS, POSITIVE_TOLERANCE, Questions, harness_input, harness_questions, normal_option, pad, resolve_answers,
)
from adacal.interpretation.record import Interpretation
from adacal.interpretation.split import WHOLE_FILE
from adacal.sources.formats import ReadOptions
from adacal.sources.logprob_maps import (
    ANSWER_KEYS, GROUP_KEYS, LIST_KEYS, MAP_KEYS, LogprobRecord, is_logprob_record, read_logprob_records, read_records,
)
from adacal.sources.text_tables import format_suffix, read_text

_JSON_SUFFIXES = (".json", ".jsonl")


def _options_of(record: LogprobRecord, named: tuple[str, ...] | None) -> tuple[list[str], list[str] | None]:
    """The option names of a token-map record and the texts a token may also name them by."""
    if named is not None:
        return list(named), record.texts
    if record.texts is not None:
        return list(LETTERS[:len(record.texts)]), record.texts
    names = {normal_option(token) for token, _ in record.tokens or ()}
    if names and all(len(name) == 1 and name in LETTERS for name in names):
        return list(LETTERS[:max(LETTERS.index(name) for name in names) + 1]), None
    others = sorted(name for name in names if not (len(name) == 1 and name in LETTERS))[:3]
    raise InputError(f"Expected the options of {record.where}: its log-probabilities hold tokens that are not option "
                     f"letters ({', '.join(map(repr, others))}): pass --options A,B,C,D, or give the options' texts "
                     "under 'options' or 'choices'.")


def _logaddexp(first: float, second: float) -> float:
    """log(exp(first) + exp(second)) for floats, -inf allowed (math, not a numpy call per token)."""
    if first == -math.inf:
        return second
    high, low = (first, second) if first >= second else (second, first)
    return high + math.log1p(math.exp(low - high))


def _option_logprobs(record: LogprobRecord, names: list[str], texts: list[str] | None) -> tuple[list[float], int]:
    """Each option's log-probability (-inf when no token names it) and the number of tokens naming none."""
    values = [-np.inf] * len(names)
    wanted = {name.casefold(): index for index, name in enumerate(names)}
    by_text = {text.strip().casefold(): index for index, text in enumerate(texts or ())}
    ignored = 0
    for token, logprob in record.tokens or ():
        name = normal_option(token)
        index = wanted.get(name.casefold(), by_text.get(token.strip().casefold()))
        if index is None:
            ignored += 1
            continue
        values[index] = _logaddexp(values[index], logprob)
    return values, ignored


def _may_hold_logprobs(path: Path) -> bool:
    """Whether the file's first record (a .jsonl's first line, a .json's text) names a log-probability key: a
    cheap test before any file is parsed twice."""
    keys = (*MAP_KEYS, *LIST_KEYS)
    if format_suffix(path) == ".jsonl" and not path.name.lower().endswith(".gz"):
        try:
            with path.open("r", encoding="utf-8") as handle:
                first = next((line for line in handle if line.strip()), "")
        except (OSError, UnicodeDecodeError):
            return False
        return any(f'"{key}"' in first for key in keys)
    text = read_text(path, "a predictions file")
    return any(f'"{key}"' in text for key in keys)


def logprob_questions(path: Path, options: ReadOptions) -> Questions | None:
    """The questions of a .json / .jsonl file of option log-probability records, or None when its first record is
    not one (then it is read as other predictions)."""
    if format_suffix(path) not in _JSON_SUFFIXES or not path.is_file():
        return None
    if not _may_hold_logprobs(path):
        return None
    records = read_records(path)
    if not records or not is_logprob_record(records[0][1]):
        return None
    read = read_logprob_records(records)
    named = None if options.answer_options is None else tuple(
        normal_option(name) for name in options.answer_options.split(",") if name.strip())
    rows, counts, texts, wheres, answers, missing, ignored = [], [], [], [], [], [], 0
    for record in read:
        if record.values is not None:
            if named is not None and len(named) != len(record.values):
                raise InputError(f"Expected {len(named)} log-probabilities in {record.where} for --options, got "
                                 f"{len(record.values)}.")
            row, option_texts = record.values, record.texts or (list(named) if named else None)
        else:
            names, option_texts = _options_of(record, named)
            row, dropped = _option_logprobs(record, names, option_texts)
            ignored += dropped
            absent = [name for name, value in zip(names, row) if value == -np.inf]
            if absent:
                missing.append((record.where, absent))
            option_texts = option_texts or names
        if any(value != value or value == math.inf for value in row) or max(row) == -math.inf:  # NaN, +inf
            raise InputError(f"Expected finite log-probabilities in {record.where}, got {row}.")
        if max(row) > POSITIVE_TOLERANCE:
            raise InputError(f"Expected log-probabilities (<= 0) in {record.where} ({record.source}), got "
                             f"{max(row):g}: for probabilities, write their logarithms.")
        rows.append(row)
        counts.append(len(row))
        texts.append(option_texts)
        wheres.append(record.where)
        answers.append(record.answer)
    notes = []
    if missing and options.missing_options != "zero":
        where, absent = missing[0]
        raise InputError(f"Expected every option's log-probability, but {len(missing)} of {len(read)} questions miss "
                         f"some (the first, {where}, misses {', '.join(absent)}): pass --missing-options zero to read "
                         "a missing option as probability 0.")
    if missing:
        notes.append(f"{len(missing)} questions miss some options' log-probabilities, read as probability 0 "
                     "(--missing-options zero)")
    if ignored:
        notes.append(f"{ignored} tokens that name no option ignored")
    key = next(key for key in ANSWER_KEYS if key in records[0][1])
    labels, rule = resolve_answers(answers, counts, texts, wheres, answer_is=options.answer_is, key=key)
    logliks, counts_array = pad(rows)
    groups = {name: np.array([record.strings[name] for record in read], dtype=str) for name in GROUP_KEYS
              if all(name in record.strings for record in read)}
    sources = sorted({record.source for record in read})
    return Questions(logliks, counts_array, labels, groups or None, tuple(notes), str(path), format_suffix(path)[1:],
                     ", ".join(sources), key, f"option log-probabilities ({', '.join(sources)}), gold from {rule}")


# ------------------------------------------------------------------------------------------------ verbalised


_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_LABELLED = re.compile(r"confiden(?:ce|t)\D{0,24}?(\d+(?:\.\d+)?|\.\d+)\s*(%?)", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)(?![\w.])")


def parse_verbalized(text: Any) -> float | None:
    """A confidence stated in words, in [0, 1], or None when the text states none (or several): a number after
    "confidence" / "confident", else the one percentage, else the one number; with '%' a percentage, without one a
    fraction in [0, 1] or a percentage in (1, 100].

    Example:
        >>> parse_verbalized("I am 80% sure"), parse_verbalized("Confidence: 0.8"), parse_verbalized("no idea")
        (0.8, 0.8, None)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        return None
    labelled = {(m.group(1), m.group(2)) for m in _LABELLED.finditer(text)}
    percents = {(m.group(1), "%") for m in _PERCENT.finditer(text)}
    numbers = {(m.group(1), "") for m in _NUMBER.finditer(text)}
    for found in (labelled, percents, numbers):
        if len(found) == 1:
            digits, percent = next(iter(found))
            value = float(digits)
            if percent:
                return value / 100.0 if value <= 100.0 else None
            return value if value <= 1.0 else value / 100.0 if value <= 100.0 else None
        if len(found) > 1:
            return None
    return None


def verbalized_top_label(path: Path, options: ReadOptions) -> TopLabelPredictions:
    """(confidence, correct) from a .json / .jsonl / .csv file whose `--verbalized-confidence KEY` holds text: each
    row's confidence parsed by `parse_verbalized`, its correctness from --labels-key or the one key named like
    correctness. Rows that state no confidence are refused by count, with examples."""
    from adacal.interpretation.confidence import named_table
    from adacal.metrics.confidences import check_correct
    from adacal.sources.formats import open_arrays

    key = options.verbalized_confidence
    arrays = named_table(path, options) if format_suffix(path) in (".csv", ".tsv") else open_arrays(path,
                                                                                                  options=options)
    if arrays is None:
        raise InputError(f"Expected {path.name} to be a table with the same number of cells on every line, for "
                         "--verbalized-confidence.")
    with arrays:
        if key not in arrays:
            raise InputError(f"Expected {path.name} to have the key --verbalized-confidence {key}; it has: "
                             f"{arrays.listing()}.")
        correct_keys = [options.labels_key] if options.labels_key else [
            name for name in arrays.keys() if is_correct_name(name)]
        if len(correct_keys) != 1 or correct_keys[0] not in arrays:
            raise InputError(f"Expected one key saying whether each answer was right (correct, is_correct, acc, ...) "
                             f"in {path.name} beside --verbalized-confidence {key}, found "
                             f"{', '.join(correct_keys) or 'none'}: pass --labels-key KEY.")
        texts = np.asarray(arrays[key], dtype=object).reshape(-1)
        correct = check_correct(arrays[correct_keys[0]], n=texts.shape[0], name=arrays.label(correct_keys[0]))
        groups = {}
        for name in GROUP_KEYS:
            values = np.asarray(arrays[name]) if name in arrays and name != key else None
            if values is not None and values.dtype.kind == "U" and values.shape == texts.shape:
                groups[name] = values.astype(str)
    parsed = [parse_verbalized(text) for text in texts]
    bad = [row for row, value in enumerate(parsed) if value is None]
    if bad:
        shown = "; ".join(f"row {row}: {str(texts[row])[:40]!r}" for row in bad[:3])
        raise InputError(f"Expected a stated confidence in every row of '{key}' in {path.name}, but {len(bad)} of "
                         f"{len(parsed)} state none or several ({shown}): fix or drop those rows.")
    confidences = np.array(parsed, dtype=np.float64)
    notes = (f"{path.name}: confidences parsed from the text of '{key}' (--verbalized-confidence)",)
    record = Interpretation(file=str(path), format=format_suffix(path)[1:], scores_key=key,
                            labels_key=correct_keys[0], labels_file=None, split=WHOLE_FILE, kind=TOP_LABEL,
                            kind_rule="--verbalized-confidence: the stated confidence of the answer and whether it "
                                      "was right", n=len(parsed), k=None, notes=notes)
    return TopLabelPredictions(confidences, correct, notes, record, groups=groups or None)


def load_questions(path: str | os.PathLike, options: ReadOptions) -> Questions | None:
    """The questions an LLM evaluation output holds — lm-evaluation-harness samples (a file, a folder or a glob of
    them) or option log-probability records (`adacal.interpretation.llm_maps`) — or None when `path` is neither."""
    files = harness_input(path)
    if options.more_files:
        more = [harness_input(extra) for extra in options.more_files]
        if files is None or any(found is None for found in more):
            shown = Path(path) if files is None else Path(options.more_files[[m is None for m in more].index(True)])
            raise InputError(f"Expected one predictions path, or several lm-evaluation-harness sample files read as "
                             f"one input, but {shown.name} is not a sample file.")
        files = sorted({*files, *(found for group in more for found in group)})
    if files is not None:
        return harness_questions(files, options)
    questions = logprob_questions(Path(path), options)
    if questions is None:
        for flag, used in (("--length-normalize", options.length_normalize), ("--task", options.task is not None),
                           ("--answer-is", options.answer_is is not None)):
            if used:
                raise InputError(f"Expected {flag} only with LLM evaluation outputs (lm-evaluation-harness samples, "
                                 f"option log-probabilities), not with {Path(path).name}.")
    return questions


__all__ = ["load_questions", "logprob_questions", "parse_verbalized", "verbalized_top_label"]
