"""Positive-class metrics of a binary model (K = 2), as scikit-learn measures binary classifiers.

The positive class is class index 1 (scikit-learn's `classes_[1]`, the column `predict_proba(X)[:, 1]`); its
probability p = P(class 1) is read against the outcome y = 1[label = 1]:
- `brier-positive`: mean (p − y)², scikit-learn's `brier_score_loss(labels == 1, probs[:, 1])`, in [0, 1]. adacal's
  `brier` is the multi-class sum Σ_k (p_k − 1[y = k])², which for K = 2 is exactly twice this.
- `ece-positive-ew`, `ece-positive-em`: Σ_b (n_b / N) |mean y − mean p| over `n_bins` equal-width or equal-mass bins
  of p (the bins of `adacal.metrics.binning`, as every ECE's), whose per-bin means are the points scikit-learn's
  `calibration_curve(labels == 1, probs[:, 1], strategy="uniform")` returns. The top-label ECEs (`ece-ew`, `ece-em`)
  bin max(p, 1 − p) against correctness instead.
Scores of any other number of classes are refused (`InputError`), never measured. docs/conventions.md ("Binary
models") defines each, with the formulas.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics, calibration_error
from adacal.metrics.prepared import PreparedPredictions, metric_function, prepare_predictions

# In report order; `adacal evaluate` adds them to its default metrics for a binary input.
BINARY_METRIC_NAMES: tuple[str, ...] = ("brier-positive", "ece-positive-ew", "ece-positive-em")
BINARY_DISPLAY_NAMES = {"brier-positive": "Brier-Positive", "ece-positive-ew": "ECE-Positive-EW",
                        "ece-positive-em": "ECE-Positive-EM"}


_INSTEAD = "use brier (the multi-class sum) and the top-label ece-ew / ece-em instead"


def check_binary(num_classes: int, what: str = "the positive-class metrics", instead: str = _INSTEAD) -> None:
    """Refuse scores of other than two classes for `what`, in one line saying what to use `instead`."""
    if num_classes != 2:
        raise InputError(f"Expected a binary model's scores (2 classes; the positive class is class 1) for {what}, "
                         f"got {num_classes} classes: {instead}.")


def positive_class_of(pred: PreparedPredictions) -> tuple[np.ndarray, np.ndarray]:
    """(P(class 1), 1[label = 1]) per sample of validated binary predictions (float64 each); other K refused."""
    if "positive_probs" not in pred._cache:  # the streaming meter fills both columns itself
        check_binary(pred.num_classes)
    return pred.positive_probs, pred.positive_outcomes


def _brier_positive(pred: PreparedPredictions, n_bins: int) -> float:
    probs, outcomes = positive_class_of(pred)
    return float(np.mean((probs - outcomes) ** 2))


def _positive_ece(pred: PreparedPredictions, n_bins: int, binning: str) -> float:
    probs, outcomes = positive_class_of(pred)
    return calibration_error(bin_statistics(probs, outcomes, n_bins=n_bins, binning=binning))


def _ece_positive_ew(pred: PreparedPredictions, n_bins: int) -> float:
    return _positive_ece(pred, n_bins, "equal-width")


def _ece_positive_em(pred: PreparedPredictions, n_bins: int) -> float:
    return _positive_ece(pred, n_bins, "equal-mass")


_ARGS = """
    Args:
        scores: a binary model's probabilities or logits (N, 2), or its one score per sample (P(class 1) or a
            decision score), numpy or torch (read as `prepare_predictions` reads them). Other K is refused.
        labels: class indices (N,) in {0, 1}; class 1 is the positive class.
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: the number of bins{bins}.
"""

brier_positive = metric_function(_brier_positive, """Positive-class Brier score: mean (P(class 1) − 1[y = 1])²,
    scikit-learn's `brier_score_loss(labels == 1, probs[:, 1])` (half of adacal's multi-class `brier` for K = 2).
""" + _ARGS.replace("{bins}", " (unused: accepted so that every metric has the same signature)") + """
    Returns:
        The positive-class Brier score, in [0, 1].

    Example:
        >>> from adacal.metrics import brier, brier_positive
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]
        >>> round(brier_positive(probs, [0, 1, 1, 1]), 4)  # (0.01 + 0.81 + 0.04 + 0.04) / 4
        0.225
        >>> round(brier(probs, [0, 1, 1, 1]), 4)  # the multi-class sum: twice as much
        0.45
    """)

ece_positive_ew = metric_function(_ece_positive_ew, """Positive-class ECE over equal-width bins of P(class 1):
    Σ_b (n_b / N) |frequency of class 1 in b − mean P(class 1) in b|, the bins scikit-learn's
    `calibration_curve(labels == 1, probs[:, 1], strategy="uniform")` averages.
