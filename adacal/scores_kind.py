"""The one decision of what kind of scores an array holds — logits or probabilities — for the file readers and the
Python API alike: the per-row rule of docs/inputs.md ("Kind of scores"), written once here and used by
`adacal.interpretation.kind` (files; messages name `--scores-kind` / `--renormalize`), `adacal.metrics` (the row scan
of `prepare_predictions` keeps the row sums of the pass that reads the rows, and the kinds are counted from them; the
streaming meter adds the counts of its batches) and the calibrators (`decide_scores_kind`; messages name
`scores_kind=`). So an array and the file that holds it are read alike or both refused.

Each row of an (N, K) matrix is a probability row (entries >= 0, sum within the dtype's rounding of 1), a
near-probability row (entries within NEAR_ENTRY of [0, 1], sum within NEAR_PROB_SUM_TOLERANCE of 1), a percentage
row (entries in [0, 100], some above 1, sum within 10 of 100) or another row; `RowCounts` holds how many of each,
`matrix_verdict` decides from them. A binary model's one score per sample has its own rule (`binary_verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from adacal.arrays import (
    NEAR_PROB_SUM_TOLERANCE,
    binary_score_columns,
    check_finite_rows,
    check_score_shape,
    check_scores,
    one_score_per_sample,
    probability_tolerance,
    row_sums,
    to_numpy,
    value_range,
)
from adacal.errors import InputError

SCORES_KINDS = ("auto", "logits", "probs")
ScoresKind = Literal["auto", "logits", "probs"]
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
# The blocks `count_rows` reads at a time (bytes).
_BLOCK_BYTES = 1 << 20


@dataclass(frozen=True)
class KindWords:
    """How a refusal names the options that settle it: the file readers' flags or the API's keyword."""

    fix: str  # ends a matrix refusal
    binary_fix: str  # ends the refusal of one score per sample that is neither kind
    binary_logits: str  # ends the refusal of one score per sample claimed to be probabilities
    probs_claim: str  # why the rows must be probability rows, when the option says so
    probs_rule: str
    logits_rule: str


FILE_WORDS = KindWords(
    fix="pass --renormalize to divide each row by its sum, or --scores-kind logits if they are logits",
    binary_fix="pass --scores-kind probs or --scores-kind logits",
    binary_logits="or --scores-kind logits if they are decision scores",
    probs_claim="as --scores-kind probs says", probs_rule="--scores-kind probs", logits_rule="--scores-kind logits")
API_WORDS = KindWords(
    fix="pass scores_kind='logits' if they are logits, or divide each row by its sum",
    binary_fix="pass scores_kind='probs' or scores_kind='logits'",
    binary_logits="or scores_kind='logits' if they are decision scores",
    probs_claim="as scores_kind='probs' says", probs_rule="scores_kind='probs'", logits_rule="scores_kind='logits'")


class RowCounts(NamedTuple):
    """How many rows of a matrix (or of a stream of batches) are of each kind.

    rows: all rows; probability: probability rows; near: rows that are near-probability or probability rows;
    percent: percentage rows.
    """

    rows: int = 0
    probability: int = 0
    near: int = 0
    percent: int = 0

    def plus(self, other: RowCounts) -> RowCounts:
        """The counts of both sets of rows together."""
        return RowCounts(*(int(a) + int(b) for a, b in zip(self, other)))


def check_scores_kind(scores_kind: Any, *, option: str = "scores_kind") -> str:
    """`scores_kind` itself when it is one of SCORES_KINDS, else `InputError` naming the choices.

    Example:
        >>> check_scores_kind("logits")
        'logits'
    """
    if scores_kind not in SCORES_KINDS:
        raise InputError(f"Expected {option} to be one of {', '.join(SCORES_KINDS)}, got {scores_kind!r}.")
    return scores_kind


def row_masks(scores: np.ndarray, sums: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(probability rows, near-probability rows, percentage rows) of a 2-D array, by the rule of docs/inputs.md §2,
    as boolean vectors (`near` alone, without the probability rows). `sums` are its float64 row sums
    (`adacal.arrays.row_sums`)."""
    return _masks(scores.min(axis=1).astype(np.float64), scores.max(axis=1).astype(np.float64), sums, tolerance)


