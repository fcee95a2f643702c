"""Validated predictions: the one place metrics check their input and extract top-1 quantities.

`prepare_predictions(scores, labels)` validates scores (N, K) (probabilities or logits, numpy or torch) and labels
(N,) once and returns a `PreparedPredictions` that computes the per-sample quantities every metric reads (top-1
class and confidence, correctness, log p(true class), Brier terms) on first use, block by block of rows, and caches
them; `compute_metrics` and the bootstrap share one across metrics. `top_label` is the one top-1 helper for metrics,
plots and calibrators, `row_top` its low-level form for arrays already validated. `metric_function` turns a kernel on
validated predictions into a public metric `metric(scores, labels, *, n_bins=DEFAULT_N_BINS) -> float`.

Top-label quantities: confidence = the largest probability, prediction = its class (np.argmax: on tied maxima the
lowest class index wins), correct = prediction == label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from adacal.arrays import (
    binary_score_columns,
    check_finite_rows,
    check_labels,
    check_score_shape,
    normalise_probs,
    one_score_per_sample,
    probability_tolerance,
)
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.binning import (
    BinStatistics,
    bin_edges,
    check_n_bins,
    sorted_bin_statistics,
    sorted_with_cumulative_hits,
)
from adacal.metrics.binning import equal_mass_edges_of_sorted as _equal_mass_edges_of_sorted
# row_top is re-exported: this module is where the top-1 helpers live (adacal.metrics.calibration and .ood import it).
from adacal.metrics.rows import block_rows, row_top, scan_rows  # noqa: F401
from adacal.scores_kind import API_WORDS, RowCounts, binary_values, check_scores_kind, decide_binary, decide_matrix

# Probabilities are clipped here before the log in the NLL of probability inputs (one sample costs at most ~27.6 nats).
PROB_FLOOR = 1e-12

_GROUPS = {"top": ("predicted_labels", "confidences"), "scoring": ("true_log_probs", "brier_terms")}
_PER_SAMPLE = (*_GROUPS["top"], *_GROUPS["scoring"])


class PreparedPredictions:
    """Validated scores (N, K) and labels (N,), with per-sample quantities computed once, on first use, and cached.

    Build it with `prepare_predictions`; `compute_metrics` and `bootstrap` share one between all their metrics.

    Args:
        scores: the validated (N, K) scores, in their own dtype (None for the rows taken by `take`).
        labels: int64 class indices (N,).
        assumed: how the scores are read, "probs" or "logits".

    Example:
        >>> from adacal.metrics import prepare_predictions
        >>> pred = prepare_predictions([[0.9, 0.1], [0.2, 0.8]], [0, 0])
        >>> pred.confidences.tolist(), pred.predicted_labels.tolist(), pred.correct.tolist()
        ([0.9, 0.8], [0, 1], [1.0, 0.0])
    """

    # Probabilities are `adacal.arrays.normalise_probs(scores)` when the input was taken as probabilities (rows within
    # rounding of 1 as given, others over their sums) and `softmax(scores)` when taken as logits, as
    # `adacal.arrays.to_probs` computes them. The scores are kept in their own dtype (float16/32/64: no float64 copy of
    # the matrix); blocks of rows are converted to float64 one at a time. Top-1 class, confidence, log p(true class)
    # and the Brier term are computed block by block; the full (N, K) float64 `probs` matrix is only built when a
    # metric needs it (the marginal debiased ECE). `take(index)` gives the same object for a subset or resample of the
    # rows (used by the bootstrap) without validating or normalising again.

    def __init__(
        self,
        scores: np.ndarray | None,
        labels: np.ndarray,
        assumed: str,
        *,
        source: tuple[PreparedPredictions, np.ndarray] | None = None,
        top: tuple[np.ndarray, np.ndarray] | None = None,
        minimum: float | None = None,
    ) -> None:
        self._scores = scores
        # The smallest score (from the validation scan), so that `check_not_probability_like` reads no matrix for
        # logits with a negative entry.
        self._minimum = minimum
        # The validation pass computed these already for probabilities: each row's argmax and top probability.
        self._top = top if assumed == "probs" else None
        self.labels = labels
        self.assumed = assumed
        self._source = source
        self._probs: np.ndarray | None = None
        self._cache: dict[Any, Any] = {}
        # How many rows are of each kind (`adacal.scores_kind.RowCounts`), when the scan counted them.
        self.row_counts: RowCounts | None = None

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
    def predicted_labels(self) -> np.ndarray:
        """Top-1 class per sample (np.argmax of the probabilities: tied maxima go to the lowest class index)."""
        return self._per_sample("predicted_labels")

    @property
    def confidences(self) -> np.ndarray:
        """Top-1 probability per sample (float64)."""
        return self._per_sample("confidences")

    @property
    def hits(self) -> np.ndarray:
        """True where the top-1 class is the label (bool; `correct` as 1.0/0.0)."""
        if "hits" not in self._cache:
            if "correct" in self._cache:  # given as 0/1 columns (CalibrationMeter)
                self._cache["hits"] = self._cache["correct"] == 1.0
            else:
                self._cache["hits"] = self.predicted_labels == self.labels
        return self._cache["hits"]

    @property
    def correct(self) -> np.ndarray:
        """1.0 where the top-1 class is the label, else 0.0."""
        if "correct" not in self._cache:
            self._cache["correct"] = self.hits.astype(np.float64)
        return self._cache["correct"]

    @property
    def true_log_probs(self) -> np.ndarray:
        """log p(true class): the log-softmax of logits, or the log of probabilities clipped at PROB_FLOOR."""
        return self._per_sample("true_log_probs")

    @property
    def brier_terms(self) -> np.ndarray:
        """Σ_k (p_k − 1[y = k])² per sample, computed as Σ_k p_k² − 2 p_true + 1."""
        return self._per_sample("brier_terms")

    @property
    def positive_probs(self) -> np.ndarray:
        """P(class 1) per sample (float64) of binary predictions (K = 2; `adacal.metrics.binary` refuses others),
        computed once; a `take` indexes its parent's."""
        if "positive_probs" not in self._cache:
            if self._scores is None:
                parent, index = self._source  # type: ignore[misc]
                self._cache["positive_probs"] = parent.positive_probs[index]
            else:
                self._cache["positive_probs"] = np.concatenate([probs[:, 1] for _, probs, _, _ in self.blocks()])
        return self._cache["positive_probs"]

    @property
    def positive_outcomes(self) -> np.ndarray:
        """1.0 where the label is class 1 (the positive class), else 0.0."""
        if "positive_outcomes" not in self._cache:
            self._cache["positive_outcomes"] = (self.labels == 1).astype(np.float64)
        return self._cache["positive_outcomes"]

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
            ordered, cum = sorted_with_cumulative_hits(self.confidences, self.hits)
            self._cache["sorted_confidences"], self._cache["cumulative_hits"] = ordered, cum

    def top_label_statistics(self, binning: str, n_bins: int) -> BinStatistics:
        return sorted_bin_statistics(self.sorted_confidences, self.cumulative_hits, self.edges(binning, n_bins))

    def take(self, index: np.ndarray) -> PreparedPredictions:
        """The same predictions restricted to the rows `index`, without validating or normalising again.

        Args:
            index: int array of row indices (repeats allowed, for resampling).

        Returns:
            A `PreparedPredictions` whose per-sample vectors are this one's (computed here once), indexed.
        """
        for name in _PER_SAMPLE:
            self._per_sample(name)
        _ = self.correct
        child = PreparedPredictions(None, self.labels[index], self.assumed, source=(self, index))
        for name in (*_PER_SAMPLE, "hits", "correct"):
            child._cache[name] = self._cache[name][index]
        return child


