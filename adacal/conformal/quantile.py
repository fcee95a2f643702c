"""The finite-sample conformal quantile: the ⌈(n+1)(1−α)⌉-th smallest of n calibration scores, and the checks of α
and n it needs. Its own module so that the score functions (RAPS' parameter selection) and the predictor share it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adacal.errors import InputError

_ROUNDING = 1e-9  # (n+1)(1−α) computed in floats: 100 × 0.9 must count as 90, not 90.00000000000001


def check_alpha(alpha: Any) -> float:
    """α as a float in (0, 1), else InputError (Returns: the float).

    Example:
        >>> from adacal.conformal.predictor import check_alpha
        >>> check_alpha(0.1)
        0.1
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) \
            or not 0 < float(alpha) < 1:
        raise InputError(f"Expected alpha to be a number in (0, 1), got {alpha!r}: pass e.g. alpha=0.1 for 90 % "
                         "coverage.")
    return float(alpha)


def quantile_rank(n: int, alpha: float, *, what: str = "the validation set") -> int:
    """k = ⌈(n+1)(1−α)⌉, the rank of the conformal threshold among n calibration scores; refused when k > n, i.e.
    n < 1/α − 1 (no finite threshold covers 1 − α).

    Args:
        n: the number of calibration scores.
        alpha: the miscoverage level in (0, 1).
        what: what the n scores are, for the message.

    Returns:
        k, an int in [1, n].

    Example:
        >>> from adacal.conformal import quantile_rank
        >>> quantile_rank(99, 0.1), quantile_rank(9, 0.1)
        (90, 9)
    """
    alpha = check_alpha(alpha)
    k = max(1, math.ceil((n + 1) * (1 - alpha) - _ROUNDING))
    if k > n:
        needed = math.ceil(1 / alpha - 1 - _ROUNDING)
        raise InputError(f"Expected {what} to hold at least 1/alpha - 1 = {needed} samples for alpha={alpha:g}, "
                         f"got n={n}: use more validation samples or a larger alpha.")
    return k


def conformal_quantile(calibration_scores: Any, alpha: float, *, what: str = "the validation set") -> float:
    """The split-conformal threshold: the ⌈(n+1)(1−α)⌉-th smallest of n calibration scores (numpy's "higher"
    quantile of level ⌈(n+1)(1−α)⌉/n).

    Args:
        calibration_scores: n scores (1-D).
        alpha: the miscoverage level in (0, 1).
        what: what the scores are, for the message when n < 1/α − 1.

    Returns:
        The threshold, a float.

    Example:
        >>> from adacal.conformal import conformal_quantile
        >>> conformal_quantile([0.5, 0.1, 0.4, 0.3, 0.2, 0.9, 0.8, 0.7, 0.6], alpha=0.2)
        0.8
    """
    values = np.sort(np.asarray(calibration_scores, dtype=np.float64).reshape(-1))
    return float(values[quantile_rank(values.size, alpha, what=what) - 1])
