"""The ECE family: binned calibration errors of the top-1 confidence (equal-width, equal-mass, debiased, sweep), MCE,
classwise ECE, the smooth ECE and the per-bin data of a reliability diagram.

Every public metric is a pure function `metric(scores, labels, *, n_bins=DEFAULT_N_BINS) -> float` that returns a
fraction (not a percentage). `scores` are probabilities or logits (N, K), numpy or torch, their kind decided by the
per-row rule of docs/inputs.md §2 (`adacal.scores_kind`, as the file readers decide it) or given as `scores_kind=`:
a matrix whose rows disagree (probabilities with a row that is not one, rows summing to nearly 1, percentages) is
an InputError naming the rows and `scores_kind=`, never read as logits. A binary model's one score per sample, (N,)
or (N, 1), is read as two columns (`adacal.arrays.binary_score_columns`). Each metric is a
private kernel on validated `PreparedPredictions` (`adacal.metrics.prepared`) wrapped by `metric_function`, so
`compute_metrics` (and the bootstrap) validate once and share the per-sample quantities across metrics. All binning
goes through `adacal.metrics.binning`; ECE from binned statistics is `binning.calibration_error`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.allocation import check_bins_fit
from adacal.metrics.binning import (
    BINNINGS,
    BinStatistics,
    bin_index,
    bin_statistics,
    calibration_error,
    equal_mass_edges,
    equal_width_edges,
)
from adacal.metrics.prepared import (
    PreparedPredictions,
    check_prepared,
    metric_function,
    prepare_predictions,
)
from adacal.metrics.smooth import CURVE_POINTS, SmoothReliability, smooth_ece_of, smooth_reliability_of
from adacal.metrics.sweep import sweep_bins_of

DEBIAS_MODES = ("top-label", "marginal")


def _ece_ew(pred: PreparedPredictions, n_bins: int) -> float:
    return calibration_error(pred.top_label_statistics("equal-width", n_bins))


ece_ew = metric_function(
    _ece_ew,
    """Expected calibration error over equal-width bins of the top-1 confidence (L1; Guo et al. 2017).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: the number of equal-width bins (default 15).

    Returns:
        Σ_b n_b/N |mean confidence_b − accuracy_b|, a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import ece_ew
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> round(ece_ew(probs, [0, 1, 1, 1], n_bins=10), 4)  # |0.9 − 0.5| / 2 + |0.8 − 1.0| / 2
        0.3
    """,
)


def _ece_em(pred: PreparedPredictions, n_bins: int) -> float:
    return calibration_error(pred.top_label_statistics("equal-mass", n_bins))


ece_em = metric_function(
    _ece_em,
    """ECE over equal-mass bins of the top-1 confidence (AdaECE; the AdaFocal paper's headline ECE_EM).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: the number of equal-mass bins (default 15).

    Returns:
        Σ_b n_b/N |mean confidence_b − accuracy_b|, a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import ece_em
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> round(ece_em(probs, [0, 1, 1, 1], n_bins=2), 4)  # bins {0.8, 0.8}, {0.9, 0.9}: 0.2 / 2 + 0.4 / 2
        0.3
    """,
)


def _mce(pred: PreparedPredictions, n_bins: int) -> float:
    return calibration_error(pred.top_label_statistics("equal-width", n_bins), "max")


mce = metric_function(
    _mce,
    """Maximum calibration error: the largest |mean confidence − accuracy| over non-empty equal-width bins.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: the number of equal-width bins (default 15).

    Returns:
        The MCE, a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import mce
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> round(mce(probs, [0, 1, 1, 1], n_bins=10), 4)  # the 0.9 bin is right half the time
        0.4
    """,
)


def _ece_sweep(pred: PreparedPredictions, binning: str) -> float:
    b = sweep_bins_of(pred.confidences, pred.correct, binning, pred.sorted_confidences, pred.cumulative_hits)
    return calibration_error(pred.top_label_statistics(binning, b))


def _ece_sweep_em(pred: PreparedPredictions, n_bins: int) -> float:
    return _ece_sweep(pred, "equal-mass")


def _ece_sweep_ew(pred: PreparedPredictions, n_bins: int) -> float:
    return _ece_sweep(pred, "equal-width")


ece_sweep_em = metric_function(
    _ece_sweep_em,
    """ECE_SWEEP with equal-mass bins (Roelofs et al. 2021).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused: the sweep picks its own number of bins (`sweep_bins`).

    Returns:
        The L1 ECE at the largest bin count whose bin accuracies still rise monotonically, a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import ece_sweep_em
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> round(ece_sweep_em(probs, [0, 1, 1, 1]), 4)  # all in one bin: |0.85 − 0.75|
        0.1
    """,
)
ece_sweep_ew = metric_function(
    _ece_sweep_ew,
    """ECE_SWEEP with equal-width bins (Roelofs et al. 2021).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused: the sweep picks its own number of bins (`sweep_bins`).

    Returns:
        The L1 ECE at the largest bin count whose bin accuracies still rise monotonically, a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import ece_sweep_ew
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> round(ece_sweep_ew(probs, [0, 1, 1, 1]), 4)  # all in one bin: |0.85 − 0.75|
        0.1
    """,
)


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


def ece_debias(scores: Any, labels: Any, *, n_bins: int = DEFAULT_N_BINS, mode: str = "top-label",
               scores_kind: str = "auto") -> float:
    """Debiased L2 calibration error (Kumar et al. 2019) over equal-mass bins.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: the number of equal-mass bins (default 15).
        mode: "top-label" (default; the AdaFocal paper's ECE_DEBIAS) bins the top-1 confidence; "marginal" bins each
            p_k against 1[y = k] and returns the root of the mean squared error over classes.

    Returns:
        The debiased error, a fraction in [0, 1] (0.0 when the bias correction exceeds the squared gaps).

    Example:
        >>> from adacal.metrics import ece_debias
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> ece_debias(probs, [0, 1, 1, 1], n_bins=2)  # (0.2² − 0) / 2 + (0.4² − 0.25) / 2 < 0
        0.0
    """
    # mode="marginal" is what `calibration.get_calibration_error(probs, labels)` of Kumar et al.'s package computes on
    # continuous scores.
    if mode not in DEBIAS_MODES:
        raise InputError(f"Expected mode to be one of {', '.join(DEBIAS_MODES)}, got {mode!r}.")
    pred, n_bins = check_prepared(scores, labels, n_bins, scores_kind)
    return _ece_debias(pred, n_bins, mode)


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
        cells = bin_index(flat, edges).reshape(probs.shape) + offsets
        conf_sum += np.bincount(cells.ravel(), weights=flat, minlength=k * n_bins)
        true_cells = cells[np.arange(probs.shape[0]), pred.labels[rows]]
        hit_sum += np.bincount(true_cells, minlength=k * n_bins)
    return classwise_error(conf_sum, hit_sum, n, k)


def classwise_error(conf_sum: np.ndarray, hit_sum: np.ndarray, n_samples: int, num_classes: int) -> float:
    """Classwise ECE from its (class, bin) cells: Σ |Σ p_k − hits| / (N · K) (shared with the streaming meter)."""
    return float(np.abs(conf_sum - hit_sum).sum() / (n_samples * num_classes))


def classwise_ece(scores: Any, labels: Any, *, n_bins: int = DEFAULT_N_BINS, scores_kind: str = "auto") -> float:
    """Classwise ECE (Kull et al. 2019): per class k the equal-width ECE of p_k against 1[y = k], averaged over k.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: the number of equal-width bins per class (default 15).

    Returns:
        The classwise ECE, a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import classwise_ece
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> round(classwise_ece(probs, [0, 1, 1, 1], n_bins=10), 4)  # (0.8 + 0.4 + 0.8 + 0.4) / (N · K = 8)
        0.3
    """
    pred, n_bins = check_prepared(scores, labels, n_bins, scores_kind)
    check_bins_fit(n_bins, num_classes=pred.num_classes, classwise=True)
    return _classwise_ece(pred, n_bins)


def _ece_smooth(pred: PreparedPredictions, n_bins: int) -> float:
    return smooth_ece_of(pred.confidences, pred.correct)


def smooth_ece(scores: Any, labels: Any, *, n_bins: int = DEFAULT_N_BINS, bandwidth: float | None = None,
               scores_kind: str = "auto") -> float:
    """Smooth ECE (Błasiok & Nakkiran 2023; relplot's `smECE`) of the top-1 confidence (see `adacal.metrics.smooth`).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused (the smooth ECE is binning-free).
        bandwidth: the Gaussian kernel's width in (0, 1], or None (default) for the automatic σ with smECE_σ = σ.

    Returns:
        The smooth ECE, a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import smooth_ece
        >>> round(smooth_ece([[0.75, 0.25]] * 4, [0, 0, 0, 1]), 4)  # 3 of 4 right at confidence 0.75
        0.0
    """
    pred, n_bins = check_prepared(scores, labels, n_bins, scores_kind)
    return smooth_ece_of(pred.confidences, pred.correct, bandwidth=bandwidth)


def smooth_reliability(
    scores: Any, labels: Any, *, bandwidth: float | None = None, points: int = CURVE_POINTS, scores_kind: str = "auto"
) -> SmoothReliability:
    """The smoothed reliability curve of the top-1 confidence (kernel regression of correctness), for plotting.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        bandwidth: the Gaussian kernel's width in (0, 1], or None (default) for the automatic one.
        points: how many evenly spaced confidences in [0, 1] to evaluate the curve at (default 200).

    Returns:
        A `SmoothReliability` (grid, curve, density, bandwidth, ece).

    Example:
        >>> from adacal.metrics import smooth_reliability
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> curve = smooth_reliability(probs, [0, 1, 1, 1], points=3)
        >>> curve.grid.tolist(), round(curve.ece, 4)
        ([0.0, 0.5, 1.0], 0.1236)
    """
    pred = prepare_predictions(scores, labels, scores_kind=scores_kind)
    return smooth_reliability_of(pred.confidences, pred.correct, bandwidth=bandwidth, points=points)


def reliability(
    scores: Any, labels: Any, *, n_bins: int = DEFAULT_N_BINS, binning: str = "equal-width", scores_kind: str = "auto"
) -> BinStatistics:
    """Per-bin counts, mean top-1 confidence and accuracy: the data of a reliability diagram.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: the number of bins (default 15).
        binning: "equal-width" (default) or "equal-mass".

    Returns:
        A `BinStatistics`.

    Example:
        >>> from adacal.metrics import reliability
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]  # confidences 0.9, 0.9, 0.8, 0.8
        >>> stats = reliability(probs, [0, 1, 1, 1], n_bins=5)
        >>> stats.counts.tolist(), stats.accuracy.tolist()
        ([0, 0, 0, 2, 2], [0.0, 0.0, 0.0, 1.0, 0.5])
    """
    pred, n_bins = check_prepared(scores, labels, n_bins, scores_kind)
    if binning not in BINNINGS:
        raise InputError(f"Expected binning to be one of {', '.join(BINNINGS)}, got {binning!r}.")
    return pred.top_label_statistics(binning, n_bins)
