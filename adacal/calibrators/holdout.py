"""`calibrate --val-fraction F`: one file's rows split into a validation part (a seeded, stratified random F of
them) to fit on and a test part (the rest) to judge on — stratified by correctness for top-label confidences, by
label for score matrices, so that both parts keep the file's accuracy (class mix) as closely as their sizes allow."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adacal.errors import InputError

__all__ = ["check_val_fraction", "holdout_split"]


def check_val_fraction(fraction: Any) -> float:
    """--val-fraction: a number strictly between 0 and 1.

    Example:
        >>> check_val_fraction(0.3)
        0.3
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not math.isfinite(fraction) \
            or not 0.0 < fraction < 1.0:
        raise InputError(f"Expected --val-fraction to be a number between 0 and 1 (exclusive), got {fraction!r}: "
                         "e.g. --val-fraction 0.5 fits on half the rows and tests on the other half.")
    return float(fraction)


def holdout_split(strata: Any, fraction: float, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(validation rows, test rows), each sorted: round(fraction · N) rows drawn at random (seeded) for validation,
    stratified — each stratum (a label, or right/wrong) gives floor(fraction · its count) rows, and the rows left to
    reach the total go to the strata with the largest remainders (earlier strata first on ties).

    Args:
        strata: one stratum per row (N,): class indices, or the correctness.
        fraction: the validation share, in (0, 1) (`check_val_fraction`).
        seed: the seed of the draw (the same seed and rows give the same split).

    Returns:
        Two int64 index arrays that partition range(N); neither is empty (N ≥ 2 is required).

    Example:
        >>> val, test = holdout_split([1, 1, 1, 1, 0, 0, 0, 0], 0.5, seed=0)
        >>> len(val), len(test), sorted(set(val.tolist()) | set(test.tolist())) == list(range(8))
        (4, 4, True)
    """
    fraction = check_val_fraction(fraction)
    strata = np.asarray(strata).reshape(-1)
    n = strata.size
    if n < 2:
        raise InputError(f"Expected at least 2 rows to split with --val-fraction, got {n}: give a validation file "
                         "with --val instead.")
    target = min(max(int(round(fraction * n)), 1), n - 1)
    values, inverse = np.unique(strata, return_inverse=True)
    counts = np.bincount(inverse, minlength=values.size)
    quotas = fraction * counts * (target / (fraction * n))  # scaled so that they sum to the target exactly
    base = np.minimum(np.floor(quotas).astype(np.int64), counts)
    left = target - int(base.sum())
    order = sorted(range(values.size), key=lambda i: (-(quotas[i] - base[i]), i))
    for i in order:
        if left <= 0:
            break
        if base[i] < counts[i]:
            base[i] += 1
            left -= 1
    rng = np.random.default_rng(seed)
    chosen = np.zeros(n, dtype=bool)
    for i in range(values.size):
        members = rng.permutation(np.flatnonzero(inverse == i))
        chosen[members[:base[i]]] = True
    return np.flatnonzero(chosen), np.flatnonzero(~chosen)
