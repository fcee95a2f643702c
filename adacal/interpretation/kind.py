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
    NEAR_PROB_SUM_TOLERANCE,
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

SCORES_KINDS = ("auto", "logits", "probs")
# Keys whose name says the scores are probabilities. (`logits` names no kind: it is adacal's own name for any scores,
# as --logits-key is.)
PROBABILITY_KEYS = ("probs", "probabilities", "y_prob", "y_proba", "pred_probs")
# Logits may hold a few rows that happen to look like probabilities (two small logits summing to 1 within 1e-4): at
# most this share of the rows. More, and fewer than all, is a matrix whose rows disagree: refused.
CHANCE_PROBABILITY_ROWS = 0.01
# Rows near probabilities (or percentages) but not within rounding of them: from this share of the rows on, the
# matrix is refused as probabilities that do not sum to 1 rather than read as logits (their softmax would be nearly
# uniform, or nearly one-hot).
NEAR_ROWS = 0.5
# Entries this far outside [0, 1] still make a row "near" probabilities (rounding noise such as -1e-12).
NEAR_ENTRY = 1e-6
# A binary model's one score per sample: decision scores need at least this many values outside [0, 1] (and more
# than CHANCE_PROBABILITY_ROWS of them), not all within NEAR_ENTRY of it; one stray value is refused, never a flip.
MIN_OUTSIDE_VALUES = 2

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


def _rows(indices: np.ndarray, describe: Any, limit: int = 3) -> str:
    shown = "; ".join(describe(int(i)) for i in indices[:limit])
    more = f"; and {len(indices) - limit} more" if len(indices) > limit else ""
    return shown + more


def _row_problem(scores: np.ndarray, sums: np.ndarray, row: int) -> str:
    values = scores[row]
    if values.min() < 0:
        return f"row {row} has the entry {values.min():.3g}"
    if not values.any():
        return f"row {row} is all zeros"
    return f"row {row} sums to {sums[row]:.6g}"


def _claimed_probabilities(scores: np.ndarray, sums: np.ndarray, probability_rows: np.ndarray, *, name: str,
                           claim: str) -> None:
    bad = np.flatnonzero(~probability_rows)
    if not bad.size:
        return
    rows = f"{bad.size} of {len(scores)} rows are not ({_rows(bad, lambda row: _row_problem(scores, sums, row))})"
    fix = "pass --renormalize to divide each row by its sum, or --scores-kind logits if they are logits"
    with np.errstate(invalid="ignore"):
        if scores.min() >= 0.0 and scores.max() <= 1.0:
            found = f"got values in [0, 1] whose rows sum to {value_range(sums)}"
        elif scores.min() >= 0.0 and scores.max() <= 100.0 and float(np.abs(sums - 100.0).max()) <= 10.0:
            found = f"got values in [0, 100] whose rows sum to {value_range(sums)}, percentages it seems"
        else:
            found = f"got values from {scores.min():.4g} to {scores.max():.4g}"
    raise InputError(f"Expected {name} to be probabilities whose rows sum to 1, {claim}, {found}: {fix} ({rows}).")


def _renormalized(
    scores: np.ndarray, sums: np.ndarray, *, name: str, tolerance: float
) -> tuple[np.ndarray, int, list[str]]:
    bad = np.flatnonzero((scores.min(axis=1) < 0) | ~(sums > 0))
    if bad.size:
        raise InputError(
            f"Expected {name} to be non-negative with a positive sum in every row (probabilities, percentages, "
            f"counts) for --renormalize, but {bad.size} rows are not "
            f"({_rows(bad, lambda row: _row_problem(scores, sums, row))})."
        )
    moved = np.abs(sums - 1.0) > tolerance
    notes = [f"{name}: rows renormalised to sum to 1 ({int(moved.sum())} of {len(scores)}; they summed to "
             f"{value_range(sums)})"] if moved.any() else []
    # Divided by numpy's row sums (not `sums`, einsum's): the bits `p / p.sum(axis=1)` gives, as users compute it.
    return scores / scores.sum(axis=1)[:, None], int(moved.sum()), notes


