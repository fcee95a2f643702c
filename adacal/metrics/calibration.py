"""Calibration metrics: ECE variants (equal-width, equal-mass, debiased, sweep), MCE, classwise ECE, NLL, Brier, error.

Every public metric is a pure function `metric(scores, labels, *, n_bins=15) -> float` that returns a fraction (not a
percentage). `scores` are probabilities or logits (N, K), numpy or torch; rows that are all in [0, 1] and sum to 1 are
taken as probabilities, anything else as logits (see `adacal.arrays.to_probs`). Inputs are validated once by
`prepare_predictions`; the math lives in private kernels that take the validated `PreparedPredictions`, so
`compute_metrics` (and the bootstrap) validate once and share the per-sample quantities across metrics.

Top-label quantities: confidence = the largest probability, prediction = its class (np.argmax: on tied maxima the
lowest class index wins), correct = prediction == label. All binning goes through `adacal.metrics.binning`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from adacal.arrays import (
    check_finite_rows,
    check_labels,
    check_score_shape,
    looks_like_probs,
    normalise_probs,
    probability_tolerance,
    within_rounding,
)
from adacal.errors import InputError
from adacal.metrics.binning import (
    BINNINGS,
    BinStatistics,
    assign_bins,
    bin_edges,
    bin_statistics,
    calibration_error,
    check_n_bins,
    equal_mass_edges,
    equal_width_edges,
    sorted_bin_statistics,
)
from adacal.metrics.binning import equal_mass_edges_of_sorted as _equal_mass_edges_of_sorted
from adacal.metrics.memory import check_bins_fit
from adacal.metrics.rows import block_rows, row_top, scan_rows
from adacal.metrics.smooth import CURVE_POINTS, SmoothReliability, smooth_ece_of, smooth_reliability_of
from adacal.registry import Registry

# Probabilities are clipped here before the log in the NLL of probability inputs (one sample costs at most ~27.6 nats).
PROB_FLOOR = 1e-12
DEBIAS_MODES = ("top-label", "marginal")


# ------------------------------------------------------------------------------------------------ validated input


_GROUPS = {"top": ("predictions", "confidences"), "scoring": ("true_log_probs", "brier_terms")}
_PER_SAMPLE = (*_GROUPS["top"], *_GROUPS["scoring"])


class PreparedPredictions:
    """Validated scores (N, K) and labels (N,), with per-sample quantities computed once, on first use, and cached.

    Build it with `prepare_predictions`. Probabilities are `adacal.arrays.normalise_probs(scores)` when the input was
    taken as probabilities (rows within rounding of 1 as given, others over their sums) and `softmax(scores)` when
    taken as logits, as `adacal.arrays.to_probs` computes them. The scores are kept in their own dtype (float16/32/64:
    no float64 copy of the matrix); blocks of rows are converted to float64 one at a time. Top-1 class, confidence,
    log p(true class) and the Brier term are computed block by block; the full (N, K) float64 `probs` matrix is only
    built when a metric needs it (the marginal debiased ECE).
    `take(index)` gives the same object for a subset or resample of the rows (used by the bootstrap) without
    validating or normalising again.
    """

    def __init__(
        self,
        scores: np.ndarray | None,
        labels: np.ndarray,
        assumed: str,
        *,
        source: tuple[PreparedPredictions, np.ndarray] | None = None,
        row_sums: np.ndarray | None = None,
        top: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self._scores = scores
        # The validation pass computed these already: float64 row sums, and each row's argmax and largest raw entry.
        self._row_sums = row_sums if assumed == "probs" else None
        self._top = top if assumed == "probs" else None
        self.labels = labels
        self.assumed = assumed
        self._source = source
        self._probs: np.ndarray | None = None
        self._cache: dict[Any, Any] = {}

    @property
    def scores(self) -> np.ndarray | None:
        """The validated (N, K) scores as given (logits or probabilities, float16/32/64); None after `take`."""
        return self._scores

    @property
    def n_samples(self) -> int:
        return int(self.labels.shape[0])

    @property
    def num_classes(self) -> int:
        if self._scores is None:
            return self._source[0].num_classes  # type: ignore[index]
        return int(self._scores.shape[1])

    @property
    def probs(self) -> np.ndarray:
        """The full (N, K) float64 probability matrix (built on first use)."""
        if self._probs is None:
            if self._scores is None:
                parent, index = self._source  # type: ignore[misc]
                self._probs = parent.probs[index]
            else:
                self._probs = np.concatenate([probs for _, probs, _, _ in self.blocks()])
        return self._probs

    def blocks(self) -> Iterator[tuple[slice, np.ndarray, np.ndarray | None, np.ndarray | None]]:
        """(rows, float64 probs, shifted logits, row sums of exp) for consecutive blocks of rows; the last two are None
        for probability inputs and for resampled predictions."""
        n, k = self.n_samples, self.num_classes
        step = block_rows(k)
        for start in range(0, n, step):
            rows = slice(start, min(start + step, n))
            if self._scores is None:
                yield rows, self.probs[rows], None, None
            else:
                yield (rows, *_normalise(self._scores[rows], self.assumed))

    def _per_sample(self, name: str) -> np.ndarray:
        if name not in self._cache:
            group = "top" if name in _GROUPS["top"] else "scoring"
            self._cache.update(_per_sample_quantities(self, group))
        return self._cache[name]

    @property
    def predictions(self) -> np.ndarray:
        """Top-1 class per sample (np.argmax of the probabilities: tied maxima go to the lowest class index)."""
        return self._per_sample("predictions")

    @property
    def confidences(self) -> np.ndarray:
        """Top-1 probability per sample (float64)."""
        return self._per_sample("confidences")

    @property
    def correct(self) -> np.ndarray:
        """1.0 where the top-1 class is the label, else 0.0."""
        if "correct" not in self._cache:
            self._cache["correct"] = (self.predictions == self.labels).astype(np.float64)
        return self._cache["correct"]

    @property
    def true_log_probs(self) -> np.ndarray:
        """log p(true class): the log-softmax of logits, or the log of probabilities clipped at PROB_FLOOR."""
        return self._per_sample("true_log_probs")

    @property
    def brier_terms(self) -> np.ndarray:
        """Σ_k (p_k − 1[y = k])² per sample, computed as Σ_k p_k² − 2 p_true + 1."""
        return self._per_sample("brier_terms")

    def edges(self, binning: str, n_bins: int) -> np.ndarray:
        """Top-label bin edges (cached: several metrics share the equal-mass edges)."""
        key = ("edges", binning, n_bins)
        if key not in self._cache:
            if binning == "equal-mass":
                self._cache[key] = _equal_mass_edges_of_sorted(self.sorted_confidences, n_bins)
            else:
                self._cache[key] = bin_edges(self.confidences, n_bins, binning)
        return self._cache[key]

    @property
    def sorted_confidences(self) -> np.ndarray:
        """The confidences in ascending order (cached: equal-mass edges of any bin count read it)."""
        self._sort_top_label()
        return self._cache["sorted_confidences"]

    @property
    def cumulative_hits(self) -> np.ndarray:
        """cum[p] = number of correct samples among the p smallest confidences, exact at the end of every group of
        tied confidences (cached; with `sorted_confidences` it gives any binning's statistics)."""
        self._sort_top_label()
        return self._cache["cumulative_hits"]

    def _sort_top_label(self) -> None:
        if "sorted_confidences" not in self._cache:
            ordered, cum = sorted_with_cumulative_hits(self.confidences, self.correct)
            self._cache["sorted_confidences"], self._cache["cumulative_hits"] = ordered, cum

    def top_label_statistics(self, binning: str, n_bins: int) -> BinStatistics:
        return sorted_bin_statistics(self.sorted_confidences, self.cumulative_hits, self.edges(binning, n_bins))

    def take(self, index: np.ndarray) -> PreparedPredictions:
        """The rows `index` (with repeats, for resampling); per-sample vectors are computed here once and indexed."""
        for name in _PER_SAMPLE:
            self._per_sample(name)
        _ = self.correct
        child = PreparedPredictions(None, self.labels[index], self.assumed, source=(self, index))
        for name in (*_PER_SAMPLE, "correct"):
            child._cache[name] = self._cache[name][index]
        return child


def _normalise(block: np.ndarray, assumed: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(float64 probs, shifted logits, row sums of exp) of a block: the operations of arrays.to_probs / softmax."""
    if assumed == "probs":
        return normalise_probs(block), None, None
    block = block.astype(np.float64, copy=False)
    shifted = block - block.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    sums = exp.sum(axis=1, keepdims=True)
    return exp / sums, shifted, sums


def _per_sample_quantities(pred: PreparedPredictions, group: str) -> dict[str, np.ndarray]:
    """One pass over blocks of rows: group "top" gives predictions and confidences, group "scoring" the true-class
    log-probabilities and Brier terms (separate, so that an ECE alone does not pay for the others)."""
    n = pred.n_samples
    if group == "top" and pred._row_sums is not None and pred._scores is not None:
        # Probabilities are the rows as given (within rounding of 1) or over their sums: dividing a row by a positive
        # constant keeps its argmax (up to ties made by rounding), so the raw rows' argmax and maximum give the top
        # class and its probability.
        top, top_values = pred._top if pred._top is not None else row_top(pred._scores)
        outside = ~within_rounding(pred._row_sums, pred.num_classes)
        # The raw maxima are read only here: they become the confidences in place (no N-sized temporary).
        pred._top = None
        confidences = np.divide(top_values, pred._row_sums, out=top_values, where=outside)
        return {"predictions": top, "confidences": confidences}
    out = {name: np.empty(n, dtype=np.int64 if name == "predictions" else np.float64) for name in _GROUPS[group]}
    for rows, probs, shifted, sums in pred.blocks():
        index = np.arange(probs.shape[0])
        if group == "top":
            top = np.argmax(probs, axis=1)
            out["predictions"][rows] = top
            out["confidences"][rows] = probs[index, top]
            continue
        label = pred.labels[rows]
        p_true = probs[index, label]
        if shifted is None:
            out["true_log_probs"][rows] = np.log(np.maximum(p_true, PROB_FLOOR))
        else:
            out["true_log_probs"][rows] = shifted[index, label] - np.log(sums[:, 0])
        out["brier_terms"][rows] = np.maximum(np.einsum("ij,ij->i", probs, probs) - 2.0 * p_true + 1.0, 0.0)
    return out


class TopLabel(NamedTuple):
    """Top-1 quantities of validated scores: confidence (float64), predicted class, 1.0/0.0 correctness (None
    without labels) and the assumed input kind ("probs" or "logits")."""

    confidences: np.ndarray
    predictions: np.ndarray
    correct: np.ndarray | None
    assumed: str


def top_label(scores: Any, labels: Any = None) -> TopLabel:
    """Validate scores (N, K) (and labels, when given) and return their top-1 confidences, predictions and
    correctness in one pass over blocks of rows: the one top-1 helper for metrics, plots and calibrators.

    Probabilities are detected and normalised as `prepare_predictions` does (rows within rounding of 1 as given, so
    tied rows stay tied); logits go through a block-wise softmax. Tied maxima predict the lowest class index.
    """
    pred = prepare_predictions(scores, labels)
    correct = pred.correct if labels is not None else None
    return TopLabel(pred.confidences, pred.predictions, correct, pred.assumed)


def prepare_predictions(scores: Any, labels: Any = None) -> PreparedPredictions:
    """Validate scores (N, K) and labels (N,) once, with the checks of `adacal.arrays.check_predictions`.

    Rows all in [0, 1] summing to 1 (`arrays.looks_like_probs`) are taken as probabilities, anything else as logits,
    as `arrays.to_probs` decides, except that the tolerance on the row sums follows the input's dtype
    (`arrays.probability_tolerance`: float16 probabilities sum to 1 only within ~1e-3); the raw logits are kept so
    that the NLL uses a log-softmax. Probability rows that sum to 1 within float64 rounding are used as given
    (`arrays.within_rounding`), so tied rows stay tied. float16/32/64 scores are not copied.
    """
    if isinstance(scores, PreparedPredictions):
        return scores
    tolerance = probability_tolerance(scores)
    checked = check_score_shape(scores, name="scores", keep_dtype=True)
    row_sums, minimum, top = scan_rows(checked)
    check_finite_rows(checked, row_sums, name="scores")
    if labels is None:  # top-1 quantities only (top_label): every sample gets label 0, and correctness is unused
        labels = np.zeros(checked.shape[0], dtype=np.int64)
    else:
        labels = check_labels(labels, n=checked.shape[0], num_classes=checked.shape[1])
    assumed = "probs" if looks_like_probs(checked, row_sums, minimum, tolerance=tolerance) else "logits"
    return PreparedPredictions(checked, labels, assumed, row_sums=row_sums, top=top)


def _check_prepared(scores: Any, labels: Any, n_bins: Any) -> tuple[PreparedPredictions, int]:
    n_bins = check_n_bins(n_bins)
    return prepare_predictions(scores, labels), n_bins


# ---------------------------------------------------------------------------------------------------- kernels


def _ece_ew(pred: PreparedPredictions, n_bins: int) -> float:
    return calibration_error(pred.top_label_statistics("equal-width", n_bins))


def _ece_em(pred: PreparedPredictions, n_bins: int) -> float:
    return calibration_error(pred.top_label_statistics("equal-mass", n_bins))


def _ece_debias(pred: PreparedPredictions, n_bins: int, mode: str = "top-label") -> float:
    if mode == "top-label":
        return calibration_error(pred.top_label_statistics("equal-mass", n_bins), "l2", debias=True)
    # Marginal: one equal-mass binning per class, the clipped squared errors averaged over classes, then the root
    # (the package's `np.mean([ce_k ** 2]) ** 0.5` with ce_k = sqrt(max(square_k, 0))).
    probs, labels = pred.probs, pred.labels
    squares = []
    for k in range(probs.shape[1]):
        column = np.ascontiguousarray(probs[:, k])
        stats = bin_statistics(column, labels == k, edges=equal_mass_edges(column, n_bins))
        squares.append(calibration_error(stats, "l2", debias=True) ** 2)
    return float(np.sqrt(np.mean(squares)))


def _mce(pred: PreparedPredictions, n_bins: int) -> float:
    return calibration_error(pred.top_label_statistics("equal-width", n_bins), "max")


def _classwise_ece(pred: PreparedPredictions, n_bins: int) -> float:
    # Kull et al. 2019: (1/K) Σ_k Σ_b |B_kb|/N · |mean p_k − frequency of k| over equal-width bins of p_k, i.e.
    # (1/K) Σ_k Σ_b |Σ_{i∈B_kb} p_ik − #{i ∈ B_kb: y_i = k}| / N. All K binnings share one bincount of K·M cells,
    # filled block by block of rows; a sample counts as a hit only in its true class's binning.
    n, k = pred.n_samples, pred.num_classes
    edges = equal_width_edges(n_bins)
    conf_sum = np.zeros(k * n_bins)
    hit_sum = np.zeros(k * n_bins)
    offsets = np.arange(k) * n_bins
    for rows, probs, _, _ in pred.blocks():
        flat = probs.ravel()
        cells = assign_bins(flat, edges).reshape(probs.shape) + offsets
        conf_sum += np.bincount(cells.ravel(), weights=flat, minlength=k * n_bins)
        true_cells = cells[np.arange(probs.shape[0]), pred.labels[rows]]
        hit_sum += np.bincount(true_cells, minlength=k * n_bins)
    return classwise_error(conf_sum, hit_sum, n, k)


def classwise_error(conf_sum: np.ndarray, hit_sum: np.ndarray, n_samples: int, num_classes: int) -> float:
    """Classwise ECE from its (class, bin) cells: Σ |Σ p_k − hits| / (N · K) (shared with the streaming meter)."""
    return float(np.abs(conf_sum - hit_sum).sum() / (n_samples * num_classes))


def _nll(pred: PreparedPredictions, n_bins: int) -> float:
    return float(-pred.true_log_probs.mean())


def _brier(pred: PreparedPredictions, n_bins: int) -> float:
    return float(pred.brier_terms.mean())


def _error(pred: PreparedPredictions, n_bins: int) -> float:
    return float(1.0 - pred.correct.mean())


# ------------------------------------------------------------------------------------------------------ sweep
#
# ECE_SWEEP, Roelofs et al. 2021, "Mitigating bias in calibration error estimation". We followed the authors' code,
# google-research/google-research caltrain/calibration_metrics.py (`em_monotonic_sweep`, `ew_monotonic_sweep`,
# `_calc_ece_postbin`): try b = 2, 3, ... bins; at the first b whose non-empty bins' accuracies are not
# monotonically non-decreasing in bin order, stop and report the L1 ECE with b − 1 bins. Differences from that code:
#   - bins follow adacal's one convention (binning.py): equal-width bins are (i/b, (i+1)/b] with 0 in the first bin
#     (the reference uses floor(conf · b), i.e. [i/b, (i+1)/b)); equal-mass bins use binning.py's edges (np.array_split
#     sizes, cut at midpoints, ties never split) where the reference assigns floor(rank · b / N) and can split ties;
#   - the reference tries b < N only; we go up to b = N and report N bins when no b violates monotonicity;
#   - the reference re-bins all N samples for every b (O(N · b*)); we sort once and read each candidate's bin sums
#     from prefix sums at b − 1 cut positions: O(N log N + Σ_{b ≤ b*} b log N) where b* is the chosen number of bins
#     (for real models b* grows roughly like N^(1/3), so the sort dominates). The sort is one int64 sort of the
#     confidences' bits with the hit in the lowest bit (`sorted_with_cumulative_hits`). When the finest partition
#     (groups of tied confidences) is monotone, every coarser one is too: after 64 tries that O(N) check answers b = N.


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
        mids = (sorted_conf[c - 1] + sorted_conf[c]) / 2.0  # the edge when a bin boundary falls at c
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


def sorted_with_cumulative_hits(confidences: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(confidences sorted ascending, cum) with cum[p] = Σ correct over the p smallest confidences, exact wherever p
    ends a group of tied confidences (the only positions binning reads: every bin boundary falls between distinct
    values).

    For 0/1 targets and confidences in [0, 2) — always, for validated predictions — one int64 sort does it: the bits
    of a non-negative double order like the double, so (bits << 1) | correct sorts by confidence and carries the hit
    along (several times faster than an argsort). Other inputs take a stable argsort.
    """
    confidences = np.ascontiguousarray(confidences, dtype=np.float64)
    n = confidences.size
    cum = np.zeros(n + 1)
    binary = np.all((correct == 0.0) | (correct == 1.0))
    if binary and n:
        bits = (confidences + 0.0).view(np.int64)  # + 0.0 turns -0.0 into 0.0
        if bits.min() >= 0 and bits.max() < (1 << 62):
            # In place: N-sized temporaries cost page faults on every call.
            keys = np.left_shift(bits, 1, out=bits)
            np.bitwise_or(keys, correct == 1.0, out=keys)
            keys.sort()
            np.cumsum(keys & 1, out=cum[1:], dtype=np.float64)
            return np.right_shift(keys, 1, out=keys).view(np.float64), cum
    order = np.argsort(confidences, kind="stable")
    np.cumsum(correct[order], out=cum[1:])
    return confidences[order], cum


# The first bin counts tried before checking the finest partition (an O(N) check that answers b = N at once for
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

    `sorted_confidences` and `cumulative_hits` (`sorted_with_cumulative_hits`), when the caller has them, save a sort.
    """
    if binning not in BINNINGS:
        raise InputError(f"Expected binning to be one of {', '.join(BINNINGS)}, got {binning!r}.")
    confidences = np.asarray(confidences, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
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


def _ece_sweep(pred: PreparedPredictions, binning: str) -> float:
    b = sweep_bins(
        pred.confidences, pred.correct, binning=binning,
        sorted_confidences=pred.sorted_confidences, cumulative_hits=pred.cumulative_hits,
    )
    return calibration_error(pred.top_label_statistics(binning, b))


def _ece_sweep_em(pred: PreparedPredictions, n_bins: int) -> float:
    return _ece_sweep(pred, "equal-mass")


def _ece_sweep_ew(pred: PreparedPredictions, n_bins: int) -> float:
    return _ece_sweep(pred, "equal-width")


# ------------------------------------------------------------------------------------------------ public API


def ece_ew(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """Expected calibration error over `n_bins` equal-width bins of the top-1 confidence (L1; Guo et al. 2017)."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _ece_ew(pred, n_bins)


def ece_em(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """ECE over `n_bins` equal-mass bins of the top-1 confidence (AdaECE; the paper's headline ECE_EM)."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _ece_em(pred, n_bins)


def ece_debias(scores: Any, labels: Any, *, n_bins: int = 15, mode: str = "top-label") -> float:
    """Debiased L2 calibration error (Kumar et al. 2019) over equal-mass bins.

    mode="top-label" (default; the ECE_DEBIAS of the AdaFocal paper) bins the top-1 confidence;
    mode="marginal" does it per class on p_k vs 1[y = k] and returns the root of the mean squared error over classes
    (what `calibration.get_calibration_error(probs, labels)` computes on continuous scores).
    """
    if mode not in DEBIAS_MODES:
        raise InputError(f"Expected mode to be one of {', '.join(DEBIAS_MODES)}, got {mode!r}.")
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _ece_debias(pred, n_bins, mode)


def ece_sweep_em(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """ECE_SWEEP with equal-mass bins (Roelofs et al. 2021); picks its own number of bins, so `n_bins` is unused."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _ece_sweep_em(pred, n_bins)


def ece_sweep_ew(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """ECE_SWEEP with equal-width bins (Roelofs et al. 2021); picks its own number of bins, so `n_bins` is unused."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _ece_sweep_ew(pred, n_bins)


def mce(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """Maximum calibration error: the largest |confidence − accuracy| over non-empty equal-width bins."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _mce(pred, n_bins)


def classwise_ece(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """Classwise ECE (Kull et al. 2019): per class k the equal-width ECE of p_k against 1[y = k], averaged over k."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    check_bins_fit(n_bins, num_classes=pred.num_classes, classwise=True)
    return _classwise_ece(pred, n_bins)


def nll(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """Mean negative log-likelihood of the true class, in nats.

    From logits it uses a stable log-softmax; from probabilities, log(max(p, 1e-12)), so one sample contributes at
    most ~27.6 nats. `n_bins` is unused (accepted so every metric has the same signature).
    """
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _nll(pred, n_bins)


def brier(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """Brier score: mean over samples of Σ_k (p_k − 1[y = k])², in [0, 2]. `n_bins` is unused."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _brier(pred, n_bins)


def error(scores: Any, labels: Any, *, n_bins: int = 15) -> float:
    """Top-1 error (tied maxima predict the lowest class index). `n_bins` is unused."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return _error(pred, n_bins)


def _ece_smooth(pred: PreparedPredictions, n_bins: int) -> float:
    return smooth_ece_of(pred.confidences, pred.correct)


def smooth_ece(scores: Any, labels: Any, *, n_bins: int = 15, bandwidth: float | None = None) -> float:
    """Smooth ECE (Błasiok & Nakkiran 2023; relplot's `smECE`) of the top-1 confidence: kernel-smoothed residuals
    with a reflected Gaussian kernel, at the automatic bandwidth σ = smECE_σ unless `bandwidth` is given.
    Binning-free, so `n_bins` is unused. See `adacal.metrics.smooth`."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    return smooth_ece_of(pred.confidences, pred.correct, bandwidth=bandwidth)


def smooth_reliability(
    scores: Any, labels: Any, *, bandwidth: float | None = None, points: int = CURVE_POINTS
) -> SmoothReliability:
    """The smoothed reliability curve of the top-1 confidence: `grid` (points in [0, 1]), `curve` (smoothed accuracy
    there), `density`, `bandwidth` (automatic by default) and `ece` (smECE at that bandwidth), for plotting."""
    pred = prepare_predictions(scores, labels)
    return smooth_reliability_of(pred.confidences, pred.correct, bandwidth=bandwidth, points=points)


def reliability(scores: Any, labels: Any, *, n_bins: int = 15, binning: str = "equal-width") -> BinStatistics:
    """Per-bin counts, mean top-1 confidence and accuracy (the data of a reliability diagram)."""
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    if binning not in BINNINGS:
        raise InputError(f"Expected binning to be one of {', '.join(BINNINGS)}, got {binning!r}.")
    return pred.top_label_statistics(binning, n_bins)


# ------------------------------------------------------------------------------------------------- registry

METRICS: Registry[float] = Registry("metric")
_KERNELS: dict[str, Callable[[PreparedPredictions, int], float]] = {}

for _name, _public, _kernel in (
    ("error", error, _error),
    ("nll", nll, _nll),
    ("brier", brier, _brier),
    ("ece-ew", ece_ew, _ece_ew),
    ("ece-em", ece_em, _ece_em),
    ("ece-debias", ece_debias, _ece_debias),
    ("ece-sweep-ew", ece_sweep_ew, _ece_sweep_ew),
    ("ece-sweep-em", ece_sweep_em, _ece_sweep_em),
    ("ece-smooth", smooth_ece, _ece_smooth),
    ("mce", mce, _mce),
    ("classwise-ece", classwise_ece, _classwise_ece),
):
    METRICS.register(_name)(_public)
    _KERNELS[_name] = _kernel

# In report order. Registry keys are hyphenated (what users type); report keys are snake_case.
METRIC_NAMES: tuple[str, ...] = tuple(_KERNELS)
# Metrics that are fractions in [0, 1] (tables show them in %); nll is in nats and brier in [0, 2].
FRACTION_METRICS = frozenset(name for name in METRIC_NAMES if name not in ("nll", "brier"))


# How tables and figures spell each metric (one spelling everywhere); JSON keys are `metric_key`, users type any of
# the registry key ("ece-em"), the JSON key ("ece_em") or the display name ("ECE-EM").
DISPLAY_NAMES: dict[str, str] = {
    "error": "Error",
    "nll": "NLL",
    "brier": "Brier",
    "ece-ew": "ECE-EW",
    "ece-em": "ECE-EM",
    "ece-debias": "ECE-DEBIAS",
    "ece-sweep-ew": "ECE-SWEEP-EW",
    "ece-sweep-em": "ECE-SWEEP-EM",
    "ece-smooth": "ECE-SMOOTH",
    "mce": "MCE",
    "classwise-ece": "Classwise-ECE",
}


def metric_key(name: str) -> str:
    """Report (JSON) key of a metric, from any accepted spelling: "ece-em", "ECE-EM", "ece_em" → "ece_em"."""
    return _canonical(name).replace("-", "_")


def display_name(name: str) -> str:
    """Table spelling of a metric, from any accepted spelling: "ece_em" → "ECE-EM"."""
    canonical = _canonical(name)
    return DISPLAY_NAMES.get(canonical, canonical.upper())


def _canonical(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def resolve_metric_names(names: str | Iterable[str] | None) -> tuple[str, ...]:
    """Metric names from "ece-em,nll", a sequence, or None (all); snake_case is accepted; unknown names are errors."""
    if names is None:
        return METRIC_NAMES
    items = names.split(",") if isinstance(names, str) else list(names)
    resolved: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise InputError(f"Expected metric names to be strings, got {item!r}.")
        name = _canonical(item)
        if not name:
            continue
        METRICS.get(name)  # raises UnknownNameError listing the choices and the closest match
        if name not in resolved:
            resolved.append(name)
    if not resolved:
        raise InputError(f"Expected at least one metric name, got {names!r}.")
    return tuple(resolved)


def compute_prepared(pred: PreparedPredictions, names: Iterable[str], n_bins: int) -> dict[str, float]:
    """Metrics of already validated predictions (names already resolved); report keys in snake_case."""
    return {metric_key(name): _KERNELS[name](pred, n_bins) for name in names}


def compute_metrics(
    scores: Any, labels: Any, *, n_bins: int = 15, names: str | Iterable[str] | None = None
) -> dict[str, float]:
    """Several metrics at once, validating the input once: {"ece_em": 0.0123, ...} (fractions; nll in nats)."""
    names = resolve_metric_names(names)
    pred, n_bins = _check_prepared(scores, labels, n_bins)
    check_bins_fit(n_bins, num_classes=pred.num_classes, classwise="classwise-ece" in names)
    return compute_prepared(pred, names, n_bins)
