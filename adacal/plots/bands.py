"""How far a bin's accuracy could move by chance: consistency bands and bootstrap intervals for reliability diagrams.

Both are computed for fixed bins (the edges of the diagram) by resampling, with numpy's PCG64 generator seeded by
`seed`, so the same input and seed give the same band:

- **consistency** (Bröcker & Smith 2007, "Increasing the reliability of reliability diagrams"): where the bin
  accuracies of a *perfectly calibrated* model with these confidences would fall. Each resample draws new outcomes
  y_i ~ Bernoulli(confidence_i) for every sample (the confidences, and so the bin counts, stay as observed) and takes
  each bin's accuracy. A bar outside its band is miscalibration that chance alone rarely produces.
- **bootstrap**: how uncertain the observed accuracy itself is. Each resample draws N samples with replacement and
  takes each bin's accuracy over the samples that fall in it (bins left empty by a resample are skipped for it).

The band of a bin is the [(1 − level) / 2, (1 + level) / 2] quantile pair (numpy's default, linear) of its resampled
accuracies; NaN for a bin with no samples.

Random numbers are drawn in a fixed order — resample by resample, `rng.random(N)` (consistency) or
`rng.integers(0, N, N)` (bootstrap) — so a plain loop with the same seed reproduces the band exactly.

Where the samples lie also bounds the smoothed reliability curve drawn over the bars: `smooth_coverage` (from the
confidences) or `bins_coverage` (from the bins that hold samples) mark the stretch of its grid that is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from adacal.checks import check_in_range, check_non_negative_int
from adacal.errors import InputError, unknown_name
from adacal.metrics.binning import BinStatistics, assign_bins

BAND_KINDS = ("consistency", "bootstrap")
MAX_BAND_SAMPLES = 100_000
MIN_BAND_SAMPLES = 10
# Random draws beyond this (resamples × samples) would take minutes; refuse them up front.
MAX_BAND_DRAWS = 2_000_000_000


@dataclass(frozen=True)
class ReliabilityBands:
    """Per-bin lower and upper ends (M,) of a band around the bin accuracies (fractions; NaN for empty bins)."""

    kind: str
    lower: np.ndarray
    upper: np.ndarray
    level: float
    n_samples: int
    seed: int

    @property
    def description(self) -> str:
        """The legend text: "90 % consistency band (calibrated model)" or "90 % bootstrap interval"."""
        level = f"{100 * self.level:g} %"
        if self.kind == "consistency":
            return f"{level} consistency band (calibrated model)"
        return f"{level} bootstrap interval of accuracy"


def check_band_options(kind: Any, n_samples: Any, level: Any) -> tuple[str, int, float]:
    """The band kind ("none" allowed), number of resamples and level, checked (one-sentence InputError)."""
    if kind not in (*BAND_KINDS, "none"):
        raise unknown_name("band kind (--bands)", str(kind), (*BAND_KINDS, "none"))
    if (isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer))
            or not MIN_BAND_SAMPLES <= n_samples <= MAX_BAND_SAMPLES):
        raise InputError(f"Expected band_samples (--band-samples) to be an integer between {MIN_BAND_SAMPLES} and "
                         f"{MAX_BAND_SAMPLES:,}, got {n_samples!r}.")
    level = check_in_range(level, "band_level (--band-level)", 0.0, 1.0, inclusive=False, example=" such as 0.9")
    return str(kind), int(n_samples), level


def _check_seed(seed: Any) -> int:
    return check_non_negative_int(seed, "seed")


def _prepare(confidences: Any, correct: Any, edges: Any, n_samples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    confidences = np.asarray(confidences, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.float64)
    if confidences.ndim != 1 or correct.shape != confidences.shape:
        raise InputError(f"Expected confidences and correct as two 1-D arrays of one length, got shapes "
                         f"{confidences.shape} and {correct.shape}.")
    if edges.ndim != 1 or edges.size < 2:
        raise InputError(f"Expected bin edges as a 1-D array of at least 2 values, got shape {edges.shape}.")
    if not np.all(np.isfinite(confidences)) or confidences.min(initial=0.0) < 0 or confidences.max(initial=0.0) > 1:
        raise InputError("Expected confidences to be finite probabilities in [0, 1].")
    draws = n_samples * confidences.size
    if draws > MAX_BAND_DRAWS:
        raise InputError(f"Expected band_samples (--band-samples) × samples to be at most {MAX_BAND_DRAWS:,} random "
                         f"draws, got {n_samples:,} × {confidences.size:,} = {draws:,}; lower --band-samples.")
    return confidences, correct, assign_bins(confidences, edges)


def _quantiles(accuracies: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-column quantiles ignoring NaN (a resample that left the bin empty); NaN for a column of NaN only."""
    m = accuracies.shape[1]
    lower, upper = np.full(m, np.nan), np.full(m, np.nan)
    qs = [(1.0 - level) / 2.0, (1.0 + level) / 2.0]
    for b in range(m):
        column = accuracies[:, b]
        column = column[~np.isnan(column)]
        if column.size:
            lower[b], upper[b] = np.quantile(column, qs)
    return lower, upper


