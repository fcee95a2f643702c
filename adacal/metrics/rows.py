"""One read of a (N, K) score matrix gives everything the top-label metrics need from it: each row's argmax, its
top probability, the smallest entry and how far the row sums are from 1.

On large inputs reading the matrix from memory is the cost of every top-label metric, not the binning: validation,
probability detection and top-1 extraction all come from this single pass over blocks of rows (each block read by
several numpy reductions in turn while it is in cache), in the array's own dtype (no float64 copy of the matrix).
The float64 row sums live only in a per-block buffer: each block's confidences are divided by them there and then,
so the scan returns two N-sized vectors and no others. A float32 block is summed in float32 first (a third of the
cost): when that shows, with the float32 sum's rounding error bounded, that every row is within rounding of 1, its
rows are used as given and no float64 sum is computed. Large matrices are scanned by several threads, the
caller's among them, each claiming the next unscanned block when it is free (numpy releases the GIL inside each
block's reductions). Each row's argmax and top probability depend on that row alone, so they are the same bits
whatever the number of threads, the block size or which thread scanned which block (as is the sum deviation
whenever it exceeds the rounding tolerance).
"""


from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from adacal.arrays import rounding_tolerance
from adacal.arrays import row_sums as block_row_sums
from adacal.errors import InputError
from adacal.scores_kind import RowCounts, count_from_sums

# Per-sample quantities of probabilities (float64) are computed over blocks of about this many entries (rows ×
# classes), so that a block stays in cache and no (N, K) temporary is allocated.
BLOCK_ENTRIES = 1 << 16
# The scan reads blocks of about this many bytes: several of numpy's reductions over one block in turn, so a block
# should stay in the per-core cache between them. Much smaller blocks are slower because each reduction call has a
# fixed cost and threads scanning them mostly wait on each other for the GIL between calls; larger ones fall out of
# cache. Measured (ece_ew, 2 threads, N = 10^6, K = 100, interleaved A/B): 1 MiB blocks 92 ms float64 / 79 ms
# float32; 8 MiB (f64) / 4 MiB (f32) 101 / 83 ms; 128 KiB about twice as slow.
SCAN_BLOCK_BYTES = 1 << 20
# Threads scan only matrices of at least this many bytes (two scan blocks).
PARALLEL_MIN_BYTES = 2 * SCAN_BLOCK_BYTES
# ADACAL_NUM_THREADS caps the scan's threads (1 turns threading off); by default, the CPUs this process may use.
THREADS_VARIABLE = "ADACAL_NUM_THREADS"
_MAX_THREADS = 8

_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None


def block_rows(k: int) -> int:
    """Rows per block for rows of `k` entries."""
    return max(1, BLOCK_ENTRIES // k)


def scan_threads() -> int:
    """Threads the scan may use: $ADACAL_NUM_THREADS (a positive integer) when set, else the usable CPUs; at most 8.
    Any other value is refused (`InputError`), as `ADACAL_MEMORY_LIMIT`'s are, rather than silently ignored."""
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if text:
        threads = int(text) if text.isascii() and text.isdigit() else 0
        if threads < 1:
            raise InputError(f"Expected {THREADS_VARIABLE} to be a positive integer (such as 2), got {text!r}.")
        return min(threads, _MAX_THREADS)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, _MAX_THREADS))


def _executor() -> ThreadPoolExecutor:
    """The process's scan pool. A forked child gets a pool of its own: it inherits the parent's pool object but not
    its threads, and work submitted there would never run."""
    global _pool, _pool_pid
    if _pool is None or _pool_pid != os.getpid():
        _pool = ThreadPoolExecutor(max_workers=_MAX_THREADS, thread_name_prefix="adacal-scan")
        _pool_pid = os.getpid()
    return _pool


class RowScan(NamedTuple):
    """What one pass over a score matrix found.

    top: each row's argmax (np.argmax: tied maxima give the lowest index), int64.
    top_probs: each row's maximum as float64, divided by the row's float64 sum unless the sum is 1 within rounding
        (`adacal.arrays.within_rounding`): the top-1 probability when the rows are probabilities.
    minimum: the smallest entry.
    sum_deviation: the largest |row sum − 1| (float64 sums, as `adacal.arrays.row_sums` computes them) when that is
        above the rounding tolerance (`adacal.arrays.rounding_tolerance`); otherwise a number between it and the
        tolerance (float32 rows shown to be within rounding by their float32 sums get a bound, not their float64
        sum). NaN or Inf when an entry is NaN or Inf (they propagate into the sums) or a sum overflowed.
    counts: how many rows are probability, near-probability and percentage rows (`adacal.scores_kind.RowCounts`,
        the kind rule's input), when the scan was given a tolerance; else None.
    """

    top: np.ndarray
    top_probs: np.ndarray
    minimum: float
    sum_deviation: float
    counts: RowCounts | None = None


