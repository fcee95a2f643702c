"""Proper scores and the error rate: NLL, Brier score and top-1 error, each a pure function
`metric(scores, labels, *, n_bins=DEFAULT_N_BINS) -> float` (`n_bins` is unused, accepted so every metric has the same
signature) over a private kernel on validated `PreparedPredictions`.
"""

from __future__ import annotations

import numpy as np

from adacal.metrics.prepared import PreparedPredictions, metric_function


def _nll(pred: PreparedPredictions, n_bins: int) -> float:
    log_probs = pred.true_log_probs
    with np.errstate(over="ignore"):
        mean = -log_probs.mean()
    if np.isinf(mean) and np.isfinite(log_probs).all():
        # Logits near the float64 limit: the sum overflows though the mean does not; divide first.
        mean = -np.sum(log_probs / log_probs.size)
    return float(mean) + 0.0  # + 0.0: certain, correct predictions give 0.0, not -0.0


nll = metric_function(_nll, """Mean negative log-likelihood of the true class, in nats.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused (accepted so that every metric has the same signature).

    Returns:
        −mean log p(true class): from logits by a stable log-softmax, from probabilities as log(max(p, 1e-12)).

    Example:
        >>> from adacal.metrics import nll
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]
        >>> round(nll(probs, [0, 1, 1, 1]), 4)  # −(ln 0.9 + ln 0.1 + 2 ln 0.8) / 4
        0.7136
    """)


def _brier(pred: PreparedPredictions, n_bins: int) -> float:
    return float(pred.brier_terms.mean())


brier = metric_function(
    _brier,
    """Brier score: the mean over samples of Σ_k (p_k − 1[y = k])².

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused (accepted so that every metric has the same signature).

    Returns:
        The Brier score, in [0, 2].

    Example:
        >>> from adacal.metrics import brier
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]
        >>> round(brier(probs, [0, 1, 1, 1]), 4)  # (0.02 + 1.62 + 0.08 + 0.08) / 4
        0.45
    """,
)


def _error(pred: PreparedPredictions, n_bins: int) -> float:
    return float(1.0 - pred.correct.mean())


error = metric_function(
    _error,
    """Top-1 error rate (tied maxima predict the lowest class index).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused (accepted so that every metric has the same signature).

    Returns:
        The fraction of samples whose top-1 class is not the label.

    Example:
        >>> from adacal.metrics import error
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]
        >>> error(probs, [0, 1, 1, 1])  # the second sample is wrong
        0.25
    """,
)