def consistency_bands(
    confidences: Any, edges: Any, *, level: float = 0.9, n_samples: int = 1000, seed: int = 0
) -> ReliabilityBands:
    """Where a perfectly calibrated model's bin accuracies would fall (see the module docstring)."""
    _, n_samples, level = check_band_options("consistency", n_samples, level)
    seed = _check_seed(seed)
    confidences, _, index = _prepare(confidences, np.zeros_like(np.asarray(confidences, dtype=np.float64)), edges,
                                     n_samples)
    m = np.asarray(edges).size - 1
    counts = np.bincount(index, minlength=m)
    filled = counts > 0
    rng = np.random.default_rng(seed)
    accuracies = np.full((n_samples, m), np.nan)
    for r in range(n_samples):
        outcomes = rng.random(confidences.size) < confidences
        hits = np.bincount(index, weights=outcomes, minlength=m)
        accuracies[r, filled] = hits[filled] / counts[filled]
    lower, upper = _quantiles(accuracies, level)
    return ReliabilityBands("consistency", lower, upper, level, n_samples, seed)


def bootstrap_bands(
    confidences: Any, correct: Any, edges: Any, *, level: float = 0.9, n_samples: int = 1000, seed: int = 0
) -> ReliabilityBands:
    """Bootstrap interval of each bin's accuracy over resamples of the samples (see the module docstring)."""
    _, n_samples, level = check_band_options("bootstrap", n_samples, level)
    seed = _check_seed(seed)
    confidences, correct, index = _prepare(confidences, correct, edges, n_samples)
    m = np.asarray(edges).size - 1
    n = confidences.size
    rng = np.random.default_rng(seed)
    accuracies = np.full((n_samples, m), np.nan)
    for r in range(n_samples):
        chosen = rng.integers(0, n, n)
        bins = index[chosen]
        counts = np.bincount(bins, minlength=m)
        hits = np.bincount(bins, weights=correct[chosen], minlength=m)
        filled = counts > 0
        accuracies[r, filled] = hits[filled] / counts[filled]
    lower, upper = _quantiles(accuracies, level)
    return ReliabilityBands("bootstrap", lower, upper, level, n_samples, seed)


def reliability_bands(
    kind: str, confidences: Any, correct: Any, edges: Any, *, level: float = 0.9, n_samples: int = 1000,
    seed: int = 0,
) -> ReliabilityBands | None:
    """`consistency_bands` or `bootstrap_bands` by name; None for "none"."""
    kind, n_samples, level = check_band_options(kind, n_samples, level)
    if kind == "none":
        return None
    if kind == "consistency":
        return consistency_bands(confidences, edges, level=level, n_samples=n_samples, seed=seed)
    return bootstrap_bands(confidences, correct, edges, level=level, n_samples=n_samples, seed=seed)


def smooth_coverage(grid: Any, confidences: Any, bandwidth: float) -> np.ndarray:
    """Where along `grid` a smoothed reliability curve of `confidences` is drawn: from the lowest to the highest
    confidence (to the grid's resolution), and no farther than two bandwidths from a sample, so an empty stretch
    wider than 4σ breaks the curve. A kernel regression has a value everywhere; the figure shows it only where
    samples say something.

        >>> smooth_coverage([0.0, 0.25, 0.5, 0.75, 1.0], [0.5, 0.7], 0.05).tolist()
        [False, False, True, True, False]
    """
    grid = np.asarray(grid, dtype=np.float64)
    values = np.unique(np.asarray(confidences, dtype=np.float64))
    if grid.size == 0 or values.size == 0:
        return np.zeros(grid.shape, dtype=bool)
    half_step = float(np.max(np.diff(grid), initial=0.0)) / 2.0
    above = np.clip(np.searchsorted(values, grid), 0, values.size - 1)
    below = np.clip(above - 1, 0, values.size - 1)
    nearest = np.minimum(np.abs(grid - values[above]), np.abs(grid - values[below]))
    inside = (grid >= values[0] - half_step) & (grid <= values[-1] + half_step)
    return inside & (nearest <= max(2.0 * float(bandwidth), half_step))


def bins_coverage(grid: np.ndarray, stats: BinStatistics) -> np.ndarray:
    """Where along `grid` the bins that hold samples lie (the coverage of a panel built without its samples)."""
    edges, counts = np.asarray(stats.edges, dtype=np.float64), np.asarray(stats.counts)
    half_step = float(np.max(np.diff(grid), initial=0.0)) / 2.0
    covered = np.zeros(grid.shape, dtype=bool)
    for i in np.flatnonzero(counts > 0):
        covered |= (grid >= edges[i] - half_step) & (grid <= edges[i + 1] + half_step)
    return covered