def read_matrix_kind(values: Any, *, name: str, kind: str = "auto", renormalize: bool = False,
                     named_probabilities: bool = False, tolerance: float | None = None) -> ScoresReading:
    """The kind of an (N, K) score matrix, K >= 2, by the rules of docs/inputs.md ("Kind of scores").

    Every row is one of: a probability row (entries >= 0, sum within the dtype's rounding of 1), a near-probability
    row (entries within NEAR_ENTRY of [0, 1], sum within NEAR_PROB_SUM_TOLERANCE of 1), a percentage row (entries in
    [0, 100], some above 1, sum within 10 of 100), or another row. `kind` "probs" / "logits" (or `renormalize`, or
    `named_probabilities`) claim a kind and the rows are checked against it; "auto" reads probabilities when every row
    is a probability row, logits when at most CHANCE_PROBABILITY_ROWS of them are and fewer than NEAR_ROWS are near
    probabilities or percentages, and refuses anything between.
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
    minimum, maximum = scores.min(axis=1), scores.max(axis=1)
    with np.errstate(invalid="ignore"):
        probability_rows = (minimum >= 0.0) & (np.abs(sums - 1.0) <= tolerance)
    if renormalize:
        normalised, moved, notes = _renormalized(scores, sums, name=name, tolerance=tolerance)
        return ScoresReading(normalised, PROBABILITIES, "--renormalize (each row divided by its sum)", moved,
                             tuple(notes))
    claim = ("as --scores-kind probs says" if kind == "probs" else "as its name says" if named_probabilities else None)
    if claim is not None:
        _claimed_probabilities(scores, sums, probability_rows, name=name, claim=claim)
        rule = "--scores-kind probs" if kind == "probs" else "its key names probabilities; every row sums to 1"
        return ScoresReading(normalise_probs(scores, sums), PROBABILITIES, rule)
    n = len(scores)
    count = int(probability_rows.sum())
    if count == n:
        return ScoresReading(normalise_probs(scores, sums), PROBABILITIES,
                             "every row is non-negative and sums to 1")
    if scores.shape[1] == 2 and not scores[:, 0].any():
        # [0, s]: a binary model's decision scores as two columns (softmax([0, s]) = sigmoid(s)), logits by form.
        return ScoresReading(scores, LOGITS, "two columns whose first is 0 in every row (decision scores [0, s])")
    fix = "pass --renormalize to divide each row by its sum, or --scores-kind logits if they are logits"
    with np.errstate(invalid="ignore"):
        near = ((minimum >= -NEAR_ENTRY) & (maximum <= 1.0 + NEAR_ENTRY)
                & (np.abs(sums - 1.0) <= NEAR_PROB_SUM_TOLERANCE))
        percent = ((minimum >= -100 * NEAR_ENTRY) & (maximum <= 100.0 * (1 + NEAR_ENTRY)) & (maximum > 1.0)
                   & (np.abs(sums - 100.0) <= 100.0 * NEAR_PROB_SUM_TOLERANCE))
    bad = np.flatnonzero(~probability_rows)
    rows = f"{bad.size} of {n} rows are not ({_rows(bad, lambda row: _row_problem(scores, sums, row))})"
    if int((near | probability_rows).sum()) >= NEAR_ROWS * n:
        raise InputError(
            f"Expected {name} to be logits or probabilities whose rows sum to 1, got values in [0, 1] whose rows sum "
            f"to {value_range(sums[near | probability_rows])}; {rows}: {fix}."
        )
    if int(percent.sum()) >= NEAR_ROWS * n:
        raise InputError(
            f"Expected {name} to be logits or probabilities, got values in [0, 100] whose rows sum to "
            f"{value_range(sums[percent])}, percentages it seems: {fix}."
        )
    if count > CHANCE_PROBABILITY_ROWS * n:
        raise InputError(
            f"Expected the rows of {name} to be all probabilities or all logits, but {count} of {n} rows are "
            f"probabilities and {n - count} are not ({_rows(bad, lambda row: _row_problem(scores, sums, row))}): "
            f"{fix}."
        )
    rule = "no row is a probability row" if count == 0 else (
        f"{count} of {n} rows look like probabilities (at most {CHANCE_PROBABILITY_ROWS:.0%} may, by chance)")
    return ScoresReading(scores, LOGITS, rule)


_PROBABILITIES_READ = "taken as positive-class probabilities p (columns 1 - p, p)"
_DECISION_READ = "taken as binary decision scores (logits) s (columns 0, s)"


def read_binary_kind(values: Any, *, name: str, spelled: str = "1-D scores", kind: str = "auto",
                     renormalize: bool = False, named_probabilities: bool = False,
                     decision: bool = False) -> ScoresReading:
    """Two columns from a binary model's one score per sample: positive-class probabilities p as [1 - p, p] when every
    value lies in [0, 1], decision scores s as [0, s] when at least MIN_OUTSIDE_VALUES (and over
    CHANCE_PROBABILITY_ROWS) of them lie outside it, not all within NEAR_ENTRY of it; refused in between.
    `decision`: another set of the same model's scores lies outside [0, 1] (`mixed_binary_kinds`)."""
    array = to_numpy(values)
    if array.dtype.kind not in "iuf":
        raise InputError(f"Expected {name} to be real numbers, got dtype {array.dtype}.")
    flat = np.asarray(array, dtype=np.float64).reshape(-1)
    if flat.size and not np.isfinite(flat).all():
        raise InputError(f"Expected {name} to be finite, found NaN or Inf in {int((~np.isfinite(flat)).sum())} row(s).")
    with np.errstate(invalid="ignore"):
        outside = (flat < 0.0) | (flat > 1.0)
    claimed = kind == "probs" or renormalize or named_probabilities
    if claimed or kind == "logits":
        if renormalize and outside.any():
            raise InputError(
                f"Expected {name} (one score per sample) in [0, 1] with --renormalize, got values from "
                f"{flat.min():.4g} to {flat.max():.4g}: --renormalize divides rows of several columns by their sums; "
                "give P(class 1) in [0, 1] (percentages / 100), or the scores of both classes."
            )
        if claimed and outside.any():
            where = np.flatnonzero(outside)
            raise InputError(
                f"Expected {name} (one score per sample) to be probabilities in [0, 1], but {where.size} values are "
                f"not (value {flat[where[0]]:.6g} at row {where[0]}): give P(class 1) in [0, 1] (percentages / 100), "
                "or --scores-kind logits if they are decision scores."
            )
        probabilities = claimed
        rule = ("--scores-kind probs" if kind == "probs" else "--renormalize" if renormalize else
                "its key names probabilities" if named_probabilities else "--scores-kind logits")
    elif decision:
        probabilities, rule = False, "another set of the same model's scores lies outside [0, 1]"
    else:
        count = int(outside.sum())
        if count == 0:
            probabilities, rule = True, "every value lies in [0, 1]"
        else:
            far = np.abs(np.where(flat < 0.0, flat, flat - 1.0))[outside] > NEAR_ENTRY
            if count < MIN_OUTSIDE_VALUES or count <= CHANCE_PROBABILITY_ROWS * flat.size or not far.any():
                where = np.flatnonzero(outside)
                raise InputError(
                    f"Expected {name} (one score per sample) to lie all in [0, 1] (probabilities) or clearly outside "
                    f"it (decision scores), but only {count} of {flat.size} values lie outside (value "
                    f"{flat[where[0]]:.6g} at row {where[0]}): pass --scores-kind probs or --scores-kind logits."
                )
            probabilities, rule = False, f"{count} of {flat.size} values lie outside [0, 1]"
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
