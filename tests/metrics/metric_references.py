"""The reference implementations adacal's metrics are compared with (by tests/metrics/test_metric_references.py),
each stated once: slow obviously-correct loops (slow_metrics.py), the published `uncertainty-calibration` package
(Kumar et al. 2019), relplot's smECE (Błasiok & Nakkiran 2023) and scikit-learn — test dependencies — and, when
installed, torchmetrics and netcal.

Where a reference defines a metric differently on some inputs, `excludes` names the inputs and why, and those cases
are left out of its parameters: torchmetrics and netcal put a value on a bin edge in the bin above ([lower, upper)
bins) where adacal and the paper put it in the bin below ((lower, upper]); netcal reads two columns as a binary
problem (the calibration of class 1, not of the top label); scikit-learn clips log-probabilities at the float64 epsilon
where adacal clips at 1e-12.
"""

from __future__ import annotations

import numpy as np
import torch

import slow_metrics as slow
from metric_tester import Case, OodReference, Reference


def _on_edges(case: Case) -> str | None:
    if case.has_values_on_edges:
        return "values on bin edges: [lower, upper) bins part from adacal's (lower, upper]"
    return None


def _binary_or_on_edges(case: Case) -> str | None:
    if case.num_classes == 2:
        return "two columns: netcal calibrates class 1, not the top label"
    return _on_edges(case)


def _zero_at_label(case: Case) -> str | None:
    return "probability 0 at the label: clipping conventions differ" if case.has_zero_at_label else None


def _large(case: Case) -> str | None:
    # The slow sweep re-bins everything for every b: quadratic and more in N.
    return "too large for the slow sweep" if case.labels.size > 500 else None


def _slow(metric, function, **options):
    return Reference("slow loop", metric, lambda p, y, b, module: function(p, y, b, **options), atol=1e-12,
                     options={"mode": options["mode"]} if "mode" in options else {})


SLOW = [
    _slow("ece-ew", slow.ece_ew),
    _slow("ece-em", slow.ece_em),
    _slow("ece-debias", slow.ece_debias),
    _slow("ece-debias", slow.ece_debias, mode="marginal"),
    _slow("mce", slow.mce),
    _slow("classwise-ece", slow.classwise_ece),
    Reference("slow loop", "nll", lambda p, y, b, module: slow.nll(np.log(np.clip(p, 1e-12, None)), y), atol=0,
              rtol=1e-12, binned=False),
    Reference("slow loop", "brier", lambda p, y, b, module: slow.brier(p, y), atol=1e-12, binned=False),
    Reference("slow loop", "error", lambda p, y, b, module: slow.error(p, y), atol=1e-15, binned=False),
    Reference("slow loop", "ece-sweep-em", lambda p, y, b, module: slow.ece_sweep(p, y, "equal-mass"), atol=1e-12,
              binned=False, excludes=_large),
    Reference("slow loop", "ece-sweep-ew", lambda p, y, b, module: slow.ece_sweep(p, y, "equal-width"), atol=1e-12,
              binned=False, excludes=_large),
]

UNCERTAINTY_CALIBRATION = [
    Reference("uncertainty-calibration", "ece-ew", lambda p, y, b, module: module.get_ece(p, y, num_bins=b),
              atol=1e-12, package="calibration"),
    Reference("uncertainty-calibration", "ece-em", lambda p, y, b, module: module.get_ece_em(p, y, num_bins=b),
              atol=1e-12, package="calibration"),
    Reference("uncertainty-calibration", "ece-debias",
              lambda p, y, b, module: module.lower_bound_scaling_ce(p, y, p=2, debias=True, num_bins=b,
                                                                    mode="top-label"),
              atol=1e-12, package="calibration"),
    Reference("uncertainty-calibration", "ece-debias",
              lambda p, y, b, module: module.lower_bound_scaling_ce(p, y, p=2, debias=True, num_bins=b,
                                                                    mode="marginal"),
              atol=1e-12, options={"mode": "marginal"}, package="calibration"),
]

def _smece(p, y, b, module):
    return module.smECE(*module.multiclass_logits_to_confidences(p, y, probs=True))


