"""ECE_SWEEP's choice of the number of bins (Roelofs et al. 2021, "Mitigating bias in calibration error estimation").

Adacal follows the authors' code, google-research/google-research caltrain/calibration_metrics.py (`em_monotonic_sweep`,
`ew_monotonic_sweep`, `_calc_ece_postbin`): try b = 2, 3, ... bins; at the first b whose non-empty bins' accuracies
are not monotonically non-decreasing in bin order, stop and report the L1 ECE with b − 1 bins. Differences from that
code:
  - bins follow adacal's one convention (binning.py): equal-width bins are (i/b, (i+1)/b] with 0 in the first bin
    (the reference uses floor(conf · b), i.e. [i/b, (i+1)/b)); equal-mass bins use binning.py's edges (np.array_split
    sizes, cut at midpoints, ties never split) where the reference assigns floor(rank · b / N) and can split ties;
  - the reference tries b < N only; we go up to b = N and report N bins when no b violates monotonicity;
  - the reference re-bins all N samples for every b (O(N · b*)); we sort once and read each candidate's bin sums
    from prefix sums at b − 1 cut positions: O(N log N + Σ_{b ≤ b*} b log N) where b* is the chosen number of bins
    (for real models b* grows roughly like N^(1/3), so the sort dominates), many candidates at a time in a few array
    operations. The sort is one int64 sort of the confidences' bits with the hit in the lowest bit
    (`sorted_with_cumulative_hits`). When the finest partition
    (groups of tied confidences) is monotone, every coarser one is too: after 64 tries that O(N) check answers b = N.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.metrics.binning import BINNINGS, _checked_pairs, sorted_with_cumulative_hits


def _ranks(lengths: np.ndarray) -> np.ndarray:
    """1, ..., L for each L of `lengths`, concatenated."""
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) - offsets + 1


def _equal_mass_cuts(sorted_conf: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Cut positions (into the sorted order) of binning.equal_mass_edges' interior edges for each b of an array of bin
    counts, concatenated (b − 1 per b): O(Σb log N)."""
    n = sorted_conf.size
    top_position = int(np.searchsorted(sorted_conf, 1.0, side="right"))

    def cuts(bs: np.ndarray) -> np.ndarray:
        b = np.repeat(bs, bs - 1)
        j = _ranks(bs - 1)
        boundary = j * (n // b) + np.minimum(j, n % b)  # np.array_split: the n % b larger groups come first
        inside = boundary < n
        positions = np.full(j.size, top_position, dtype=np.int64)  # edge 1.0 beyond the data
        c = boundary[inside]
        mids = np.clip((sorted_conf[c - 1] + sorted_conf[c]) / 2.0, 0.0, 1.0)  # the edge, as binning clips it
        positions[inside] = np.searchsorted(sorted_conf, mids, side="right")
        return positions

    return cuts


def _equal_width_cuts(sorted_conf: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    def cuts(bs: np.ndarray) -> np.ndarray:
        # A value v is in bin i when edges[i] < v <= edges[i + 1]: bin i + 1 starts after every v <= edges[i + 1].
        # The edges are i / b in float64, as equal_width_edges computes them, bit for bit.
        edges = _ranks(bs - 1).astype(np.float64) / np.repeat(bs, bs - 1)
        return np.searchsorted(sorted_conf, edges, side="right")

    return cuts


def _first_not_monotone(cum_hits: np.ndarray, interior: np.ndarray, bs: np.ndarray, n: int) -> int | None:
    """The first bin count of `bs` whose bins (interior cut positions of every b concatenated, as the cuts functions
    return them) have accuracies that are not monotonically non-decreasing over the non-empty bins; None if all are.
    All candidates in a few array operations."""
    offsets = np.cumsum(bs - 1) - (bs - 1)  # where each b's cuts start in `interior`
    starts = np.insert(interior, offsets, 0)  # bin starts: 0, then each cut
    ends = np.insert(interior, offsets + (bs - 1), n)  # bin ends: each cut, then n
    counts = ends - starts
    filled = counts > 0
    accuracy = (cum_hits[ends] - cum_hits[starts])[filled] / counts[filled]
    owner = np.repeat(np.arange(bs.size), bs)[filled]
    falls = (owner[1:] == owner[:-1]) & (accuracy[1:] < accuracy[:-1])
    return int(bs[owner[1:][falls].min()]) if falls.any() else None


# Candidates tried before the O(N) check of the finest partition (which answers b = N at once for
# monotone data; real models usually stop far earlier).
_SWEEP_FIRST_TRIES = 64
# At most this many bins (Σ b over the candidates) are evaluated together: bounded memory for any b*.
_SWEEP_CHUNK_BINS = 1 << 18


def sweep_bins(
    confidences: Any,
    correct: Any,
    *,
    binning: str = "equal-mass",
    sorted_confidences: np.ndarray | None = None,
    cumulative_hits: np.ndarray | None = None,
) -> int:
    """The number of bins ECE_SWEEP picks: the largest b before the first b whose bin accuracies are not monotone.

    Args:
        confidences: 1-D top-1 confidences (numpy, torch or a list).
        correct: 1-D correctness of the same length: 0/1, or targets in [0, 1].
        binning: "equal-mass" (default) or "equal-width".
        sorted_confidences: the confidences sorted ascending, when the caller has them (saves a sort).
        cumulative_hits: their cumulative hits (`sorted_with_cumulative_hits`), given with `sorted_confidences`.

    Returns:
        The number of bins b, between 1 and N.

    Example:
        >>> from adacal.metrics import sweep_bins
        >>> sweep_bins([0.2, 0.4, 0.6, 0.8], [0, 0, 1, 1])  # accuracy never falls: one bin per sample
        4
        >>> sweep_bins([0.2, 0.4, 0.6, 0.8], [1, 0, 0, 1])  # at 3 bins accuracy falls (0.5, 0.0, 1.0)
        2
    """
    if binning not in BINNINGS:
        raise InputError(f"Expected binning to be one of {', '.join(BINNINGS)}, got {binning!r}.")
    confidences, correct = _checked_pairs(confidences, correct)
    return sweep_bins_of(confidences, correct, binning, sorted_confidences, cumulative_hits)


def sweep_bins_of(
    confidences: np.ndarray,
    correct: np.ndarray,
    binning: str,
    sorted_confidences: np.ndarray | None = None,
    cumulative_hits: np.ndarray | None = None,
) -> int:
    """`sweep_bins` of validated float64 confidences and correctness (no checks)."""
    n = confidences.size
    if n <= 1:
        return 1
    if sorted_confidences is None or cumulative_hits is None:
        sorted_confidences, cumulative_hits = sorted_with_cumulative_hits(confidences, correct)
    sorted_conf, cum_hits = sorted_confidences, cumulative_hits
    cuts = _equal_mass_cuts(sorted_conf) if binning == "equal-mass" else _equal_width_cuts(sorted_conf)
    # Candidates are tried in chunks (b = 2 … 63 first, then chunks of up to _SWEEP_CHUNK_BINS bins in all), each
    # chunk in a few array operations: one Python iteration per b cost ~0.1 ms, more than the binning itself.
    first = 2
    while first <= n:
        if first == _SWEEP_FIRST_TRIES:
            starts = np.flatnonzero(np.diff(sorted_conf) > 0) + 1  # the finest partition: a group per distinct value
            if _first_not_monotone(cum_hits, starts, np.array([starts.size + 1]), n) is None:
                return n  # every coarser partition is monotone too
        last = _SWEEP_FIRST_TRIES - 1 if first < _SWEEP_FIRST_TRIES else _chunk_end(first, n)
        bs = np.arange(first, min(last, n) + 1, dtype=np.int64)
        violation = _first_not_monotone(cum_hits, cuts(bs), bs, n)
        if violation is not None:
            return violation - 1
        first = int(bs[-1]) + 1
    return n


def _chunk_end(first: int, n: int) -> int:
    """The largest b such that first + … + b stays within _SWEEP_CHUNK_BINS (at least `first`), at most n."""
    # first + ... + b = (b (b + 1) − first (first − 1)) / 2 ≤ C  ⇔  b ≤ (−1 + sqrt(1 + 8C + 4 first (first − 1))) / 2
    bound = int((-1.0 + math.sqrt(1.0 + 8.0 * _SWEEP_CHUNK_BINS + 4.0 * first * (first - 1))) / 2.0)
    return min(max(first, bound), n)
