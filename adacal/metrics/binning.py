"""The only code in adacal that assigns confidences to bins: metrics, reliability diagrams and AdaFocal all use it.

Edge convention (one for every binning): bin i covers (edges[i], edges[i + 1]]; the first bin is closed below, so it
also holds edges[0] = 0 and anything smaller, and the last bin holds anything above its lower edge. A confidence of
exactly 0 is therefore in bin 0 and exactly 1 in bin n_bins - 1: no hidden extra bin. This is the convention of Kumar
et al.'s `uncertainty-calibration` package (bisect-left on the upper edges), so our ECEs agree with it exactly.

Equal-mass edges are the midpoints between neighbouring sorted confidences at the `np.array_split` cut points, again
as in that package. Without ties every bin holds N // n_bins or N // n_bins + 1 samples. A bin is an interval of
confidence, so tied confidences are never split between bins: with ties, counts can be uneven and some bins empty
(zero width). An empty bin has count 0 and contributes nothing; its mean confidence and accuracy are reported as 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from adacal.errors import InputError

BINNINGS = ("equal-width", "equal-mass")


def _as_1d_float(values: Any, name: str) -> np.ndarray:
    if hasattr(values, "detach"):
        values = values.detach().cpu().double().numpy()  # numpy has no bf16
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise InputError(f"Expected {name} to be 1-D, got shape {array.shape}.")
    return array


def check_n_bins(n_bins: Any) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise InputError(f"Expected n_bins to be a positive integer, got {n_bins!r}.")
    return int(n_bins)


def equal_width_edges(n_bins: int) -> np.ndarray:
    """Edges 0, 1/M, ..., 1 computed as i / M (not linspace) so they match the published reference bit for bit."""
    n_bins = check_n_bins(n_bins)
    return np.arange(n_bins + 1, dtype=np.float64) / n_bins


def equal_mass_edges(confidences: Any, n_bins: int) -> np.ndarray:
    """Edges that split the sorted confidences into `n_bins` groups of equal count (±1), cut at midpoints."""
    n_bins = check_n_bins(n_bins)
    sorted_conf = np.sort(_as_1d_float(confidences, "confidences"))
    n = sorted_conf.size
    edges = np.empty(n_bins + 1, dtype=np.float64)
    edges[0], edges[-1] = 0.0, 1.0
    # np.array_split puts the n % n_bins larger groups first; cuts[i] is where bin i + 1 starts.
    sizes = np.full(n_bins, n // n_bins)
    sizes[: n % n_bins] += 1
    cuts = np.cumsum(sizes)[:-1]
    inside = (cuts > 0) & (cuts < n)
    interior = np.where(cuts >= n, 1.0, 0.0)
    interior[inside] = (sorted_conf[cuts[inside] - 1] + sorted_conf[cuts[inside]]) / 2.0
    edges[1:-1] = interior
    return edges


def assign_bins(values: Any, edges: Any) -> np.ndarray:
    """Bin index of each value under the (lower, upper] convention; out-of-range values go to the end bins."""
    values = _as_1d_float(values, "values")
    edges = np.asarray(edges, dtype=np.float64)
    return np.searchsorted(edges[1:-1], values, side="left")


def bin_edges(confidences: Any, n_bins: int, binning: str) -> np.ndarray:
    if binning == "equal-width":
        return equal_width_edges(n_bins)
    if binning == "equal-mass":
        return equal_mass_edges(confidences, n_bins)
    raise InputError(f"Expected binning to be one of {', '.join(BINNINGS)}, got {binning!r}.")


@dataclass(frozen=True)
class BinStatistics:
    """Per-bin counts, mean confidence and accuracy (0 for empty bins), with the edges that defined the bins."""

    edges: np.ndarray
    counts: np.ndarray
    mean_confidence: np.ndarray
    accuracy: np.ndarray

    @property
    def n_bins(self) -> int:
        return int(self.counts.size)

    @property
    def gaps(self) -> np.ndarray:
        """Mean confidence minus accuracy per bin: > 0 means over-confident (0 for empty bins)."""
        return self.mean_confidence - self.accuracy

    @property
    def weights(self) -> np.ndarray:
        total = self.counts.sum()
        return self.counts / total if total else np.zeros_like(self.mean_confidence)

    def to_dict(self) -> dict[str, list[float] | list[int]]:
        return {
            "edges": self.edges.tolist(),
            "counts": self.counts.astype(int).tolist(),
            "mean_confidence": self.mean_confidence.tolist(),
            "accuracy": self.accuracy.tolist(),
        }


def bin_statistics(
    confidences: Any,
    correct: Any,
    *,
    n_bins: int = 15,
    binning: str = "equal-width",
    edges: Any = None,
) -> BinStatistics:
    """Statistics of `correct` (0/1, or any target in [0, 1]) against `confidences` in bins.

    `edges` overrides `n_bins`/`binning` (e.g. to place new samples into bins fitted elsewhere).
    """
    confidences = _as_1d_float(confidences, "confidences")
    correct = _as_1d_float(correct, "correct")
    if confidences.shape != correct.shape:
        raise InputError(
            f"Expected confidences and correct to have the same length, got {confidences.size} and {correct.size}."
        )
    edges = bin_edges(confidences, n_bins, binning) if edges is None else np.asarray(edges, dtype=np.float64)
    m = edges.size - 1
    index = assign_bins(confidences, edges)
    counts = np.bincount(index, minlength=m).astype(np.int64)
    conf_sum = np.bincount(index, weights=confidences, minlength=m)
    correct_sum = np.bincount(index, weights=correct, minlength=m)
    safe = np.maximum(counts, 1)
    return BinStatistics(
        edges=edges,
        counts=counts,
        mean_confidence=np.where(counts > 0, conf_sum / safe, 0.0),
        accuracy=np.where(counts > 0, correct_sum / safe, 0.0),
    )
