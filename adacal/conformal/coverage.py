"""How prediction sets did on labelled rows: coverage with its Clopper–Pearson interval, set sizes, and coverage by
set size and by class."""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.arrays import check_labels
from adacal.errors import InputError

__all__ = ["clopper_pearson", "coverage_report"]


def clopper_pearson(successes: int, trials: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper–Pearson) binomial interval of a proportion.

    Args:
        successes: k, in [0, trials].
        trials: n > 0.
        confidence: the interval's level (default 0.95).

    Returns:
        (low, high); low is 0 when k = 0 and high is 1 when k = n.

    Example:
        >>> from adacal.conformal import clopper_pearson
        >>> low, high = clopper_pearson(9, 10)
        >>> round(low, 4), round(high, 4)
        (0.555, 0.9975)
    """
    from scipy.stats import beta

    tail = (1 - confidence) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(beta.ppf(1 - tail, successes + 1, trials - successes))
    return low, high


def _stratum(covered: np.ndarray) -> dict[str, Any]:
    return {"n": int(covered.size), "coverage": float(covered.mean()) if covered.size else None}


def coverage_report(sets: Any, labels: Any, *, confidence: float = 0.95) -> dict[str, Any]:
    """Empirical coverage and set sizes of boolean prediction sets on labelled rows, as JSON types.

    Args:
        sets: bool (N, K), True where a class is in a row's set (`ConformalPredictor.predict_sets`).
        labels: the true classes (N,).
        confidence: the level of the coverage interval.

    Returns:
        A dict: `n`, `coverage` and `coverage_interval` ([low, high], Clopper–Pearson), `mean_set_size`,
        `median_set_size`, `size_distribution` ({size: rows}, sizes as strings), `coverage_by_size`
        ({size: {n, coverage}}), `coverage_by_class` ({class: {n, coverage}}, coverage None for a class without
        rows), `worst_class` ({class, n, coverage}: the lowest coverage among classes with rows), `singleton_rate`,
        `empty_rate`.

    Example:
        >>> import numpy as np
        >>> from adacal.conformal import coverage_report
        >>> sets = np.array([[True, False], [True, True], [False, False], [False, True]])
        >>> report = coverage_report(sets, [0, 1, 0, 0])
        >>> report["coverage"], report["mean_set_size"], report["singleton_rate"], report["empty_rate"]
        (0.5, 1.0, 0.5, 0.25)
    """
    mask = np.asarray(sets)
    if mask.ndim != 2 or mask.dtype != np.bool_:
        raise InputError(f"Expected sets to be a boolean (N, K) array, got dtype {mask.dtype} and shape {mask.shape}:"
                         " pass what predict_sets returns.")
    if not mask.shape[0]:
        raise InputError("Expected sets to hold at least one row, got none.")
    if not 0 < confidence < 1:
        raise InputError(f"Expected confidence to be in (0, 1), got {confidence!r}: pass e.g. confidence=0.95.")
    truth = check_labels(labels, n=mask.shape[0], num_classes=mask.shape[1])
    covered = mask[np.arange(mask.shape[0]), truth]
    sizes = mask.sum(axis=1)
    hits = int(covered.sum())
    by_class = {str(label): _stratum(covered[truth == label]) for label in range(mask.shape[1])}
    present = [(entry["coverage"], int(label)) for label, entry in by_class.items() if entry["n"]]
    worst_coverage, worst_label = min(present)
    distribution = {str(int(size)): int(count) for size, count in zip(*np.unique(sizes, return_counts=True))}
    return {
        "n": int(mask.shape[0]),
        "coverage": hits / mask.shape[0],
        "coverage_interval": list(clopper_pearson(hits, mask.shape[0], confidence=confidence)),
        "confidence": float(confidence),
        "mean_set_size": float(sizes.mean()),
        "median_set_size": float(np.median(sizes)),
        "size_distribution": distribution,
        "coverage_by_size": {size: _stratum(covered[sizes == int(size)]) for size in distribution},
        "coverage_by_class": by_class,
        "worst_class": {"class": worst_label, **by_class[str(worst_label)]},
        "singleton_rate": float((sizes == 1).mean()),
        "empty_rate": float((sizes == 0).mean()),
    }
