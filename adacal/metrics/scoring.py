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

    From logits it uses a stable log-softmax; from probabilities, log(max(p, 1e-12)), so one sample contributes at
    most ~27.6 nats. `n_bins` is unused (accepted so every metric has the same signature).
    """)


def _brier(pred: PreparedPredictions, n_bins: int) -> float:
    return float(pred.brier_terms.mean())


brier = metric_function(
    _brier, "Brier score: mean over samples of Σ_k (p_k − 1[y = k])², in [0, 2]. `n_bins` is unused."
)


def _error(pred: PreparedPredictions, n_bins: int) -> float:
    return float(1.0 - pred.correct.mean())


error = metric_function(_error, "Top-1 error (tied maxima predict the lowest class index). `n_bins` is unused.")