def scan_rows(array: np.ndarray, tolerance: float | None = None) -> RowScan:
    """Scan a 2-D float array once (see `RowScan`). The argmax, maximum and minimum are exact in any dtype; where a
    row's float64 sum is needed it equals `adacal.arrays.row_sums` bit for bit. With `tolerance` (how far from 1 a
    probability row may sum, `adacal.arrays.probability_tolerance`) the scan also keeps each row's float64 sum (in
    one N-sized vector, written where the block's sums are computed anyway) and counts the kinds of rows from them
    (`adacal.scores_kind.count_from_sums`: a few operations on the sums, and a second look only at rows whose sum is
    near 1 or 100), for the kind decision."""
    n, k = array.shape
    top = np.empty(n, dtype=np.int64)
    top_probs = np.empty(n)
    if n == 0:
        return RowScan(top, top_probs, np.inf, 0.0, None if tolerance is None else RowCounts())
    step = max(1, SCAN_BLOCK_BYTES // (k * array.itemsize))
    blocks = -(-n // step)
    threads = min(scan_threads(), blocks)
    # Each row's float64 sum, for the kind counts: allocated on the first block with a row that is not a probability
    # row (so probabilities cost nothing); 1.0 stands for the rows of blocks that are all probability rows.
    all_sums = None if tolerance is None else _RowSums(n, tolerance)
    if threads <= 1 or array.nbytes < PARALLEL_MIN_BYTES:
        found = [_scan_blocks(array, iter(range(0, n, step)), step, top, top_probs, all_sums)]
    else:
        # Blocks are claimed one at a time by whichever thread is free, and the calling thread scans too: a pool
        # thread that wakes late (an idle vCPU can take tens of ms) then costs only the blocks it did not take,
        # where fixed ranges would wait for its whole share.
        starts = _SharedStarts(range(0, n, step))
        futures = [_executor().submit(_scan_blocks, array, starts, step, top, top_probs, all_sums)
                   for _ in range(threads - 1)]
        found = [_scan_blocks(array, starts, step, top, top_probs, all_sums)]
        found += [future.result() for future in futures]
    minimum = min(low for low, _ in found)
    deviation = float(np.max([deviation for _, deviation in found]))  # NaN in any thread's blocks propagates
    counts = None
    if tolerance is not None:
        counts = (RowCounts(n, n, n, 0) if minimum >= 0.0 and deviation <= tolerance else
                  count_from_sums(array, all_sums.values(), tolerance, minimum=minimum))
    return RowScan(top, top_probs, minimum, deviation, counts)


class _RowSums:
    """The N row sums the kind counts read, allocated (as ones) when a block first needs to store its sums."""

    def __init__(self, n: int, tolerance: float):
        self.n, self.tolerance = n, tolerance
        self._values: np.ndarray | None = None
        self._lock = threading.Lock()

    def values(self) -> np.ndarray:
        if self._values is None:
            with self._lock:
                if self._values is None:
                    self._values = np.ones(self.n)
        return self._values


class _SharedStarts:
    """An iterator over block starts that several threads may draw from: each start is handed out once."""

    def __init__(self, starts: range):
        self._starts = iter(starts)
        self._lock = threading.Lock()

    def __iter__(self) -> _SharedStarts:
        return self

    def __next__(self) -> int:
        with self._lock:
            return next(self._starts)


def float32_sum_error(num_classes: int) -> float:
    """c such that a float32 row's float64 sum s64 (`adacal.arrays.row_sums`) lies within c · s32 of its float32 sum
    s32 (einsum's, in any order of additions) when every entry is non-negative: the float32 sum is off the exact sum
    by at most γ(K−1) times the sum of the entries (Higham's bound for any summation order, γ(n) = n·u / (1 − n·u),
    u = 2^-24), the float64 sum by at most γ(K−1) with u = 2^-53, and the exact sum is at most s32 / (1 − γ)."""
    n = num_classes - 1
    gamma32 = n * 2.0**-24 / (1.0 - n * 2.0**-24)
    gamma64 = n * 2.0**-53 / (1.0 - n * 2.0**-53)
    return (gamma32 + gamma64) / (1.0 - gamma32) * (1.0 + 2.0**-40)  # the last factor covers this line's rounding


def _scan_blocks(array: np.ndarray, starts: Iterator[int], step: int, top: np.ndarray,
                 top_probs: np.ndarray, all_sums: _RowSums | None = None) -> tuple[float, float]:
    """Fill the rows of `top` and `top_probs` (and of `all_sums`, when given, each row's float64 sum in blocks that
    are not all probability rows) in the blocks [start, start + step) drawn from `starts`; return
    (smallest entry, largest |row sum − 1|, or a bound on it no larger than the rounding tolerance) of those rows."""
    n, k = array.shape
    minimum, deviation = np.inf, 0.0
    rounding = rounding_tolerance(k)
    # float32 blocks of non-negative entries are first summed in float32 (a third of the cost of einsum's casting
    # float64 sum): when every row is then provably within rounding of 1 (the float32 sum's error bounded), the rows
    # are used as given, and their float64 sums, which would change nothing, are never computed. Otherwise, and for
    # other dtypes, the float64 sums decide, as `adacal.arrays.normalise_probs` does.
    sum_error = float32_sum_error(k)
    screen = array.dtype == np.float32 and sum_error < rounding
    # Per-block buffers, reused: N-sized temporaries would cost page faults on every call.
    rows_here = min(step, n)
    sums, distance = np.empty(rows_here), np.empty(rows_here)
    sums32 = np.empty(rows_here, dtype=np.float32) if screen else None
    outside = np.empty(rows_here, dtype=bool)
    # The maximum is gathered at the argmax (one flat `take` per block) rather than found by a second reduction: on
    # short rows numpy's max(axis=1) costs more than the argmax.
    flat = array.flags.c_contiguous
    offsets = np.arange(rows_here, dtype=np.int64) * k
    index = np.empty_like(offsets)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for start in starts:
            stop = min(start + step, n)
            block, rows = array[start:stop], stop - start
            # The argmax reads the block from memory, the other reductions then find it in cache: 10-20 % faster than
            # summing first (interleaved A/B, N = 10^6, K = 100, 2 threads: float32 53 -> 44 ms, float64 44 -> 39 ms),
            # as einsum's casting sum waits on memory where the argmax streams.
            block_top = top[start:stop]
            block.argmax(axis=1, out=block_top)
            block_probs = top_probs[start:stop]
            if flat:
                np.add(block_top, offsets[:rows], out=index[:rows])
                block_probs[:] = block.ravel().take(index[:rows])
            else:
                block_probs[:] = np.take_along_axis(block, block_top[:, None], axis=1)[:, 0]
            block_min = float(block.min())
            minimum = min(minimum, block_min)
            if screen and block_min >= 0.0:
                block_sums32 = np.einsum("ij->i", block, out=sums32[:rows])
                high, low = float(block_sums32.max()), float(block_sums32.min())
                # |s64 − 1| ≤ |s32 − 1| + sum_error · s32 for every row, and |s32 − 1| is largest at the extremes.
                bound = max(high - 1.0, 1.0 - low) + sum_error * high
                if bound <= rounding:  # NaN or Inf sums are not
                    deviation = max(deviation, bound)
                    continue
            block_sums = block_row_sums(block, out=sums[:rows])
            block_distance = np.abs(np.subtract(block_sums, 1.0, out=distance[:rows]), out=distance[:rows])
            block_deviation = float(block_distance.max())
            deviation = float(np.maximum(deviation, block_deviation))  # NaN propagates
            if all_sums is not None and not (block_min >= 0.0 and block_deviation <= all_sums.tolerance):
                all_sums.values()[start:stop] = block_sums
            # NaN sums are outside too: their rows fail validation later, so their quotient is never read.
            block_outside = np.logical_not(block_distance <= rounding, out=outside[:rows])
            np.divide(block_probs, block_sums, out=block_probs, where=block_outside)
    return minimum, deviation


def row_top(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's argmax and its value, for a 2-D array the caller has already validated (no checks).

    The low-level top-1 helper for hot paths (calibrator fits, OOD scores); `top_label` validates first.

    Args:
        values: a 2-D array of probabilities or logits, any float dtype.

    Returns:
        (argmax of each row, tied maxima giving the lowest index; the value there, as float64).

    Example:
        >>> import numpy as np
        >>> from adacal.metrics import row_top
        >>> top, value = row_top(np.array([[1.0, 3.0], [2.0, 2.0]]))
        >>> top.tolist(), value.tolist()
        ([1, 0], [3.0, 2.0])
    """
    # The value is gathered at the argmax, which costs less than a second reduction (max).
    top = np.argmax(values, axis=1)
    return top, np.take_along_axis(values, top[:, None], axis=1)[:, 0].astype(np.float64)
