"""Bootstrap confidence intervals for any calibration metric (percentile intervals over resampled rows)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.allocation import check_bootstrap_fits
from adacal.metrics.calibration import (
    PreparedPredictions,
    compute_prepared,
    metric_key,
    prepare_metric_inputs,
)


def check_n_resamples(n_resamples: Any, *, name: str = "n_resamples") -> int:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise InputError(f"Expected {name} to be a positive integer, got {n_resamples!r}.")
    return int(n_resamples)


def check_confidence(confidence: Any) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)):
        raise InputError(f"Expected confidence to be a number between 0 and 1, got {confidence!r}.")
    if not (math.isfinite(confidence) and 0.0 < confidence < 1.0):
        raise InputError(f"Expected confidence to be between 0 and 1 (exclusive), got {confidence!r}.")
    return float(confidence)


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"Expected seed to be a non-negative integer, got {seed!r}.")
    return int(seed)


def bootstrap_prepared(
    pred: PreparedPredictions,
    names: tuple[str, ...],
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
    n_bins: int,
    progress: Callable[[int, int], None] | None = None,
    compute: Callable[[PreparedPredictions, tuple[str, ...], int], dict[str, float]] = compute_prepared,
) -> dict[str, dict[str, float]]:
    """`bootstrap` on already validated predictions and resolved names (no checks repeated but the memory bound);
    `compute`: the metrics of one resample (`compute_confidence_metrics` for top-label confidences). The AUROC of
    correctness and the AUPRC of errors are undefined on a resample whose answers are all right (or all wrong): their
    intervals are over the other resamples (the same rows, `bootstrap_ranking`), left out when fewer than two remain."""
    from adacal.metrics.selective import RANKING_METRIC_NAMES, bootstrap_ranking

    ranking = [name for name in names if name in RANKING_METRIC_NAMES]
    if ranking:
        others = tuple(name for name in names if name not in RANKING_METRIC_NAMES)
        intervals = bootstrap_prepared(pred, others, n_resamples=n_resamples, seed=seed, confidence=confidence,
                                       n_bins=n_bins, progress=progress, compute=compute) if others else {}
        for name in ranking:
            interval = bootstrap_ranking(pred, name, n_resamples=n_resamples, seed=seed, confidence=confidence)
            if interval is not None:
                intervals[metric_key(name)] = interval
        return {metric_key(name): intervals[metric_key(name)] for name in names if metric_key(name) in intervals}
    n = pred.n_samples
    check_bootstrap_fits(n_resamples, n, len(names))
    rng = np.random.default_rng(seed)
    values = np.empty((n_resamples, len(names)), dtype=np.float64)
    for r in range(n_resamples):
        # Sorting the resampled row indices changes no metric (all are permutation-invariant) and makes the
        # gathers below cache-friendly.
        index = np.sort(rng.integers(0, n, size=n))
        values[r] = list(compute(pred.take(index), names, n_bins).values())
        if progress is not None:
            progress(r + 1, n_resamples)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha], axis=0)
    std = values.std(axis=0, ddof=1) if n_resamples > 1 else np.zeros(len(names))
    return {
        metric_key(name): {"low": float(low[i]), "high": float(high[i]), "std": float(std[i])}
        for i, name in enumerate(names)
    }


def bootstrap(
    scores: Any,
    labels: Any,
    metric_names: str | Iterable[str] | None,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    n_bins: int = DEFAULT_N_BINS,
    progress: Callable[[int, int], None] | None = None,
    scores_kind: str = "auto",
) -> dict[str, dict[str, float]]:
    """Percentile bootstrap intervals of metrics, resampling the rows (samples) with replacement.

    Args:
        scores: probabilities or logits (N, K), numpy or torch.
        labels: class indices (N,).
        metric_names: the metrics, as `resolve_metric_names` takes them (None: all).
        n_resamples: how many resamples (default 1000).
        seed: seed of `numpy.random.default_rng`: the same seed gives the same intervals.
        confidence: the interval's coverage, in (0, 1) (default 0.95).
        n_bins: the number of bins of the binned metrics (default 15).
        progress: called as progress(done, total) after each resample, or None.
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".

    Returns:
        {report key: {"low", "high", "std"}}: the (1 ∓ confidence) / 2 quantiles of the resampled values and their
        standard deviation, fractions like the metrics.

    Example:
        >>> from adacal.metrics import bootstrap
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]
        >>> interval = bootstrap(probs, [0, 1, 1, 1], "error", n_resamples=200, seed=0)["error"]
        >>> sorted(interval), interval["low"] <= 0.25 <= interval["high"]  # the sample's own error is 0.25
        (['high', 'low', 'std'], True)
    """
    # Inputs are validated and turned into probabilities once; sizes whose resampled values or bins cannot fit in
    # memory are refused before any work.
    n_resamples = check_n_resamples(n_resamples)
    seed = check_seed(seed)
    confidence = check_confidence(confidence)
    if progress is not None and not callable(progress):
        raise InputError(f"Expected progress to be a callable progress(done, total) or None, got {progress!r:.80}.")
    pred, names, n_bins = prepare_metric_inputs(scores, labels, metric_names, n_bins, scores_kind)
    return bootstrap_prepared(
        pred, names, n_resamples=n_resamples, seed=seed, confidence=confidence, n_bins=n_bins, progress=progress
    )
