"""The logistic fits behind Platt scaling, beta calibration and scaling-binning, and the per-class log-odds they read.

- `fit_platt_sigmoid(decision, targets)`: Platt's (2000) sigmoid as scikit-learn fits it
  (`sklearn.calibration._sigmoid_calibration`, scikit-learn 1.9): Platt's smoothed targets (N₊ + 1)/(N₊ + 2) and
  1/(N₋ + 2), the start (0, log((N₋ + 1)/(N₊ + 1))), decision values divided by max |s| when that is ≥ 30,
  L-BFGS-B with gtol 1e-6 and ftol 64·ε. Returned in adacal's sign, P = sigmoid(slope · s + intercept)
  (scikit-learn stores A = −slope, B = −intercept);
- `fit_logistic(features, targets)`: an unregularised logistic regression (maximum likelihood, the limit of
  scikit-learn's LogisticRegression(C=1e10)), by Newton's method;
- `class_log_odds(logits)`: log p_k − log(1 − p_k) = z_k − log Σ_{j≠k} exp z_j for every class, from the logits
  without forming 1 − p (so a probability within 1e-17 of 1 keeps its log-odds); for two classes it is ±(z₁ − z₀).
"""

from __future__ import annotations

import math

import numpy as np

# scikit-learn's _sigmoid_calibration rescales decision values whose largest |value| reaches this.
PLATT_RESCALE_THRESHOLD = 30.0
# The most Newton steps of `fit_logistic` (a non-separable fit converges in about 10).
MAX_NEWTON_STEPS = 100


def _log_sum_exp(values: np.ndarray) -> np.ndarray:
    top = values.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return (top + np.log(np.exp(values - top).sum(axis=1, keepdims=True)))[:, 0]


def log_rest(logits: np.ndarray) -> np.ndarray:
    """log Σ_{j≠k} exp z_j for each entry (N, K): the top class's from the row without it, the others' as
    log(S − exp z_k) with S summed over the row (S − exp z_k ≥ exp(max z), so nothing cancels)."""
    n, k = logits.shape
    rows = np.arange(n)
    top_index = logits.argmax(axis=1)
    top = logits[rows, top_index]
    shifted = np.exp(logits - top[:, None])
    total = shifted.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        rest = top[:, None] + np.log(np.maximum(total - shifted, 0.0))
        without_top = logits.copy()
        without_top[rows, top_index] = -np.inf
        rest[rows, top_index] = _log_sum_exp(without_top)
    return rest


def class_log_odds(logits: np.ndarray) -> np.ndarray:
    """log p_k − log(1 − p_k) of p = softmax(logits), for every entry (N, K).

    Example:
        >>> import numpy as np
        >>> class_log_odds(np.array([[0.0, 2.0]])).tolist()  # two classes: the margin z₁ − z₀, and its negative
        [[-2.0, 2.0]]
    """
    if logits.shape[1] == 2:  # exactly the margin: a binary model's one decision score s is read as [0, s]
        margin = logits[:, 1] - logits[:, 0]
        return np.stack([-margin, margin], axis=1)
    return logits - log_rest(logits)


def log_probs_and_rest(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log p_k, log(1 − p_k)) of p = softmax(logits), for every entry (N, K), from the logits."""
    norm = _log_sum_exp(logits)[:, None]
    return logits - norm, log_rest(logits) - norm


def _sigmoid(values: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(values)


def _binomial_loss(raw: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Σ log(1 + exp raw) − targets · raw (the half binomial loss) and its derivative in raw."""
    loss = float(np.sum(np.logaddexp(0.0, raw) - targets * raw))
    return loss, _sigmoid(raw) - targets


