"""Calibration and OOD metrics as pure functions of (probs or logits, labels), plus binning and bootstrap intervals.

    >>> from adacal.metrics import compute_metrics, ece_em
    >>> ece_em(logits, labels)                      # a fraction, e.g. 0.0123 (= 1.23 %)
    >>> compute_metrics(logits, labels, names=["ece-em", "nll"])   # {"ece_em": ..., "nll": ...}

Registry keys are hyphenated ("ece-em"); report keys are snake_case ("ece_em").
"""

from adacal.metrics.binning import (
    BINNINGS,
    BinStatistics,
    assign_bins,
    bin_statistics,
    equal_mass_edges,
    equal_width_edges,
)
from adacal.metrics.bootstrap import bootstrap
from adacal.metrics.calibration import (
    DEBIAS_MODES,
    FRACTION_METRICS,
    METRIC_NAMES,
    METRICS,
    PreparedPredictions,
    brier,
    classwise_ece,
    compute_metrics,
    ece_debias,
    ece_em,
    ece_ew,
    ece_sweep_em,
    ece_sweep_ew,
    error,
    mce,
    metric_key,
    nll,
    prepare_predictions,
    reliability,
    resolve_metric_names,
    sweep_bins,
)
from adacal.metrics.ood import (
    OOD_SCORES,
    RocCurve,
    energy_score,
    entropy,
    entropy_score,
    max_prob_score,
    ood_metrics,
    ood_scores,
    roc_curve_points,
)

__all__ = [
    "BINNINGS",
    "DEBIAS_MODES",
    "FRACTION_METRICS",
    "METRICS",
    "METRIC_NAMES",
    "OOD_SCORES",
    "BinStatistics",
    "PreparedPredictions",
    "RocCurve",
    "assign_bins",
    "bin_statistics",
    "bootstrap",
    "brier",
    "classwise_ece",
    "compute_metrics",
    "ece_debias",
    "ece_em",
    "ece_ew",
    "ece_sweep_em",
    "ece_sweep_ew",
    "energy_score",
    "entropy",
    "entropy_score",
    "equal_mass_edges",
    "equal_width_edges",
    "error",
    "max_prob_score",
    "mce",
    "metric_key",
    "nll",
    "ood_metrics",
    "ood_scores",
    "prepare_predictions",
    "reliability",
    "resolve_metric_names",
    "roc_curve_points",
    "sweep_bins",
]
