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
    (for real models b* grows roughly like N^(1/3), so the sort dominates). The sort is one int64 sort of the
    confidences' bits with the hit in the lowest bit (`sorted_with_cumulative_hits`). When the finest partition
    (groups of tied confidences) is monotone, every coarser one is too: after 64 tries that O(N) check answers b = N.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.metrics.binning import (
    BINNINGS,
    _as_1d_float,
    _check_unit_interval,
    equal_width_edges,
    sorted_with_cumulative_hits,
)


def _equal_mass_cuts(sorted_conf: np.ndarray) -> Callable[[int], np.ndarray]:
    """Cut positions (into the sorted order) of binning.equal_mass_edges' interior edges, for any b, in O(b log N)."""
    n = sorted_conf.size
    top_position = int(np.searchsorted(sorted_conf, 1.0, side="right"))

    def cuts(b: int) -> np.ndarray:
        j = np.arange(1, b)
        boundary = j * (n // b) + np.minimum(j, n % b)  # np.array_split: the n % b larger groups come first
        inside = boundary < n
        positions = np.full(b - 1, top_position, dtype=np.int64)  # edge 1.0 beyond the data
        c = boundary[inside]
        mids = np.clip((sorted_conf[c - 1] + sorted_conf[c]) / 2.0, 0.0, 1.0)  # the edge, as binning clips it
        positions[inside] = np.searchsorted(sorted_conf, mids, side="right")
        return positions

    return cuts


def _equal_width_cuts(sorted_conf: np.ndarray) -> Callable[[int], np.ndarray]:
    def cuts(b: int) -> np.ndarray:
        # A value v is in bin i when edges[i] < v <= edges[i + 1]: bin i + 1 starts after every v <= edges[i + 1].
        return np.searchsorted(sorted_conf, equal_width_edges(b)[1:-1], side="right")

    return cuts


def _is_monotone(cum_hits: np.ndarray, positions: np.ndarray) -> bool:
    counts = np.diff(positions)
    hits = np.diff(cum_hits[positions])
    filled = counts > 0
    accuracy = hits[filled] / counts[filled]
    return bool(np.all(accuracy[1:] >= accuracy[:-1]))


# monotone data; real models usually stop far earlier).
_SWEEP_FIRST_TRIES = 64


def sweep_bins(
    confidences: Any,
    correct: Any,
    *,
    binning: str = "equal-mass",
    sorted_confidences: np.ndarray | None = None,
    cumulative_hits: np.ndarray | None = None,
) -> int:
    """The number of bins ECE_SWEEP picks: the largest b before the first b whose bin accuracies are not monotone.

    `confidences` and `correct` (0/1, or targets in [0, 1]) are 1-D of one length, numpy, torch or lists; anything
    else is an InputError. `sorted_confidences` and `cumulative_hits` (`sorted_with_cumulative_hits`), when the
    caller has them, save a sort.
    """
    if binning not in BINNINGS:
        raise InputError(f"Expected binning to be one of {', '.join(BINNINGS)}, got {binning!r}.")
    confidences = _as_1d_float(confidences, "confidences")
    correct = _check_unit_interval(_as_1d_float(correct, "correct"), "correct")
    if confidences.shape != correct.shape:
        raise InputError(
            f"Expected confidences and correct to have the same length, got {confidences.size} and {correct.size}."
        )
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
    start, end = np.array([0]), np.array([n])
    for b in range(2, n + 1):
        if b == _SWEEP_FIRST_TRIES:
            ends = np.flatnonzero(np.diff(sorted_conf) > 0) + 1  # the finest partition: one group per distinct value
            if _is_monotone(cum_hits, np.concatenate(([0], ends, [n]))):
                return n  # every coarser partition is monotone too
        if not _is_monotone(cum_hits, np.concatenate((start, cuts(b), end))):
            return b - 1
    return n
