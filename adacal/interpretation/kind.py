"""What kind of scores an array holds — logits or probabilities — decided by the written rules of docs/inputs.md:
an explicit `--scores-kind` wins, then a key that names probabilities, then the values, and the values only when
(almost) every row agrees. A single row or entry never changes how the other rows are read: a matrix whose rows
disagree is refused, with the first offending rows and the option that settles it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from adacal.arrays import (
    binary_score_columns,
    check_scores,
    in_unit_interval,
    normalise_probs,
    probability_tolerance,
    row_sums,
    to_numpy,
    value_range,
)
from adacal.errors import InputError
from adacal.scores_kind import (  # noqa: F401 - the rule's constants, re-exported where the readers import them
    CHANCE_PROBABILITY_ROWS,
    FILE_WORDS,
    MIN_OUTSIDE_VALUES,
    NEAR_ENTRY,
    NEAR_ROWS,
    SCORES_KINDS,
    RowCounts,
    binary_values,
    decide_binary,
    decide_matrix,
    row_details,
    refuse_claimed,
    row_masks,
)

# Keys whose name says the scores are probabilities. (`logits` names no kind: it is adacal's own name for any scores,
# as --logits-key is.)
PROBABILITY_KEYS = ("probs", "probabilities", "y_prob", "y_proba", "pred_probs")

PROBABILITIES, LOGITS = "probabilities", "logits"
BINARY_PROBABILITIES, BINARY_DECISION = "binary probabilities", "binary decision scores"


@dataclass(frozen=True)
class ScoresReading:
    """(N, K) float64 scores and how they were read: `kind` (PROBABILITIES, LOGITS, BINARY_PROBABILITIES,
    BINARY_DECISION), the `rule` that decided it (a phrase for the record), rows divided by their sums, notes."""

    scores: np.ndarray
    kind: str
    rule: str
    renormalized_rows: int = 0
    notes: tuple[str, ...] = ()

    @property
    def probabilities(self) -> bool:
        return self.kind in (PROBABILITIES, BINARY_PROBABILITIES)


def check_scores_kind(kind: str) -> str:
    if kind not in SCORES_KINDS:
        raise InputError(f"Expected --scores-kind to be one of {', '.join(SCORES_KINDS)}, got {kind!r}.")
    return kind


def _renormalized(
    scores: np.ndarray, sums: np.ndarray, *, name: str, tolerance: float
) -> tuple[np.ndarray, int, list[str]]:
    bad = np.flatnonzero((scores.min(axis=1) < 0) | ~(sums > 0))
    if bad.size:
        fine = np.ones(len(scores), dtype=bool)
        fine[bad] = False
        raise InputError(
            f"Expected {name} to be non-negative with a positive sum in every row (probabilities, percentages, "
            f"counts) for --renormalize, but {bad.size} rows are not ({row_details(scores, sums, fine)})."
        )
    moved = np.abs(sums - 1.0) > tolerance
    notes = [f"{name}: rows renormalised to sum to 1 ({int(moved.sum())} of {len(scores)}; they summed to "
             f"{value_range(sums)})"] if moved.any() else []
    return renormalized_rows(scores), int(moved.sum()), notes


def renormalized_rows(scores: np.ndarray) -> np.ndarray:
    """Each row of non-negative finite scores with a positive sum divided by its sum: numpy's `p / p.sum(axis=1)`
    bit for bit (as users compute it) where that sum is finite; rows whose sum overflows float64 (entries near
    1e308) are first divided by their largest entry, so they still come out as the probabilities they are."""
    with np.errstate(over="ignore"):
        totals = scores.sum(axis=1)
    result = scores / totals[:, None]
    overflowed = ~np.isfinite(totals)
    if overflowed.any():
        rows = scores[overflowed]
        scaled = rows / rows.max(axis=1, keepdims=True)
        result[overflowed] = scaled / scaled.sum(axis=1, keepdims=True)
    return result


def read_matrix_kind(values: Any, *, name: str, kind: str = "auto", renormalize: bool = False,
                     named_probabilities: bool = False, tolerance: float | None = None) -> ScoresReading:
    """The kind of an (N, K) score matrix, K >= 2, by the rules of docs/inputs.md ("Kind of scores"), as
    `adacal.scores_kind` writes them (the same rule the Python API follows, here with the file options' words).

    `kind` "probs" / "logits" (or `renormalize`, or `named_probabilities`) claim a kind and the rows are checked
    against it; "auto" reads probabilities when every row is a probability row, logits when at most
    CHANCE_PROBABILITY_ROWS of them are and fewer than NEAR_ROWS are near probabilities or percentages, and refuses
    anything between.
    """
    if tolerance is None:  # (a caller that converted bfloat16 values passes their tolerance)
        tolerance = probability_tolerance(values)
    # C order: the row sums (and so the figures) are then the same bits as for the array in memory (.mat is F order).
    scores = np.ascontiguousarray(check_scores(to_numpy(values), name=name))
    if kind == "logits":
        if renormalize:
            raise InputError("Expected --renormalize only with probabilities, not with --scores-kind logits.")
        # Shifted so that no row can pass for probabilities downstream (every row's largest entry 0): the same softmax.
        return ScoresReading(scores - scores.max(axis=1, keepdims=True), LOGITS, "--scores-kind logits")
    sums = row_sums(scores)
    if renormalize:
        normalised, moved, notes = _renormalized(scores, sums, name=name, tolerance=tolerance)
        return ScoresReading(normalised, PROBABILITIES, "--renormalize (each row divided by its sum)", moved,
                             tuple(notes))
    claim = ("as --scores-kind probs says" if kind == "probs" else "as its name says" if named_probabilities else None)
    if claim is not None:
        error = refuse_claimed(scores, name=name, claim=claim, tolerance=tolerance, words=FILE_WORDS, sums=sums)
        if error is not None:
            raise error
        rule = "--scores-kind probs" if kind == "probs" else "its key names probabilities; every row sums to 1"
        return ScoresReading(normalise_probs(scores, sums), PROBABILITIES, rule)
    probability, near, percent = row_masks(scores, sums, tolerance)
    counts = RowCounts(len(scores), int(probability.sum()), int((near | probability).sum()), int(percent.sum()))
    verdict = decide_matrix(scores, counts, name=name, tolerance=tolerance, words=FILE_WORDS)
    if verdict.kind == "probs":
        return ScoresReading(normalise_probs(scores, sums), PROBABILITIES, verdict.rule)
    return ScoresReading(scores, LOGITS, verdict.rule)


_PROBABILITIES_READ = "taken as positive-class probabilities p (columns 1 - p, p)"
_DECISION_READ = "taken as binary decision scores (logits) s (columns 0, s)"


def read_binary_kind(values: Any, *, name: str, spelled: str = "1-D scores", kind: str = "auto",
                     renormalize: bool = False, named_probabilities: bool = False,
                     decision: bool = False) -> ScoresReading:
    """Two columns from a binary model's one score per sample: positive-class probabilities p as [1 - p, p] when every
    value lies in [0, 1], decision scores s as [0, s] when at least MIN_OUTSIDE_VALUES (and over
    CHANCE_PROBABILITY_ROWS) of them lie outside it, not all within NEAR_ENTRY of it; refused in between
    (`adacal.scores_kind.decide_binary`). `decision`: another set of the same model's scores lies outside [0, 1]
    (`mixed_binary_kinds`)."""
    flat = binary_values(values, name=name)
    if renormalize:
        with np.errstate(invalid="ignore"):
            if ((flat < 0.0) | (flat > 1.0)).any():
                raise InputError(
                    f"Expected {name} (one score per sample) in [0, 1] with --renormalize, got values from "
                    f"{flat.min():.4g} to {flat.max():.4g}: --renormalize divides rows of several columns by their "
                    "sums; give P(class 1) in [0, 1] (percentages / 100), or the scores of both classes."
                )
    claimed = kind == "probs" or renormalize or named_probabilities
    if claimed or kind == "logits":
        probabilities = decide_binary(flat, scores_kind="probs" if claimed else "logits", name=name,
                                      words=FILE_WORDS)
        rule = ("--scores-kind probs" if kind == "probs" else "--renormalize" if renormalize else
                "its key names probabilities" if named_probabilities else "--scores-kind logits")
    elif decision:
        probabilities, rule = False, "another set of the same model's scores lies outside [0, 1]"
    else:
        probabilities = decide_binary(flat, name=name, words=FILE_WORDS)
        with np.errstate(invalid="ignore"):
            count = int(((flat < 0.0) | (flat > 1.0)).sum())
        rule = "every value lies in [0, 1]" if probabilities else f"{count} of {flat.size} values lie outside [0, 1]"
    columns = binary_score_columns(flat, name, decision=not probabilities)[0]
    if probabilities:
        return ScoresReading(columns, BINARY_PROBABILITIES, rule,
                             notes=(f"{name}: {spelled} in [0, 1] {_PROBABILITIES_READ}",))
    if in_unit_interval(flat):
        note = (f"{name}: {spelled} in [0, 1] {_DECISION_READ}, as another set of the same model's scores lies "
                "outside [0, 1] and one model gives one kind of score") if decision else (
                f"{name}: {spelled} in [0, 1] {_DECISION_READ} ({rule})")
    else:
        note = f"{name}: {spelled} outside [0, 1] {_DECISION_READ}"
    return ScoresReading(columns, BINARY_DECISION, rule, notes=(note,))


def mixed_binary_readings(*notes: Iterable[str]) -> bool:
    """Whether reading several sets of one model's scores (the notes each reading left) took one score per sample as
    probabilities in some sets and as decision scores in others: they are then read again as decision scores
    (`ReadOptions(decision_scores=True)`; see `adacal.arrays.mixed_binary_kinds`)."""
    kinds = set()
    for set_notes in notes:
        for note in set_notes:
            if note.endswith(_PROBABILITIES_READ):
                kinds.add(True)
            elif _DECISION_READ in note:
                kinds.add(False)
    return kinds == {True, False}