def _masks(minimum: np.ndarray, maximum: np.ndarray, sums: np.ndarray,
           tolerance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore"):
        distance = np.abs(sums - 1.0)
        probability = (minimum >= 0.0) & (distance <= tolerance)
        near = (minimum >= -NEAR_ENTRY) & (maximum <= 1.0 + NEAR_ENTRY) & (distance <= NEAR_PROB_SUM_TOLERANCE)
        percent = ((minimum >= -100 * NEAR_ENTRY) & (maximum <= 100.0 * (1 + NEAR_ENTRY)) & (maximum > 1.0)
                   & (np.abs(sums - 100.0) <= 100.0 * NEAR_PROB_SUM_TOLERANCE))
    return probability, near, percent


def count_from_sums(scores: np.ndarray, sums: np.ndarray, tolerance: float, *, minimum: float) -> RowCounts:
    """The `RowCounts` of a 2-D array given its float64 row sums (`adacal.arrays.row_sums`; 1.0 stands for a row
    known to be within rounding of 1) and its smallest entry. Only rows whose sum lies near 1 or 100 can be of any
    kind but "another row", so only those are read again (for their smallest and largest entries, in chunks): on
    logits this costs a few operations on the N sums, not another pass over the matrix; on probabilities nothing
    when every sum is within tolerance."""
    rows = len(sums)
    candidates, largest = _candidates(sums)
    if minimum >= 0.0 and largest <= tolerance:  # every row a probability row (NaN sums fail the comparison)
        return RowCounts(rows, rows, rows, 0)
    counts = [rows, 0, 0, 0]
    step = max(1, _BLOCK_BYTES // (scores.shape[1] * scores.itemsize))
    for start in range(0, candidates.size, step):
        chunk = candidates[start:start + step]
        subset = scores[chunk]
        probability, near, percent = _masks(subset.min(axis=1).astype(np.float64),
                                            subset.max(axis=1).astype(np.float64), sums[chunk], tolerance)
        counts[1] += int(probability.sum())
        counts[2] += int((near | probability).sum())
        counts[3] += int(percent.sum())
    return RowCounts(*counts)


# The sums are screened in chunks of this many rows through reused buffers: no N-sized temporaries (their page
# faults cost more than the arithmetic).
_SUM_CHUNK = 1 << 15


def _candidates(sums: np.ndarray) -> tuple[np.ndarray, float]:
    """The rows whose sum lies within NEAR_PROB_SUM_TOLERANCE of 1 or 100 × that of 100 (the only rows that can be
    probability, near-probability or percentage rows), and the largest |sum − 1| (NaN if a sum is NaN)."""
    found, largest = [], 0.0
    size = min(_SUM_CHUNK, len(sums))
    distance, other = np.empty(size), np.empty(size)
    near, close = np.empty(size, dtype=bool), np.empty(size, dtype=bool)
    with np.errstate(invalid="ignore"):
        for start in range(0, len(sums), _SUM_CHUNK):
            chunk = sums[start:start + _SUM_CHUNK]
            m = len(chunk)
            d = np.abs(np.subtract(chunk, 1.0, out=distance[:m]), out=distance[:m])
            largest = float(np.maximum(largest, d.max()))  # NaN propagates
            np.less_equal(d, NEAR_PROB_SUM_TOLERANCE, out=near[:m])
            o = np.abs(np.subtract(chunk, 100.0, out=other[:m]), out=other[:m])
            np.logical_or(near[:m], np.less_equal(o, 100.0 * NEAR_PROB_SUM_TOLERANCE, out=close[:m]), out=near[:m])
            hits = np.flatnonzero(near[:m])
            if hits.size:
                found.append(hits + start)
    return (np.concatenate(found) if found else np.empty(0, dtype=np.int64)), largest


def count_rows(scores: np.ndarray, tolerance: float) -> RowCounts:
    """The `RowCounts` of a validated 2-D float array (any float dtype)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return count_from_sums(scores, row_sums(scores), tolerance, minimum=float(scores.min()))


class Verdict(NamedTuple):
    """What `matrix_verdict` decided: `kind` "probs", "logits" or "refused"; `rule` the phrase for the record, or
    for a refusal which case: "near" (probabilities that do not sum to 1), "percent" or "mixed"."""

    kind: str
    rule: str


def matrix_verdict(counts: RowCounts, *, zero_first_column: bool = False) -> Verdict:
    """The auto rule of docs/inputs.md §2 on row counts: probabilities when every row is a probability row; logits by
    form for two columns whose first is 0 in every row (`zero_first_column`, a binary model's decision scores
    [0, s]); refused when at least NEAR_ROWS of the rows are near probabilities or percentages, or more than
    CHANCE_PROBABILITY_ROWS (and fewer than all) are probability rows; logits otherwise.

    Example:
        >>> matrix_verdict(RowCounts(rows=300, probability=299, near=300, percent=0))
        Verdict(kind='refused', rule='near')
    """
    n, count = counts.rows, counts.probability
    if count == n:
        return Verdict("probs", "every row is non-negative and sums to 1")
    if zero_first_column:
        return Verdict("logits", "two columns whose first is 0 in every row (decision scores [0, s])")
    if counts.near >= NEAR_ROWS * n:
        return Verdict("refused", "near")
    if counts.percent >= NEAR_ROWS * n:
        return Verdict("refused", "percent")
    if count > CHANCE_PROBABILITY_ROWS * n:
        return Verdict("refused", "mixed")
    return Verdict("logits", "no row is a probability row" if count == 0 else (
        f"{count} of {n} rows look like probabilities (at most {CHANCE_PROBABILITY_ROWS:.0%} may, by chance)"))


def _rows(indices: np.ndarray, describe: Any, limit: int = 3) -> str:
    shown = "; ".join(describe(int(i)) for i in indices[:limit])
    more = f"; and {len(indices) - limit} more" if len(indices) > limit else ""
    return shown + more


def _row_problem(scores: np.ndarray, sums: np.ndarray, row: int) -> str:
    values = scores[row]
    if values.min() < 0:
        return f"row {row} has the entry {float(values.min()):.3g}"
    if not values.any():
        return f"row {row} is all zeros"
    return f"row {row} sums to {sums[row]:.6g}"


def row_details(scores: np.ndarray, sums: np.ndarray, probability_rows: np.ndarray) -> str:
    """"row i has the entry -1e-12; row j is all zeros; ..." for the first rows that are not probability rows."""
    bad = np.flatnonzero(~probability_rows)
    return _rows(bad, lambda row: _row_problem(scores, sums, row))


def offending_rows(scores: np.ndarray, sums: np.ndarray, probability_rows: np.ndarray) -> str:
    """"m of n rows are not (row i has the entry -1e-12; row j is all zeros; ...)" for the rows that are not
    probability rows."""
    count = int((~probability_rows).sum())
    return f"{count} of {len(scores)} rows are not ({row_details(scores, sums, probability_rows)})"


def refuse_matrix(scores: np.ndarray, case: str, *, name: str, tolerance: float, words: KindWords,
                  sums: np.ndarray | None = None) -> InputError:
    """The one-line refusal of a matrix whose `matrix_verdict` was refused (`case`), naming its first offending
    rows and the options of `words`."""
    sums = row_sums(scores) if sums is None else sums
    probability, near, percent = row_masks(scores, sums, tolerance)
    rows = offending_rows(scores, sums, probability)
    if case == "near":
        return InputError(
            f"Expected {name} to be logits or probabilities whose rows sum to 1, got values in [0, 1] whose rows sum "
            f"to {value_range(sums[near | probability])}; {rows}: {words.fix}."
        )
    if case == "percent":
        return InputError(
            f"Expected {name} to be logits or probabilities, got values in [0, 100] whose rows sum to "
            f"{value_range(sums[percent])}, percentages it seems: {words.fix}."
        )
    count = int(probability.sum())
    return InputError(
        f"Expected the rows of {name} to be all probabilities or all logits, but {count} of {len(scores)} rows are "
        f"probabilities and {len(scores) - count} are not ({row_details(scores, sums, probability)}): {words.fix}."
    )


def refuse_claimed(scores: np.ndarray, *, name: str, claim: str, tolerance: float, words: KindWords,
                   sums: np.ndarray | None = None) -> InputError | None:
    """The refusal of scores claimed to be probabilities (`claim`: why) whose rows are not all probability rows, or
    None when they all are."""
    sums = row_sums(scores) if sums is None else sums
    probability = row_masks(scores, sums, tolerance)[0]
    if probability.all():
        return None
    rows = offending_rows(scores, sums, probability)
    with np.errstate(invalid="ignore"):
        low, high = float(scores.min()), float(scores.max())
        if low >= 0.0 and high <= 1.0:
            found = f"got values in [0, 1] whose rows sum to {value_range(sums)}"
        elif low >= 0.0 and high <= 100.0 and float(np.abs(sums - 100.0).max()) <= 10.0:
            found = f"got values in [0, 100] whose rows sum to {value_range(sums)}, percentages it seems"
        else:
            found = f"got values from {low:.4g} to {high:.4g}"
    return InputError(f"Expected {name} to be probabilities whose rows sum to 1, {claim}, {found}: {words.fix} "
                      f"({rows}).")


def decide_matrix(scores: np.ndarray, counts: RowCounts, *, scores_kind: str = "auto", name: str = "scores",
                  tolerance: float, words: KindWords = API_WORDS) -> Verdict:
    """The kind of a validated (N, K) matrix from its `RowCounts`: "logits" whatever the values for scores_kind
    "logits"; every row a probability row for "probs" (else refused, naming rows); `matrix_verdict` in "auto",
    refused in one line (`InputError`) where it refuses."""
    if scores_kind == "logits":
        return Verdict("logits", words.logits_rule)
    if scores_kind == "probs":
        if counts.probability < counts.rows:
            error = refuse_claimed(scores, name=name, claim=words.probs_claim, tolerance=tolerance, words=words)
            if error is not None:
                raise error
        return Verdict("probs", words.probs_rule)
    zero_first = (counts.probability < counts.rows and scores.shape[1] == 2 and not scores[:, 0].any())
    verdict = matrix_verdict(counts, zero_first_column=zero_first)
    if verdict.kind == "refused":
        raise refuse_matrix(scores, verdict.rule, name=name, tolerance=tolerance, words=words)
    return verdict


class BinaryCounts(NamedTuple):
    """A binary model's one score per sample: how many values, how many outside [0, 1], and how many of those
    further than NEAR_ENTRY from it."""

    values: int = 0
    outside: int = 0
    far: int = 0

    def plus(self, other: BinaryCounts) -> BinaryCounts:
        return BinaryCounts(*(int(a) + int(b) for a, b in zip(self, other)))


def binary_counts(flat: np.ndarray) -> BinaryCounts:
    """The `BinaryCounts` of finite float64 values."""
    with np.errstate(invalid="ignore"):
        outside = (flat < 0.0) | (flat > 1.0)
        far = np.abs(np.where(flat < 0.0, flat, flat - 1.0))[outside] > NEAR_ENTRY
    return BinaryCounts(int(flat.size), int(outside.sum()), int(far.sum()))


def binary_verdict(counts: BinaryCounts) -> bool | None:
    """Whether one score per sample is probabilities (True: every value in [0, 1]), decision scores (False: at
    least MIN_OUTSIDE_VALUES, and more than CHANCE_PROBABILITY_ROWS, of them outside [0, 1], not all within
    NEAR_ENTRY of it), or neither (None: refused).

    Example:
        >>> binary_verdict(BinaryCounts(values=400, outside=1, far=0)) is None  # one -1e-9 among 400
        True
    """
    if counts.outside == 0:
        return True
    if (counts.outside < MIN_OUTSIDE_VALUES or counts.outside <= CHANCE_PROBABILITY_ROWS * counts.values
            or not counts.far):
        return None
    return False


def refuse_binary(flat: np.ndarray, *, name: str, words: KindWords) -> InputError:
    """The refusal of one score per sample whose `binary_verdict` is None."""
    with np.errstate(invalid="ignore"):
        where = np.flatnonzero((flat < 0.0) | (flat > 1.0))
    return InputError(
        f"Expected {name} (one score per sample) to lie all in [0, 1] (probabilities) or clearly outside it "
        f"(decision scores), but only {where.size} of {flat.size} values lie outside (value {flat[where[0]]:.6g} at "
        f"row {where[0]}): {words.binary_fix}."
    )


def refuse_binary_claimed(flat: np.ndarray, *, name: str, words: KindWords) -> InputError | None:
    """The refusal of one score per sample claimed to be probabilities with values outside [0, 1], or None."""
    with np.errstate(invalid="ignore"):
        where = np.flatnonzero((flat < 0.0) | (flat > 1.0))
    if not where.size:
        return None
    return InputError(
        f"Expected {name} (one score per sample) to be probabilities in [0, 1], but {where.size} values are not "
        f"(value {flat[where[0]]:.6g} at row {where[0]}): give P(class 1) in [0, 1] (percentages / 100), "
        f"{words.binary_logits}."
    )


def binary_values(scores: Any, *, name: str = "scores") -> np.ndarray:
    """A binary model's one score per sample, (N,) or (N, 1), as finite float64 values (N,)."""
    array = to_numpy(scores, name=name)
    if array.dtype.kind not in "iuf":
        raise InputError(f"Expected {name} to be real numbers, got dtype {array.dtype}.")
    flat = np.asarray(array, dtype=np.float64).reshape(-1)
    if flat.size and not np.isfinite(flat).all():
        raise InputError(f"Expected {name} to be finite, found NaN or Inf in {int((~np.isfinite(flat)).sum())} row(s).")
    return flat


def decide_binary(flat: np.ndarray, *, scores_kind: str = "auto", name: str = "scores",
                  words: KindWords = API_WORDS) -> bool:
    """Whether a binary model's one score per sample (finite float64 values) are probabilities (read as [1 − p, p])
    rather than decision scores ([0, s]), by scores_kind or, in "auto", `binary_verdict`; refused where it is
    neither (or "probs" with values outside [0, 1])."""
    if scores_kind == "logits":
        return False
    if scores_kind == "probs":
        error = refuse_binary_claimed(flat, name=name, words=words)
        if error is not None:
            raise error
        return True
    verdict = binary_verdict(binary_counts(flat))
    if verdict is None:
        raise refuse_binary(flat, name=name, words=words)
    return verdict


def decide_scores_kind(scores: Any, *, scores_kind: str = "auto", name: str = "scores") -> str:
    """"probs" or "logits" for scores (N, K), or a binary model's one score per sample, by the written rule.

    Args:
        scores: (N, K) scores, or (N,) / (N, 1) for a binary model; numpy, torch or nested lists.
        scores_kind: "auto" (the per-row rule of docs/inputs.md §2), "logits" (any values) or "probs" (every row
            must be a probability row, else refused).
        name: what to call the scores in a message.

    Returns:
        "probs" or "logits". Where the rule refuses (a few rows of a probability matrix that are not probability
        rows, percentages, one stray binary value), `InputError` (a `ValueError`) naming the rows and `scores_kind=`.

    Example:
        >>> decide_scores_kind([[0.9, 0.1], [0.2, 0.8]])
        'probs'
        >>> decide_scores_kind([[2.0, -1.0], [0.5, 0.7]])
        'logits'
    """
    check_scores_kind(scores_kind)
    if one_score_per_sample(scores):
        flat = binary_values(scores, name=name)
        if not flat.size:
            raise InputError(f"Expected {name} to hold at least one sample, got none.")
        return "probs" if decide_binary(flat, scores_kind=scores_kind, name=name) else "logits"
    tolerance = probability_tolerance(scores)
    array = check_score_shape(scores, name=name, keep_dtype=True)
    with np.errstate(over="ignore", invalid="ignore"):
        check_finite_rows(array, float(np.abs(row_sums(array)).max()), name=name)
    counts = RowCounts(len(array)) if scores_kind == "logits" else count_rows(array, tolerance)
    return decide_matrix(array, counts, scores_kind=scores_kind, name=name, tolerance=tolerance).kind


def score_matrix(scores: Any, *, scores_kind: str = "auto", name: str = "scores") -> tuple[np.ndarray, str]:
    """Validated float64 scores (N, K) and their kind ("probs" or "logits"), by `decide_scores_kind`'s rule; a binary
    model's one score per sample becomes two columns, [1 − p, p] for probabilities and [0, s] for decision scores.

    Example:
        >>> matrix, kind = score_matrix([0.2, 0.9])
        >>> matrix.tolist(), kind
        ([[0.8, 0.2], [0.09999999999999998, 0.9]], 'probs')
    """
    check_scores_kind(scores_kind)
    if one_score_per_sample(scores):
        flat = binary_values(scores, name=name)
        probabilities = decide_binary(flat, scores_kind=scores_kind, name=name) if flat.size else True
        columns = check_scores(binary_score_columns(flat, name, decision=not probabilities)[0], name=name)
        return columns, "probs" if probabilities else "logits"
    tolerance = probability_tolerance(scores)
    array = check_scores(scores, name=name)
    counts = RowCounts(len(array)) if scores_kind == "logits" else count_rows(array, tolerance)
    return array, decide_matrix(array, counts, scores_kind=scores_kind, name=name, tolerance=tolerance).kind


def score_matrix_and_kind(scores: Any, *, name: str = "scores", scores_kind: str = "auto") -> tuple[np.ndarray, bool]:
    """Validated float64 scores (N, K) and whether they are probabilities, by the per-row rule of docs/inputs.md §2
    (`score_matrix`: the tolerance of the input's own dtype, a matrix whose rows disagree
    refused, naming `scores_kind=`); a binary model's one score per sample becomes two columns."""
    array, kind = score_matrix(scores, scores_kind=scores_kind, name=name)
    return array, kind == "probs"
