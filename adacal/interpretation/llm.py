"""What LLM evaluation outputs mean, by the rules of docs/inputs.md ("LLM evaluation outputs"): per-question option
log-likelihoods (lm-evaluation-harness samples, `adacal.sources.harness_samples`; option log-probability maps,
`adacal.interpretation.llm_maps`) and the gold answer, read as `Questions`: class scores (N, K) logits when every
question has K options, else top-label confidences (the renormalised probability of the chosen option and whether it
was the gold one), with the task (and subject) of each question in `groups`.
`adacal.interpretation.llm_maps.load_questions` is the entry that tries every LLM layout (`load_predictions` and
`evaluate` call it).
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.interpretation.confidence import TOP_LABEL, TopLabelPredictions
from adacal.interpretation.record import Interpretation, Predictions
from adacal.interpretation.split import WHOLE_FILE
from adacal.sources.formats import ReadOptions
from adacal.sources.harness_samples import (
    harness_files, read_harness_samples, subject_of, task_from_results, task_of,
)

HARNESS_FORMAT = "lm-eval-harness"
ANSWER_READINGS = ("index", "letter", "text")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# A log-likelihood or log-probability is <= 0; a value above this is no log-probability (probabilities, scores).
POSITIVE_TOLERANCE = 1e-6
_INDEX = re.compile(r"^\s*\d+\s*$")


@dataclass(frozen=True)
class Questions:
    """Questions with their options' log-likelihoods, padded: `logliks` (N, K_max) float64 with -inf past a
    question's `counts[i]` options (and for options read as probability 0), `labels` (N,) the gold option's index,
    `groups` per-sample names by key ("task", "subject", ...), `notes` what reading assumed, and how: `file`,
    `format`, `scores_key`, `labels_key`, `rule`."""

    logliks: np.ndarray
    counts: np.ndarray
    labels: np.ndarray
    groups: dict[str, np.ndarray] | None
    notes: tuple[str, ...]
    file: str
    format: str
    scores_key: str | None
    labels_key: str | None
    rule: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def ragged(self) -> bool:
        """Whether the questions have different numbers of options (or options of probability 0)."""
        return bool((self.counts != self.counts[0]).any() or not np.isfinite(self.logliks).all())

    def probabilities(self) -> np.ndarray:
        """The options' renormalised probabilities (N, K_max): a softmax over each question's options (0 past them)."""
        shifted = self.logliks - self.logliks.max(axis=1, keepdims=True)
        weights = np.exp(shifted)
        return weights / weights.sum(axis=1, keepdims=True)

    def top_label(self) -> TopLabelPredictions:
        """Top-label confidences: the chosen (argmax, the first on ties, as the harness's np.argmax) option's
        renormalised probability, and whether it is the gold one."""
        probs = self.probabilities()
        chosen = probs.argmax(axis=1)
        confidences = probs[np.arange(len(self)), chosen]
        correct = chosen == self.labels
        notes = (*self.notes, "confidence = the renormalised probability (softmax over the question's options) of "
                              "the chosen option; correct = it is the gold one")
        record = Interpretation(file=self.file, format=self.format, scores_key=self.scores_key,
                                labels_key=self.labels_key, labels_file=None, split=WHOLE_FILE, kind=TOP_LABEL,
                                kind_rule=f"{self.rule}; {self._shape()}: measured on the top answer",
                                n=len(self), k=None, notes=notes)
        return TopLabelPredictions(confidences, correct, notes, record, groups=self.groups)

    def predictions(self) -> Predictions:
        """Class scores (N, K) as logits (the softmax over the options renormalises them), when every question has
        the same K options; questions of different numbers of options are refused (see `top_label`)."""
        if self.ragged:
            raise InputError(
                f"Expected every question in {Path(self.file).name} to have the same number of options for class "
                f"scores, but {self._shape()}: 'adacal evaluate' measures such questions on the top answer "
                "(top-label confidences); classwise metrics and calibrators need K scores per sample."
            )
        k = int(self.counts[0])
        record = Interpretation(file=self.file, format=self.format, scores_key=self.scores_key,
                                labels_key=self.labels_key, labels_file=None, split=WHOLE_FILE, kind="logits",
                                kind_rule=f"{self.rule}: log-likelihoods, read as logits (a softmax over the "
                                          "options renormalises them)", n=len(self), k=k, notes=self.notes)
        return Predictions(logits=self.logliks[:, :k].copy(), labels=self.labels.copy(), notes=self.notes,
                           interpretation=record, groups=self.groups)

    def _shape(self) -> str:
        sizes = sorted(set(self.counts.tolist()))
        text = (f"questions have {', '.join(map(str, sizes[:-1]))} or {sizes[-1]} options" if len(sizes) > 1
                else f"every question has {sizes[0]} options")
        missing = int((~np.isfinite(self.logliks)).sum() - (self.logliks.shape[1] * len(self) - self.counts.sum()))
        return text + (f", {missing} of them read as probability 0" if missing else "")


def pad(rows: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of different lengths as an (N, K_max) float64 array padded with -inf, and each row's length."""
    counts = np.array([len(row) for row in rows], dtype=np.int64)
    padded = np.full((len(rows), int(counts.max())), -np.inf)
    for index, row in enumerate(rows):
        padded[index, :len(row)] = row
    return padded, counts


# ------------------------------------------------------------------------------------------------ gold answers


def _reading(answer: Any, reading: str, k: int, texts: list[str] | None) -> int | None:
    """The option index `answer` names under one reading, or None when that reading does not name one."""
    if isinstance(answer, bool):
        return None
    if reading == "index":
        if isinstance(answer, int) or isinstance(answer, float) and answer.is_integer():
            index = int(answer)
        elif isinstance(answer, str) and _INDEX.match(answer):
            index = int(answer)
        else:
            return None
        return index if 0 <= index < k else None
    if not isinstance(answer, str):
        return None
    if reading == "letter":
        letter = normal_option(answer)
        return LETTERS.index(letter) if len(letter) == 1 and letter in LETTERS[:k] else None
    if texts is None:
        return None
    wanted = answer.strip().casefold()
    found = [index for index, text in enumerate(texts) if text.strip().casefold() == wanted]
    return found[0] if len(found) == 1 else None


@functools.lru_cache(maxsize=4096)  # (the same few tokens on every line of a dump)
def normal_option(token: str) -> str:
    """A token or answer as an option name: white space, one pair of brackets and one trailing '.', ':' or ')'
    removed, a single letter upper-cased (" A", "A.", "(a)", "a)" -> "A"); other text kept as stripped.

    Example:
        >>> [normal_option(t) for t in (" A", "A.", "(b)", "c)", " Paris")]
        ['A', 'A', 'B', 'C', 'Paris']
    """
    text = token.strip()
    if len(text) >= 2 and text[0] in "([" and text[-1] in ")]":
        text = text[1:-1].strip()
    elif len(text) >= 2 and text[-1] in ".:)":
        text = text[:-1].strip()
    return text.upper() if len(text) == 1 and text.isalpha() and text.isascii() else text


def resolve_answers(answers: list[Any], counts: list[int], texts: list[list[str] | None], wheres: list[str], *,
                    answer_is: str | None, key: str) -> tuple[np.ndarray, str]:
    """The gold option index of every question, by one reading for the whole file (docs/inputs.md): --answer-is
    index|letter|text when given; else every reading that names an option on every line (an index counting from 0,
    a letter A, B, ... of the options in order, the text of one option) — refused when none does or when two do
    and differ on a line. Returns the indices and the rule that decided."""
    readings = (answer_is,) if answer_is is not None else ANSWER_READINGS
    found = {reading: [_reading(answer, reading, k, text) for answer, k, text in zip(answers, counts, texts)]
             for reading in readings}
    complete = [reading for reading in readings if all(index is not None for index in found[reading])]
    if not complete:
        best = max(readings, key=lambda reading: sum(index is not None for index in found[reading]))
        row = next(index for index, value in enumerate(found[best]) if value is None)
        how = f"as --answer-is {answer_is}" if answer_is else "as an index from 0, a letter or an option's text"
        raise InputError(f"Expected '{key}' in {wheres[row]} to name one of its {counts[row]} options {how}, got "
                         f"{str(answers[row])[:60]!r}.")
    first = complete[0]
    for other in complete[1:]:
        differs = [row for row, (a, b) in enumerate(zip(found[first], found[other])) if a != b]
        if differs:
            row = differs[0]
            raise InputError(
                f"Expected '{key}' in {wheres[row]} to name one option, but {str(answers[row])[:40]!r} is option "
                f"{found[first][row]} as {'an index' if first == 'index' else 'a ' + first} and option "
                f"{found[other][row]} as {'an index' if other == 'index' else 'a ' + other}: pass --answer-is "
                f"{first} or --answer-is {other}."
            )
    rule = f"--answer-is {answer_is}" if answer_is else (
        f"'{key}' read as {' / '.join(complete)} (the same option on every line)")
    return np.array([found[first][row] for row in range(len(answers))], dtype=np.int64), rule


# ------------------------------------------------------------------------------------------------ harness samples


def choice_length(continuation: str, continuations: list[str]) -> int:
    """The length acc_norm divides by: the choice string in characters (Python's len, as the harness's
    `float(len(choice))`), without the target delimiter (one space by default) that every continuation of the
    question starts with.

    Example:
        >>> choice_length(" Paris", [" Paris", " Rome"])
        5
    """
    if continuations and all(text.startswith(" ") for text in continuations):
        return len(continuation) - 1
    return len(continuation)


def harness_questions(files: list[Path], options: ReadOptions) -> Questions:
    """The questions of lm-evaluation-harness sample files (read as one input, in file order), the task of each from
    its file name (or --task), the subject where the task names one (`mmlu_<subject>`)."""
    rows, answers, counts, texts, wheres, tasks, keys = [], [], [], [], [], [], set()
    normalized = 0
    for path in files:
        task = options.task or task_of(path) or task_from_results(path)
        if task is None:
            raise InputError(f"Expected {path.name} to be named samples_<task>_<date>.jsonl (as lm-evaluation-harness "
                             "writes it) or to have the harness's results.json beside it, to tell its task: pass "
                             "--task NAME.")
        for sample in read_harness_samples(path):
            logliks = sample.logliks
            if len(logliks) < 2:
                raise InputError(f"Expected two or more choices in {sample.where}, got {len(logliks)} "
                                 "log-likelihood: a loglikelihood task scores one continuation, not a "
                                 "multiple-choice question.")
            if options.length_normalize:
                if sample.continuations is None:
                    raise InputError(f"Expected the choices' texts in 'arguments' of {sample.where} for "
                                     "--length-normalize, but they are not there.")
                lengths = [choice_length(text, sample.continuations) for text in sample.continuations]
                if min(lengths) <= 0:
                    raise InputError(f"Expected every choice of {sample.where} to have a text for "
                                     "--length-normalize, but one is empty.")
                logliks = [value / length for value, length in zip(logliks, lengths)]
                normalized += 1
            if not all(math.isfinite(value) for value in logliks):
                raise InputError(f"Expected finite log-likelihoods in {sample.where}, got {sample.logliks}.")
            if max(logliks) > POSITIVE_TOLERANCE:
                raise InputError(f"Expected log-likelihoods (<= 0) in {sample.where}, got {max(logliks):g}.")
            if isinstance(sample.target, list):
                raise InputError(f"Expected one gold answer in {sample.where}, got {len(sample.target)} "
                                 f"({str(sample.target)[:40]}): tasks of several correct choices are not read.")
            rows.append(logliks)
            answers.append(sample.target)
            counts.append(len(logliks))
            texts.append(sample.continuations)
            wheres.append(sample.where)
            tasks.append(task)
            keys.add(sample.responses_key)
    labels, rule = resolve_answers(answers, counts, texts, wheres, answer_is=options.answer_is, key="target")
    logliks, counts_array = pad(rows)
    groups = {"task": np.array(tasks, dtype=str)}
    subjects = [subject_of(task) for task in tasks]
    if all(subject is not None for subject in subjects):
        groups["subject"] = np.array(subjects, dtype=str)
    notes = [f"{len(files)} lm-evaluation-harness sample file(s), {len(set(tasks))} task(s): "
             f"{', '.join(sorted(set(tasks))[:6])}{', ...' if len(set(tasks)) > 6 else ''}"]
    if options.length_normalize:
        notes.append("--length-normalize: each log-likelihood divided by its choice's length in characters "
                     "(as the harness's acc_norm)")
    return Questions(logliks, counts_array, labels, groups, tuple(notes), str(files[0]), HARNESS_FORMAT,
                     ", ".join(sorted(keys)),
                     "target", f"lm-evaluation-harness samples, gold from {rule}", {"files": [str(f) for f in files]})


def harness_input(path: str | os.PathLike) -> list[Path] | None:
    """The harness sample files a path stands for (a sample file, a folder or glob of them), or None."""
    from adacal.sources.harness_samples import looks_like_harness_file

    files = harness_files(path)
    if files is not None:
        return files
    return [Path(path)] if looks_like_harness_file(path) else None


__all__ = ["ANSWER_READINGS", "HARNESS_FORMAT", "LETTERS", "Questions", "choice_length", "harness_input",
           "harness_questions", "normal_option", "pad", "resolve_answers"]
