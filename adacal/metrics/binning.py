"""The only code in adacal that assigns confidences to bins: metrics, reliability diagrams and AdaFocal all use it.

Edge convention (one for every binning): bin i covers (edges[i], edges[i + 1]]; the first bin is closed below, so it
also holds edges[0] = 0 and anything smaller, and the last bin holds anything above its lower edge. A confidence of
exactly 0 is therefore in bin 0 and exactly 1 in bin n_bins - 1: no hidden extra bin. This is the convention of Kumar
et al.'s `uncertainty-calibration` package (bisect-left on the upper edges), so our ECEs agree with it exactly.

Equal-mass edges are the midpoints between neighbouring sorted confidences at the `np.array_split` cut points, again
as in that package. Without ties every bin holds N // n_bins or N // n_bins + 1 samples. A bin is an interval of
confidence, so tied confidences are never split between bins: with ties, counts can be uneven and some bins empty
(zero width). An empty bin has count 0 and contributes nothing; its mean confidence and accuracy are reported as 0.

The public helpers take 1-D numpy arrays, torch tensors (any dtype, bfloat16 included) or lists; strings, complex
numbers, NaN or Inf, a meta tensor, `correct` outside [0, 1], and edges that are not a sorted 1-D array of at least two
finite values are an InputError naming the input.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from adacal.arrays import to_numpy
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.allocation import check_bins_fit

BINNINGS = ("equal-width", "equal-mass")


def _real_float64(values: Any, name: str) -> np.ndarray:
    """`values` (numpy, torch of any dtype — bfloat16 included — or a list) as a float64 array; strings, objects,
    complex numbers or a meta tensor are an InputError naming it."""
    array = to_numpy(values)  # torch: detached, on the CPU, floats as float64; the meta device is refused
    if array.dtype.kind not in "biuf":
        raise InputError(f"Expected {name} to be real numbers, got dtype {array.dtype}.")
    return np.asarray(array, dtype=np.float64)


def _as_1d_float(values: Any, name: str) -> np.ndarray:
    """`values` as a finite 1-D float64 array (`_real_float64`); NaN or Inf, or another shape, is an InputError."""
    array = _real_float64(values, name)
    if array.ndim != 1:
        raise InputError(f"Expected {name} to be 1-D, got shape {array.shape}.")
    if not np.isfinite(array).all():
        raise InputError(f"Expected {name} to be finite, found {int((~np.isfinite(array)).sum())} NaN or Inf value(s).")
    return array


def _check_unit_interval(array: np.ndarray, name: str) -> np.ndarray:
    """Raise unless every value of a finite float array lies in [0, 1]."""
    if array.size and (array.min() < 0.0 or array.max() > 1.0):
        raise InputError(f"Expected {name} to be in [0, 1], got values from {array.min():.6g} to {array.max():.6g}.")
    return array


def _checked_pairs(confidences: Any, correct: Any) -> tuple[np.ndarray, np.ndarray]:
    """Confidences and correctness (`correct` in [0, 1]) as finite 1-D float64 arrays of one length."""
    confidences = _as_1d_float(confidences, "confidences")
    correct = _check_unit_interval(_as_1d_float(correct, "correct"), "correct")
    if confidences.shape != correct.shape:
        raise InputError(
            f"Expected confidences and correct to have the same length, got {confidences.size} and {correct.size}."
        )
    return confidences, correct


def _check_edges(edges: Any) -> np.ndarray:
    """Bin edges as a float64 array: 1-D, at least two finite values, non-decreasing (zero-width bins are allowed)."""
    array = _real_float64(edges, "edges")
    if array.ndim != 1 or array.size < 2:
        raise InputError(f"Expected edges to be 1-D with at least 2 values (one bin), got shape {array.shape}.")
    if not np.isfinite(array).all():
        raise InputError("Expected edges to be finite, found NaN or Inf.")
    if (np.diff(array) < 0).any():
        raise InputError("Expected edges to be sorted in non-decreasing order, got a decreasing step.")
    return array


# Up to this many bins need at most ~160 MiB: no need to look at the free memory (check_n_bins runs often).
_BINS_WITHOUT_MEMORY_CHECK = 1 << 20


def check_n_bins(n_bins: Any, *, name: str = "n_bins") -> int:
    """A positive integer number of bins whose statistics fit in memory (huge values are refused before allocating)."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise InputError(f"Expected {name} to be a positive integer, got {n_bins!r}.")
    if n_bins > _BINS_WITHOUT_MEMORY_CHECK:
        check_bins_fit(int(n_bins), name=name)
    return int(n_bins)


