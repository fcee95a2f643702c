"""Calibration and OOD metrics as pure functions of (probs or logits, labels), plus binning and bootstrap intervals.

    >>> from adacal.metrics import compute_metrics, ece_em
    >>> probs, labels = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]], [0, 1, 1, 1]
    >>> round(ece_em(probs, labels, n_bins=2), 4)                  # a fraction: 0.3 is 30 %
    0.3
    >>> sorted(compute_metrics(probs, labels, names=["ece-em", "nll"]))   # report keys are snake_case
    ['ece_em', 'nll']

Registry keys are hyphenated ("ece-em"); report keys are snake_case ("ece_em"); tables show "ECE-EM"
(`display_name`); any of the three spellings is accepted as input. `CalibrationMeter` accumulates every metric batch
by batch (and across torch.distributed ranks); `calibration_error(stats, norm)` is the one kernel from binned
statistics and `top_label(scores, labels)` the one top-1 helper.

Modules: `binning` (the only code that assigns bins), `prepared` (validating scores and labels once; top-1
quantities), `ece` (the ECE family, MCE, classwise ECE, reliability), `sweep` (ECE_SWEEP's bin count), `smooth`
(smooth ECE), `scoring` (NLL, Brier, error), `calibration` (the metric registry and `compute_metrics`), `meter`
(streaming), `bootstrap` (intervals), `ood` (OOD scores and AUROC), `allocation` (size checks before allocating),
`binary` (a binary model's positive-class Brier and ECEs), `confidences` (top-label `(confidence, correct)` inputs,
measured by the same top-label kernels), `selective`
(selective prediction: AURC, E-AURC, AUGRC, risk@C, coverage@R, AUROC of correctness, the risk–coverage curve).
"""

from adacal.metrics.binning import (
    BINNINGS,
    NORMS,
    BinStatistics,
    assign_bins,
    bin_statistics,
    calibration_error,
    equal_mass_edges,
    equal_width_edges,
)
from adacal.metrics.binary import BINARY_METRIC_NAMES, brier_positive, ece_positive_em, ece_positive_ew, positive_class
from adacal.metrics.bootstrap import bootstrap
from adacal.metrics.calibration import (
    DEBIAS_MODES,
    DISPLAY_NAMES,
    FRACTION_METRICS,
    METRIC_NAMES,
    METRICS,
    PreparedPredictions,
    TopLabel,
    aurc,
    auprc_errors,
    auroc_correct,
    augrc,
    brier,
    classwise_ece,
    compute_metrics,
    default_metric_names,
    display_name,
    e_aurc,
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
    smooth_ece,
    smooth_reliability,
    sweep_bins,
    row_top,
    top_label,
)
from adacal.metrics.confidences import (
    TOP_LABEL_METRIC_NAMES,
    prepare_confidences,
    top_label_metrics,
)
from adacal.metrics.meter import CalibrationMeter
from adacal.metrics.selective import (
    SELECTIVE_METRIC_NAMES,
    RiskCoverage,
    coverage_at_risk,
    risk_at_coverage,
    risk_coverage_curve,
)
from adacal.metrics.smooth import SmoothReliability
from adacal.metrics.ood import (
    OOD_SCORES,
    RocCurve,
    energy_score,
    entropy,
    entropy_score,
    fpr_at_tpr,
    max_prob_score,
    ood_metrics,
    ood_scores,
    roc_curve_points,
)

__all__ = [
    "BINARY_METRIC_NAMES",
    "BINNINGS",
    "DEBIAS_MODES",
    "DISPLAY_NAMES",
    "FRACTION_METRICS",
    "METRICS",
    "METRIC_NAMES",
    "OOD_SCORES",
    "SELECTIVE_METRIC_NAMES",
    "TOP_LABEL_METRIC_NAMES",
    "NORMS",
    "BinStatistics",
    "CalibrationMeter",
    "PreparedPredictions",
    "TopLabel",
    "RiskCoverage",
    "RocCurve",
    "SmoothReliability",
    "assign_bins",
    "aurc",
    "auprc_errors",
    "auroc_correct",
    "augrc",
    "bin_statistics",
    "bootstrap",
    "calibration_error",
    "brier",
    "brier_positive",
    "classwise_ece",
    "compute_metrics",
    "default_metric_names",
    "coverage_at_risk",
    "display_name",
    "e_aurc",
    "ece_debias",
    "ece_em",
    "ece_ew",
    "ece_positive_em",
    "ece_positive_ew",
    "ece_sweep_em",
    "ece_sweep_ew",
    "energy_score",
    "entropy",
    "entropy_score",
    "equal_mass_edges",
    "equal_width_edges",
    "error",
    "fpr_at_tpr",
    "max_prob_score",
    "mce",
    "metric_key",
    "nll",
    "ood_metrics",
    "ood_scores",
    "positive_class",
    "prepare_confidences",
    "prepare_predictions",
    "reliability",
    "risk_at_coverage",
    "risk_coverage_curve",
    "resolve_metric_names",
    "roc_curve_points",
    "row_top",
    "smooth_ece",
    "smooth_reliability",
    "sweep_bins",
    "top_label",
    "top_label_metrics",
]