def fit_platt_sigmoid(decision: np.ndarray, targets: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of Platt's sigmoid P(y = 1 | s) = sigmoid(slope · s + intercept), fitted as scikit-learn's
    `CalibratedClassifierCV(method="sigmoid")` fits it (module doc).

    Args:
        decision: decision values s (N,), float64.
        targets: 0/1 outcomes (N,).

    Returns:
        (slope, intercept) as Python floats.

    Example:
        >>> import numpy as np
        >>> slope, intercept = fit_platt_sigmoid(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([0, 1, 0, 1]))
        >>> round(slope, 4), round(intercept, 4)  # Platt's targets 2/3 and 1/4 pull the fit towards 1/2
        (0.2023, 0.0)
    """
    from scipy.optimize import minimize  # scipy.optimize is slow to import; only fitting needs it

    scores = np.asarray(decision, dtype=np.float64)
    positive = np.asarray(targets) > 0
    scale = 1.0
    largest = float(np.max(np.abs(scores))) if scores.size else 0.0
    if largest >= PLATT_RESCALE_THRESHOLD:
        scale = largest
        scores = scores / scale
    prior1 = float(positive.sum())
    prior0 = positive.size - prior1
    smoothed = np.where(positive, (prior1 + 1.0) / (prior1 + 2.0), 1.0 / (prior0 + 2.0))

    def loss_grad(ab: np.ndarray) -> tuple[float, np.ndarray]:
        # scikit-learn's sign: P = sigmoid(−(A s + B)), raw prediction −(A s + B).
        loss, gradient = _binomial_loss(-(ab[0] * scores + ab[1]), smoothed)
        return loss, np.array([-gradient @ scores, -gradient.sum()])

    start = np.array([0.0, math.log((prior0 + 1.0) / (prior1 + 1.0))])
    result = minimize(loss_grad, start, method="L-BFGS-B", jac=True,
                      options={"gtol": 1e-6, "ftol": 64 * np.finfo(float).eps})
    a, b = result.x
    return float(-a / scale), float(-b)


def fit_logistic(features: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, float]:
    """(coefficients (d,), intercept) of the maximum-likelihood logistic regression of 0/1 `targets` on `features`
    (N, d): P(y = 1 | x) = sigmoid(x · coefficients + intercept), no penalty.

    Newton's method with a halving line search on the mean log-loss (d + 1 parameters, so each step is a small
    solve), from the intercept-only fit; it stops when a step lowers the loss by less than 1e-15 or moves no
    parameter by more than 1e-12, after at most MAX_NEWTON_STEPS steps.

    Args:
        features: (N, d) float64 features.
        targets: (N,) 0/1 outcomes.

    Returns:
        The coefficients and the intercept. On separable data the likelihood has no maximum: the fit stops with large
        coefficients (as LogisticRegression(C=1e10) does).

    Example:
        >>> import numpy as np
        >>> features, targets = np.array([[0.0], [0.0], [1.0], [1.0], [1.0]]), np.array([0, 1, 0, 1, 1])
        >>> coefficients, intercept = fit_logistic(features, targets)  # P = 1/2 at 0 and 2/3 at 1
        >>> round(float(coefficients[0]), 4), abs(round(intercept, 4))  # log 2 and 0
        (0.6931, 0.0)
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(targets, dtype=np.float64)
    n = max(y.size, 1)
    design = np.hstack([x, np.ones((x.shape[0], 1))])

    def loss_of(theta: np.ndarray) -> float:
        return _binomial_loss(design @ theta, y)[0] / n

    mean = float(np.clip(y.mean() if y.size else 0.5, 1e-6, 1 - 1e-6))
    theta = np.zeros(design.shape[1])
    theta[-1] = math.log(mean / (1.0 - mean))
    loss = loss_of(theta)
    for _ in range(MAX_NEWTON_STEPS):
        raw = design @ theta
        p = _sigmoid(raw)
        gradient = design.T @ (p - y) / n
        hessian = (design * (p * (1.0 - p))[:, None]).T @ design / n
        hessian[np.diag_indices_from(hessian)] += 1e-12  # a flat direction (a constant feature) stays solvable
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            step = gradient
        size = 1.0
        while size > 1e-10:
            candidate = theta - size * step
            new_loss = loss_of(candidate)
            if new_loss <= loss:
                break
            size /= 2.0
        else:
            break
        moved = float(np.max(np.abs(candidate - theta)))
        gained = loss - new_loss
        theta, loss = candidate, new_loss
        if gained < 1e-15 or moved < 1e-12:
            break
    return np.asarray(theta[:-1], dtype=np.float64), float(theta[-1])


def normalise_one_vs_rest(probs: np.ndarray) -> np.ndarray:
    """Per-class probabilities (N, K) divided by their row sum; a row whose sum is 0 becomes uniform (scikit-learn's
    `_CalibratedClassifier.predict_proba` rule for K > 2)."""
    total = probs.sum(axis=1, keepdims=True)
    uniform = np.full_like(probs, 1.0 / probs.shape[1])
    return np.divide(probs, total, out=uniform, where=total != 0)