def equal_width_edges(n_bins: int) -> np.ndarray:
    """Equal-width bin edges 0, 1/M, ..., 1.

    Args:
        n_bins: the number of bins M, a positive integer.

    Returns:
        A float64 array of M + 1 edges, computed as i / M (not linspace) to match the published reference bit for bit.

    Example:
        >>> from adacal.metrics import equal_width_edges
        >>> equal_width_edges(4).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    n_bins = check_n_bins(n_bins)
    return np.arange(n_bins + 1, dtype=np.float64) / n_bins


def equal_mass_edges(confidences: Any, n_bins: int) -> np.ndarray:
    """Edges that split the sorted confidences into `n_bins` groups of equal count (±1), cut at midpoints.

    Args:
        confidences: 1-D confidences (numpy, torch or a list).
        n_bins: the number of bins, a positive integer.

    Returns:
        A float64 array of n_bins + 1 edges from 0 to 1. Tied confidences are never split, so bins may be empty.

    Example:
        >>> from adacal.metrics import equal_mass_edges
        >>> equal_mass_edges([0.25, 0.5, 0.75, 1.0], 2).tolist()  # cut halfway between 0.5 and 0.75
        [0.0, 0.625, 1.0]
    """
    n_bins = check_n_bins(n_bins)
    return equal_mass_edges_of_sorted(np.sort(_as_1d_float(confidences, "confidences")), n_bins)


def equal_mass_edges_of_sorted(sorted_conf: np.ndarray, n_bins: int) -> np.ndarray:
    """`equal_mass_edges` of confidences already sorted ascending (float64): O(n_bins), no sort."""
    n = sorted_conf.size
    edges = np.empty(n_bins + 1, dtype=np.float64)
    edges[0], edges[-1] = 0.0, 1.0
    # np.array_split puts the n % n_bins larger groups first; cuts[i] is where bin i + 1 starts.
    j = np.arange(1, n_bins, dtype=np.int64)
    cuts = j * (n // n_bins) + np.minimum(j, n % n_bins)
    inside = (cuts > 0) & (cuts < n)
    interior = np.where(cuts >= n, 1.0, 0.0)
    interior[inside] = (sorted_conf[cuts[inside] - 1] + sorted_conf[cuts[inside]]) / 2.0
    # Values outside [0, 1] (a probability 1 + ε within rounding, or any scores) would put a midpoint outside the
    # fixed end edges 0 and 1 and unsort the edges; clipped, such values fall in the end bins as in every binning.
    edges[1:-1] = np.clip(interior, 0.0, 1.0)
    return edges


def assign_bins(values: Any, edges: Any) -> np.ndarray:
    """Bin index of each value: bin i covers (edges[i], edges[i + 1]], the first bin also holds edges[0].

    Args:
        values: 1-D values to place.
        edges: bin edges, 1-D, sorted, at least two.

    Returns:
        An int array of bin indices in [0, len(edges) - 2]; values outside the edges go to the end bins.

    Example:
        >>> from adacal.metrics import assign_bins
        >>> assign_bins([0.0, 0.5, 0.75, 1.0], [0.0, 0.5, 1.0]).tolist()
        [0, 0, 1, 1]
    """
    return bin_index(_as_1d_float(values, "values"), _check_edges(edges))


def bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """`assign_bins` of float64 values and edges already checked (no checks: for validated probabilities)."""
    return np.searchsorted(edges[1:-1], values, side="left")


def bin_edges(confidences: Any, n_bins: int, binning: str) -> np.ndarray:
    if binning == "equal-width":
        return equal_width_edges(n_bins)
    if binning == "equal-mass":
        return equal_mass_edges(confidences, n_bins)
    raise InputError(f"Expected binning to be one of {', '.join(BINNINGS)}, got {binning!r}.")


@dataclass(frozen=True)
class BinStatistics:
    """Per-bin counts, mean confidence and accuracy, with the edges that defined the bins (see `bin_statistics`).

    Args:
        edges: the n_bins + 1 bin edges.
        counts: samples per bin.
        mean_confidence: mean confidence per bin (0 for an empty bin).
        accuracy: mean correctness per bin (0 for an empty bin).

    Example:
        >>> from adacal.metrics import bin_statistics
        >>> stats = bin_statistics([0.8, 0.8, 0.9, 0.9], [1, 1, 1, 0], n_bins=5)
        >>> stats.counts.tolist(), stats.gaps.round(4).tolist()  # gap = mean confidence - accuracy
        ([0, 0, 0, 2, 2], [0.0, 0.0, 0.0, -0.2, 0.4])
    """

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


NORMS = ("l1", "l2", "max")


def calibration_error(stats: BinStatistics, norm: str = "l1", *, debias: bool = False) -> float:
    """The calibration error of binned statistics: the one kernel every binned ECE in adacal uses.

    Args:
        stats: per-bin statistics (`bin_statistics`).
        norm: "l1" for Σ_b n_b/N |C_b − A_b| (ECE), "l2" for sqrt(Σ_b n_b/N (C_b − A_b)²), "max" for the largest
            |C_b − A_b| over non-empty bins (MCE).
        debias: with norm="l2" only, subtract each bin's sampling variance A_b(1 − A_b)/(n_b − 1) (Kumar et al.
            2019); bins with n_b < 2 are left out and a negative total counts as 0.

    Returns:
        The error as a float; empty bins contribute nothing and no samples at all give 0.0.

    Example:
        >>> from adacal.metrics import bin_statistics, calibration_error
        >>> stats = bin_statistics([0.8, 0.8, 0.9, 0.9], [1, 1, 1, 0], n_bins=5)
        >>> round(calibration_error(stats), 4), round(calibration_error(stats, "max"), 4)  # (0.2 + 0.4) / 2, 0.4
        (0.3, 0.4)
    """
    if norm not in NORMS:
        raise InputError(f"Expected norm to be one of {', '.join(NORMS)}, got {norm!r}.")
    if debias and norm != "l2":
        raise InputError(f"Expected norm='l2' with debias=True, got norm={norm!r}.")
    gaps = stats.gaps
    if norm == "max":
        filled = np.abs(gaps[stats.counts > 0])
        return float(filled.max()) if filled.size else 0.0
    if norm == "l1":
        return float(np.dot(stats.weights, np.abs(gaps)))
    if not debias:
        return float(np.sqrt(np.dot(stats.weights, gaps**2)))
    # The debiased estimator is `unbiased_square_ce` of Kumar et al.'s uncertainty-calibration package.
    return float(np.sqrt(max(debiased_square_error(stats), 0.0))) + 0.0  # + 0.0: never -0.0


def top1_ece(confidences: np.ndarray, correct: np.ndarray, *, n_bins: int, binning: str) -> float:
    """Top-label ECE of top-1 confidences and 0/1 hits: `bin_statistics` then `calibration_error` (the L1 norm), for
    callers that already hold the top-1 vectors (temperature scaling's grid objective evaluates it ~100 times)."""
    return calibration_error(bin_statistics(confidences, correct, n_bins=n_bins, binning=binning))


def debiased_square_error(stats: BinStatistics) -> float:
    """Σ_b n_b/N [(C_b − A_b)² − A_b(1 − A_b)/(n_b − 1)] over bins with n_b ≥ 2 (may be negative)."""
    counts = stats.counts
    usable = counts >= 2
    accuracy = stats.accuracy[usable]
    terms = stats.gaps[usable] ** 2 - accuracy * (1.0 - accuracy) / (counts[usable] - 1.0)
    return float(np.dot(stats.weights[usable], terms))


def sorted_bin_statistics(sorted_conf: np.ndarray, cumulative_hits: np.ndarray, edges: Any) -> BinStatistics:
    """`bin_statistics` from the confidences sorted ascending and the cumulative number of hits along that order
    (`sorted_with_cumulative_hits`): O(n_bins log N) searches plus one segmented sum, no per-sample bin
    index.

    Same bins as `assign_bins` ((lower, upper], first bin closed below, out-of-range values in the end bins): bin i
    ends after every confidence ≤ edges[i + 1], so every boundary falls between distinct values, where the cumulative
    hits are exact. Each bin's confidence sum is a contiguous segment of the sorted confidences.
    """
    edges = np.asarray(edges, dtype=np.float64)
    m, n = edges.size - 1, sorted_conf.size
    ends = np.concatenate((np.searchsorted(sorted_conf, edges[1:-1], side="right"), [n]))
    starts = np.concatenate(([0], ends[:-1]))
    counts = (ends - starts).astype(np.int64)
    hits = cumulative_hits[ends] - cumulative_hits[starts]
    conf_sum = np.zeros(m)
    filled = counts > 0
    if filled.any():
        # reduceat sums from each filled bin's start to the next filled bin's start, i.e. exactly that bin.
        conf_sum[filled] = np.add.reduceat(sorted_conf, starts[filled])
    safe = np.maximum(counts, 1)
    return BinStatistics(
        edges=edges,
        counts=counts,
        mean_confidence=np.where(filled, conf_sum / safe, 0.0),
        accuracy=np.where(filled, hits / safe, 0.0),
    )


def sorted_with_cumulative_hits(confidences: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(confidences sorted ascending, cum) with cum[p] = Σ correct over the p smallest confidences (`correct`: 0/1
    floats, booleans, or any targets in [0, 1]), exact wherever p ends a group of tied confidences (the only positions
    binning reads: every bin boundary falls between distinct values).

    For 0/1 targets and confidences in [0, 2) — always, for validated predictions — one int64 sort does it: the bits
    of a non-negative double order like the double, so (bits << 1) | correct sorts by confidence and carries the hit
    along (several times faster than an argsort). Other inputs take a stable argsort.
    """
    confidences = np.ascontiguousarray(confidences, dtype=np.float64)
    n = confidences.size
    cum = np.zeros(n + 1)
    hits = correct if correct.dtype == np.bool_ else None
    if hits is None and np.all((correct == 0.0) | (correct == 1.0)):
        hits = correct == 1.0
    if hits is not None and n:
        bits = (confidences + 0.0).view(np.int64)  # + 0.0 turns -0.0 into 0.0
        if bits.min() >= 0 and bits.max() < (1 << 62):
            # In place: N-sized temporaries cost page faults on every call.
            keys = np.left_shift(bits, 1, out=bits)
            np.bitwise_or(keys, hits, out=keys)
            keys.sort()
            # Counted in int64 in cum's own memory, then converted in place: exact either way (integers below 2^53),
            # and 4x faster than numpy's cumsum casting each uint8 to float64. copyto between two views of one buffer
            # is well defined: numpy detects the overlap (and buffers if it must).
            counts = cum[1:].view(np.int64)
            np.cumsum(_lowest_bits(keys), out=counts)
            np.copyto(cum[1:], counts, casting="unsafe")
            return np.right_shift(keys, 1, out=keys).view(np.float64), cum
    correct = np.asarray(correct, dtype=np.float64)
    order = np.argsort(confidences, kind="stable")
    np.cumsum(correct[order], out=cum[1:])
    return confidences[order], cum


def _lowest_bits(keys: np.ndarray) -> np.ndarray:
    """keys & 1 of a contiguous native int64 array as uint8, read from the byte that holds each key's lowest bit (an
    N-byte result instead of an N-sized int64 temporary)."""
    lowest_byte = 0 if sys.byteorder == "little" else 7
    return np.bitwise_and(keys.view(np.uint8)[lowest_byte::8], 1)


def bin_statistics(
    confidences: Any,
    correct: Any,
    *,
    n_bins: int = DEFAULT_N_BINS,
    binning: str = "equal-width",
    edges: Any = None,
) -> BinStatistics:
    """Counts, mean confidence and accuracy of `confidences` and `correct` in bins.

    Args:
        confidences: 1-D confidences (numpy, torch or a list).
        correct: 1-D correctness of the same length: 0/1, or any target in [0, 1].
        n_bins: the number of bins (default 15).
        binning: "equal-width" (default) or "equal-mass".
        edges: explicit bin edges, overriding `n_bins` and `binning` (e.g. bins fitted elsewhere).

    Returns:
        A `BinStatistics`.

    Example:
        >>> from adacal.metrics import bin_statistics
        >>> stats = bin_statistics([0.8, 0.8, 0.9, 0.9], [1, 1, 1, 0], n_bins=5)
        >>> stats.counts.tolist(), stats.accuracy.tolist()
        ([0, 0, 0, 2, 2], [0.0, 0.0, 0.0, 1.0, 0.5])
    """
    confidences, correct = _checked_pairs(confidences, correct)
    edges = bin_edges(confidences, n_bins, binning) if edges is None else _check_edges(edges)
    m = edges.size - 1
    index = bin_index(confidences, edges)
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
