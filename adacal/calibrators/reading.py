"""How a calibrator reads scores: the kind decided once by the shared rule (`adacal.scores_kind`), scores made
float64 (N, K) row by row, and the two checks of `Calibrator.transform` — a batch that a calibrator fitted on logits
cannot take for logits, and rows whose predicted class a calibrator lost to a tie."""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.arrays import (
    NEAR_PROB_SUM_TOLERANCE,
    check_scores,
    normalise_probs,
    one_score_per_sample,
    probability_tolerance,
    softmax,
    to_numpy,
)
from adacal.errors import InputError
from adacal.scores_kind import check_scores_kind, decide_scores_kind

__all__ = ["FITTED_KINDS", "MIN_JUDGED_ROWS", "checked_scores", "lost_top_rows", "read_scores",
           "refuse_probability_batch"]

# What `fitted_on_` holds: the kind of scores a calibrator was fitted on (decide_scores_kind's answers).
FITTED_KINDS = ("logits", "probs")
# `fitted_on` as calibrators saved by adacal 0.1.0 spell it.
SAVED_KIND_SPELLINGS = {"probabilities": "probs"}
# A calibrator fitted on logits refuses a batch of at least this many rows that all look like probabilities (or mostly
# like probabilities that do not sum to 1, or percentages): logits are refused by the file readers' rule from 1 % of
# such rows on, so all of 20 rows are no chance. Smaller batches (one request's row) are read as logits, as fitted.
MIN_JUDGED_ROWS = 20
_NEAR_ROWS = 0.5  # the share of near-probability / percentage rows that refuses (docs/inputs.md, rule 3)
_NEAR_ENTRY = 1e-6
KIND_WORDS = {"logits": "logits", "probs": "probabilities"}


def read_scores(values: Any, *, scores_kind: str = "auto", name: str = "scores") -> tuple[np.ndarray, str]:
    """float64 scores (N, K) and their kind, "logits" or "probs", decided once for the whole array by the shared rule
    (`adacal.scores_kind.decide_scores_kind`), as a calibrator reads them.

    Args:
        values: scores (N, K), or a binary model's one score per sample (N,) / (N, 1); numpy, torch or lists.
        scores_kind: "auto" (every row must agree), "logits" (any values) or "probs" (every row a probability row).
        name: what to call the scores in a message.

    Returns:
        (scores, kind): probability rows divided by their sums where they sum to 1 only within their dtype's rounding
        (float16), as the metrics read them; one score per sample as two columns, probabilities p as [1 − p, p] and
        logits s as [0, s]. Each row is converted on its own.

    Example:
        >>> from adacal.calibrators.reading import read_scores
        >>> scores, kind = read_scores([0.3, 0.8], scores_kind="logits")
        >>> kind, scores.tolist()
        ('logits', [[0.0, 0.3], [0.0, 0.8]])
    """
    kind = decide_scores_kind(values, scores_kind=check_scores_kind(scores_kind), name=name)
    if one_score_per_sample(values):
        flat = np.asarray(to_numpy(values, name=name), dtype=np.float64).reshape(-1)
        first = 1.0 - flat if kind == "probs" else np.zeros_like(flat)
        return check_scores(np.stack([first, flat], axis=1), name=name), kind
    scores = check_scores(values, name=name)
    return (normalise_probs(scores) if kind == "probs" else scores), kind


def checked_scores(values: Any, name: str = "logits", *, binary_kind: str | None = None) -> tuple[np.ndarray, str]:
    """`read_scores` in "auto", one score per sample read as logits when `binary_kind` is "logits" (kept for callers
    written before `read_scores`)."""
    logits = binary_kind == "logits" and one_score_per_sample(values)
    return read_scores(values, scores_kind="logits" if logits else "auto", name=name)


def refuse_probability_batch(values: Any, scores: np.ndarray, calibrator: str, *, any_kind: bool = True) -> None:
    """Refuse, for a calibrator fitted on logits, a batch of at least MIN_JUDGED_ROWS rows that are all probability
    rows, or at least half near-probability or percentage rows: what the file readers read as probabilities or
    refuse, and no logits look like by chance. It reads nothing differently: the batch is refused or read as logits."""
    n = len(scores)
    if n < MIN_JUDGED_ROWS or one_score_per_sample(values):
        return
    with np.errstate(over="ignore", invalid="ignore"):
        sums, low, high = scores.sum(axis=1), scores.min(axis=1), scores.max(axis=1)
        probability = (low >= 0.0) & (np.abs(sums - 1.0) <= probability_tolerance(values))
        near = ((low >= -_NEAR_ENTRY) & (high <= 1.0 + _NEAR_ENTRY) & (np.abs(sums - 1.0) <= NEAR_PROB_SUM_TOLERANCE))
        percent = ((low >= -100 * _NEAR_ENTRY) & (high <= 100.0 * (1 + _NEAR_ENTRY)) & (high > 1.0)
                   & (np.abs(sums - 100.0) <= 100.0 * NEAR_PROB_SUM_TOLERANCE))
    if probability.all():
        found = f"all {n} rows are probability rows (non-negative, summing to 1)"
    elif int((near | probability).sum()) >= _NEAR_ROWS * n:
        found = (f"{int((near | probability).sum())} of {n} rows lie in [0, 1] and sum to nearly 1 (probabilities "
                 "that do not sum to 1, it seems)")
    elif int(percent.sum()) >= _NEAR_ROWS * n:
        found = f"{int(percent.sum())} of {n} rows lie in [0, 100] and sum to about 100 (percentages, it seems)"
    else:
        return
    fix = ("pass scores_kind='probs' to read probabilities as probabilities (divide rows by their sums first if they "
           "do not sum to 1)" if any_kind else "give it the model's logits (its per-class weights apply to logits "
           "only)")
    raise InputError(
        f"Expected logits for this {calibrator} calibrator, which was fitted on logits, but {found}: {fix}, or "
        "scores_kind='logits' if they are logits."
    )


def lost_top_rows(logits: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Rows whose calibrated probabilities tie the top class with another where the scores had one top class and
    plain softmax keeps it apart (so the calibrator, not the model, lost the predicted class)."""
    with np.errstate(invalid="ignore"):
        tied = (probs == probs.max(axis=1, keepdims=True)).sum(axis=1) > 1
    if not tied.any():
        return np.empty(0, dtype=np.int64)
    rows = np.flatnonzero(tied)
    unique = (logits[rows] == logits[rows].max(axis=1, keepdims=True)).sum(axis=1) == 1
    plain = softmax(logits[rows])
    kept = (plain == plain.max(axis=1, keepdims=True)).sum(axis=1) == 1
    return rows[unique & kept]