""" + _ARGS.replace("{bins}", " (default 15)") + """
    Returns:
        A fraction in [0, 1].

    Example:
        >>> from adacal.metrics import ece_positive_ew
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]
        >>> round(ece_positive_ew(probs, [0, 1, 1, 1], n_bins=2), 4)  # (2 |0.5 − 0.1| + 2 |1 − 0.8|) / 4
        0.3
    """)

ece_positive_em = metric_function(_ece_positive_em, """Positive-class ECE over equal-mass bins of P(class 1):
    as `ece_positive_ew`, with bins of equal count (the equal-mass edges every adacal ECE uses).
""" + _ARGS.replace("{bins}", " (default 15)") + """
    Returns:
        A fraction in [0, 1].

    Example:
        >>> from adacal.metrics import ece_positive_em
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]
        >>> round(ece_positive_em(probs, [0, 1, 1, 1], n_bins=2), 4)
        0.3
    """)

BINARY_KERNELS = {"brier-positive": _brier_positive, "ece-positive-ew": _ece_positive_ew,
                  "ece-positive-em": _ece_positive_em}
BINARY_PUBLIC = {"brier-positive": brier_positive, "ece-positive-ew": ece_positive_ew,
                 "ece-positive-em": ece_positive_em}


# What each Brier score and ECE of a report means, under its report key (results.conventions; docs/conventions.md).
CONVENTIONS = {
    "brier": "multi-class sum over classes: mean of Σ_k (p_k − 1[y = k])², in [0, 2]; for 2 classes it is twice "
             "scikit-learn's brier_score_loss (which is brier_positive)",
    "brier_positive": "positive class (class 1): mean of (p_1 − 1[y = 1])², in [0, 1]; scikit-learn's "
                      "brier_score_loss(y == 1, p[:, 1])",
    "ece_ew": "top-label: the top-1 confidence max_k p_k against whether the top-1 class is right, equal-width bins",
    "ece_em": "top-label: the top-1 confidence max_k p_k against whether the top-1 class is right, equal-mass bins",
    "ece_positive_ew": "positive class (class 1): p_1 against 1[y = 1], equal-width bins (scikit-learn's "
                       "calibration_curve, strategy='uniform')",
    "ece_positive_em": "positive class (class 1): p_1 against 1[y = 1], equal-mass bins",
}


def metric_conventions(metrics: Any, num_classes: int) -> dict[str, str]:
    """The conventions a report names (results.conventions): of its Brier scores always, of its ECE-EW and ECE-EM
    for a binary model (where top-label and positive-class differ), of its positive-class metrics.

    Example:
        >>> sorted(metric_conventions({"brier": 0.1, "ece_em": 0.02}, 10))
        ['brier']
    """
    shown = {"brier", "brier_positive", "ece_positive_ew", "ece_positive_em"}
    if num_classes == 2:
        shown |= {"ece_ew", "ece_em"}
    return {key: CONVENTIONS[key] for key in metrics if key in shown}


class PositiveClass(NamedTuple):
    """A binary model's positive-class probabilities and outcomes, as `positive_class` returns them.

    Args:
        probs: P(class 1) per sample (float64).
        outcomes: 1.0 where the label is class 1, else 0.0.
        assumed: how the scores were read, "probs" or "logits".
    """

    probs: np.ndarray
    outcomes: np.ndarray
    assumed: str


def positive_class(scores: Any, labels: Any, *, scores_kind: str = "auto", what: str = "the positive-class metrics",
                   instead: str = _INSTEAD) -> PositiveClass:
    """P(class 1) and 1[label = 1] of a binary model's scores, read as every metric reads them.

    Args:
        scores: a binary model's probabilities or logits (N, 2), or its one score per sample.
        labels: class indices (N,) in {0, 1}.
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        what, instead: what needs them and what to use instead, for the refusal of other K (`InputError`).

    Returns:
        A `PositiveClass` (probs, outcomes, assumed).

    Example:
        >>> from adacal.metrics.binary import positive_class
        >>> positive_class([[0.9, 0.1], [0.2, 0.8]], [0, 1]).probs.tolist()
        [0.1, 0.8]
    """
    pred = prepare_predictions(scores, labels, scores_kind=scores_kind)
    check_binary(pred.num_classes, what, instead)
    return PositiveClass(pred.positive_probs, pred.positive_outcomes, pred.assumed)


__all__ = ["BINARY_DISPLAY_NAMES", "BINARY_KERNELS", "BINARY_METRIC_NAMES", "BINARY_PUBLIC", "CONVENTIONS",
           "PositiveClass", "brier_positive", "check_binary", "ece_positive_em", "ece_positive_ew",
           "metric_conventions", "positive_class", "positive_class_of"]