def _normalise(block: np.ndarray, assumed: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(float64 probs, shifted logits, row sums of exp) of a block: the operations of arrays.to_probs / softmax."""
    if assumed == "probs":
        return normalise_probs(block), None, None
    block = block.astype(np.float64, copy=False)
    with np.errstate(over="ignore"):  # logits more than float64's range apart: -inf, whose exp is 0
        shifted = block - block.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    sums = exp.sum(axis=1, keepdims=True)
    return exp / sums, shifted, sums


def _per_sample_quantities(pred: PreparedPredictions, group: str) -> dict[str, np.ndarray]:
    """One pass over blocks of rows: group "top" gives predicted labels and confidences, group "scoring" the true-class
    log-probabilities and Brier terms (separate, so that an ECE alone does not pay for the others)."""
    n = pred.n_samples
    if group == "top" and pred._top is not None:
        # Probabilities are the rows as given (within rounding of 1) or over their sums: dividing a row by a positive
        # constant keeps its argmax (up to ties made by rounding), so the scan's argmax and top probability (the raw
        # maximum, over the row sum where that is not 1 within rounding) are the top class and its probability.
        top, confidences = pred._top
        pred._top = None
        return {"predicted_labels": top, "confidences": confidences}
    out = {name: np.empty(n, dtype=np.int64 if name == "predicted_labels" else np.float64) for name in _GROUPS[group]}
    for rows, probs, shifted, sums in pred.blocks():
        index = np.arange(probs.shape[0])
        if group == "top":
            top = np.argmax(probs, axis=1)
            out["predicted_labels"][rows] = top
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
    """Top-1 quantities of validated scores, as `top_label` returns them.

    Args:
        confidences: top-1 probability per sample (float64).
        predicted_labels: top-1 class per sample (tied maxima: the lowest class index).
        correct: 1.0 where the top-1 class is the label, else 0.0; None when no labels were given.
        assumed: how the scores were read, "probs" or "logits".

    Example:
        >>> from adacal.metrics import top_label
        >>> top = top_label([[0.9, 0.1], [0.2, 0.8]], [0, 0])
        >>> top.assumed, top.correct.tolist()
        ('probs', [1.0, 0.0])
    """

    confidences: np.ndarray
    predicted_labels: np.ndarray
    correct: np.ndarray | None
    assumed: str


def top_label(scores: Any, labels: Any = None, *, scores_kind: str = "auto") -> TopLabel:
    """Top-1 confidences, predicted labels and correctness of scores (N, K): the one top-1 helper for metrics, plots
    and calibrators.

    Args:
        scores: probabilities or logits (N, K), numpy or torch; their kind is decided as `prepare_predictions`
            decides it, probabilities are normalised as it does, logits go through a softmax.
        labels: class indices (N,), or None (then `correct` is None).
        scores_kind: "auto" (the per-row rule), "logits" or "probs" (as `prepare_predictions` takes it).

    Returns:
        A `TopLabel`; tied maxima predict the lowest class index.

    Example:
        >>> from adacal.metrics import top_label
        >>> top = top_label([[0.9, 0.1], [0.2, 0.8]], [0, 0])
        >>> top.confidences.tolist(), top.predicted_labels.tolist(), top.correct.tolist()
        ([0.9, 0.8], [0, 1], [1.0, 0.0])
    """
    pred = _prepare(scores, labels, scores_kind)
    correct = pred.correct if labels is not None else None
    return TopLabel(pred.confidences, pred.predicted_labels, correct, pred.assumed)


def prepare_predictions(scores: Any, labels: Any = None, *, scores_kind: str = "auto",
                        name: str = "scores") -> PreparedPredictions:
    """Validate scores (N, K) and labels (N,) once, for any number of metrics.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (float16/32/64 are not copied), or a binary model's
            one score per sample.
        labels: class indices (N,).
        scores_kind: "auto" (default): the per-row rule of docs/inputs.md §2, as the file readers apply it —
            probabilities when every row is a probability row (entries >= 0, sum 1 within the dtype's rounding),
            logits when at most 1 % of the rows are and fewer than half are near probabilities or percentages,
            refused otherwise (`InputError`, a `ValueError`, naming the first offending rows); one score per sample:
            probabilities when all lie in [0, 1], decision scores when clearly outside, refused in between.
            "logits": logits whatever the values. "probs": every row must be a probability row (else refused).
        name: what to call the scores in a refusal.

    Returns:
        A `PreparedPredictions` (`scores` itself when it already is one).

    Example:
        >>> from adacal.metrics import prepare_predictions
        >>> pred = prepare_predictions([[2.0, -1.0], [0.5, 1.5]], [0, 1])
        >>> pred.assumed, pred.hits.tolist()
        ('logits', [True, True])
        >>> prepare_predictions([[0.9, 0.1], [0.0, 0.0]], [0, 1])  # one all-zero row: refused, not read as logits
        Traceback (most recent call last):
        adacal.errors.InputError: Expected scores ... (row 1 is all zeros): pass scores_kind='logits' if they are ...
    """
    # Probabilities or logits as `arrays.to_probs` decides, except that the tolerance on the row sums follows the
    # input's dtype (`arrays.probability_tolerance`: float16 probabilities sum to 1 only within ~1e-3); the raw logits
    # are kept so that the NLL uses a log-softmax. Probability rows that sum to 1 within rounding (K float32 epsilons,
    # `arrays.within_rounding`) are used as given, so tied rows stay tied and float32 probabilities give the same
    # confidences as their float64 copy. The checks are those of `adacal.arrays.check_predictions`.
    if isinstance(scores, PreparedPredictions):
        if check_scores_kind(scores_kind) not in ("auto", scores.assumed):
            raise InputError(f"Expected scores_kind to match the prepared predictions ({scores.assumed!r}), got "
                             f"{scores_kind!r}: prepare them again with scores_kind={scores_kind!r}.")
        return scores
    if labels is None:
        raise InputError("Expected labels (one class index per sample) with the scores, got None.")
    return _prepare(scores, labels, scores_kind, name=name)


def _prepare(scores: Any, labels: Any, scores_kind: str = "auto", *, decide: bool = True,
             name: str = "scores") -> PreparedPredictions:
    """`prepare_predictions`, with labels optional (None: top-1 quantities only, for `top_label`). With `decide`
    False (the streaming meter, which decides once for all its batches) nothing is refused for its kind: the scores
    are read as probabilities when every row is a probability row, else as logits, and `row_counts` holds the rows'
    kinds."""
    check_scores_kind(scores_kind)
    if one_score_per_sample(scores):  # a binary model's one score per sample, as the file readers take it
        flat = binary_values(scores, name=name)
        probabilities = decide_binary(flat, scores_kind=scores_kind, name=name) if flat.size else True
        scores, scores_kind = (binary_score_columns(flat, decision=not probabilities)[0],
                               "probs" if probabilities else "logits")
    tolerance = probability_tolerance(scores)
    checked = check_score_shape(scores, name="scores", keep_dtype=True)
    # The kinds of rows are counted in the pass that finds each row's argmax (none for logits by choice).
    scan = scan_rows(checked, tolerance=None if scores_kind == "logits" else tolerance)
    check_finite_rows(checked, scan.sum_deviation, name="scores")
    if labels is None:  # top-1 quantities only (top_label): every sample gets label 0, and correctness is unused
        labels = np.zeros(checked.shape[0], dtype=np.int64)
    else:
        # Read only: an int64 array is not copied.
        labels = check_labels(labels, n=checked.shape[0], num_classes=checked.shape[1], copy=False)
    counts = scan.counts if scan.counts is not None else RowCounts(len(checked))
    if scores_kind == "logits":
        assumed = "logits"
    elif not decide:
        assumed = "probs" if counts.probability == counts.rows else "logits"
    else:
        assumed = decide_matrix(checked, counts, scores_kind=scores_kind, name=name, tolerance=tolerance,
                                words=API_WORDS).kind
    pred = PreparedPredictions(checked, labels, assumed, top=(scan.top, scan.top_probs), minimum=scan.minimum)
    pred.row_counts = counts
    return pred


def prepare_batch(scores: Any, labels: Any, scores_kind: str = "auto") -> PreparedPredictions:
    """`prepare_predictions` for one batch of a stream (`CalibrationMeter`), whose kind is decided once for all its
    batches: with scores_kind "auto" nothing is refused for its kind here — the batch is read as probabilities when
    every row is a probability row, else as logits — and `row_counts` (`adacal.scores_kind.RowCounts`) holds the
    kinds of its rows for the stream's decision. A binary model's one score per sample is not taken here."""
    if labels is None:
        raise InputError("Expected labels (one class index per sample) with the scores, got None.")
    return _prepare(scores, labels, scores_kind, decide=scores_kind != "auto")


def check_prepared(scores: Any, labels: Any, n_bins: Any,
                   scores_kind: str = "auto") -> tuple[PreparedPredictions, int]:
    """Validated predictions and number of bins: the first step of every public metric (the kind decided by
    `prepare_predictions`' rule, or by `scores_kind`)."""
    n_bins = check_n_bins(n_bins)
    return prepare_predictions(scores, labels, scores_kind=scores_kind), n_bins


def metric_function(kernel: Callable[[PreparedPredictions, int], float], doc: str) -> Callable[..., float]:
    """The public metric `name(scores, labels, *, n_bins=DEFAULT_N_BINS, scores_kind="auto") -> float` of a kernel
    on validated predictions: it validates once (`check_prepared`) and calls the kernel. It is named after the kernel
    without its underscore (`_ece_ew` gives `ece_ew`) and lives in the kernel's module, so `help()`,
    `inspect.signature` and pickling see an ordinary function with the docstring `doc`."""

    def metric(scores: Any, labels: Any, *, n_bins: int = DEFAULT_N_BINS, scores_kind: str = "auto") -> float:
        pred, n_bins = check_prepared(scores, labels, n_bins, scores_kind)
        return kernel(pred, n_bins)

    metric.__name__ = metric.__qualname__ = kernel.__name__.lstrip("_")
    metric.__module__ = kernel.__module__
    metric.__doc__ = doc
    return metric