RELPLOT = [Reference("relplot", "ece-smooth", _smece, atol=1e-3, binned=False, package="relplot")]

SKLEARN = [
    Reference("scikit-learn", "nll", lambda p, y, b, module: module.log_loss(y, p, labels=range(p.shape[1])),
              atol=0, rtol=1e-12, binned=False, excludes=_zero_at_label, package="sklearn.metrics"),
    Reference("scikit-learn", "brier",
              lambda p, y, b, module: module.brier_score_loss(y, p, labels=range(p.shape[1]), scale_by_half=False),
              atol=1e-12, binned=False, package="sklearn.metrics"),
    Reference("scikit-learn", "error", lambda p, y, b, module: module.zero_one_loss(y, p.argmax(axis=1)), atol=1e-15,
              binned=False, package="sklearn.metrics"),
]


def _torchmetrics(norm):
    def compute(p, y, b, module):
        value = module.multiclass_calibration_error(torch.from_numpy(p), torch.from_numpy(y), num_classes=p.shape[1],
                                                    n_bins=b, norm=norm)
        return float(value)

    return compute


# torchmetrics bins in the dtype of its inputs but sums with float32 steps: agreement to ~4e-7 on float64 inputs.
TORCHMETRICS = [
    Reference("torchmetrics", "ece-ew", _torchmetrics("l1"), atol=1e-6, excludes=_on_edges,
              package="torchmetrics.functional.classification", optional=True),
    Reference("torchmetrics", "mce", _torchmetrics("max"), atol=1e-6, excludes=_on_edges,
              package="torchmetrics.functional.classification", optional=True),
]

NETCAL = [
    Reference("netcal", "ece-ew", lambda p, y, b, module: module.ECE(bins=b).measure(p, y), atol=1e-12,
              excludes=_binary_or_on_edges, package="netcal.metrics", optional=True),
    Reference("netcal", "mce", lambda p, y, b, module: module.MCE(bins=b).measure(p, y), atol=1e-12,
              excludes=_binary_or_on_edges, package="netcal.metrics", optional=True),
]

REFERENCES: list[Reference] = SLOW + UNCERTAINTY_CALIBRATION + RELPLOT + SKLEARN + TORCHMETRICS + NETCAL

# OOD detection: adacal's AUROC and AUPRs call scikit-learn, so the slow loops are the independent check and
# scikit-learn pins the conventions (OOD positive, AUPR-in on the negated scores).


def _sklearn_ood(key):
    def compute(in_scores, out_scores, module):
        is_ood = np.r_[np.zeros(in_scores.size), np.ones(out_scores.size)]
        scores = np.r_[in_scores, out_scores]
        if key == "auroc":
            return module.roc_auc_score(is_ood, scores)
        if key == "aupr-out":
            return module.average_precision_score(is_ood, scores)
        return module.average_precision_score(1 - is_ood, -scores)

    return compute


def _slow_ood(function, *, negate=False):
    def compute(in_scores, out_scores, module):
        if negate:  # in-distribution as the positive class, lower score = more in-distribution
            return function((-in_scores).tolist(), (-out_scores).tolist())
        return function(in_scores.tolist(), out_scores.tolist())

    return compute


OOD_REFERENCES = [
    *(OodReference("scikit-learn", key, _sklearn_ood(key), atol=1e-15, package="sklearn.metrics")
      for key in ("auroc", "aupr-in", "aupr-out")),
    OodReference("slow loop", "auroc", _slow_ood(slow.auroc), atol=1e-12),
    OodReference("slow loop", "aupr-out", lambda i, o, module: slow.average_precision(o.tolist(), i.tolist()),
                 atol=1e-12),
    OodReference("slow loop", "aupr-in", _slow_ood(lambda i, o: slow.average_precision(i, o), negate=True), atol=1e-12),
    OodReference("slow loop", "fpr-at-95-tpr", _slow_ood(slow.fpr_at_95), atol=1e-12),
    OodReference("slow loop", "fpr-at-95-tpr-closest", _slow_ood(slow.fpr_at_95_closest), atol=1e-12),
]
