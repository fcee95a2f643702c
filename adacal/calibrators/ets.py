"""Ensemble temperature scaling, ETS (Zhang, Kailkhura & Han 2020, "Mix-n-Match", ICML).

probs = w0 · softmax(logits / T) + w1 · softmax(logits) + w2 · 1/K, with w ≥ 0 and Σ w = 1.

Fitting follows the authors' reference (zhang64-llnl/Mix-n-Match-Calibration, util_calibration.py): first T, then
the weights by SLSQP (bounds [0, 1], equality constraint Σ w = 1, start (1, 0, 0), tolerance 1e-12) minimising the
validation squared error between probs and one-hot labels. Two differences, neither of which moves the optimum
beyond solver tolerance:
- T is fitted by NLL (our TemperatureScaling, objective "nll"), as the AdaFocal paper describes ETS ("fit T first");
  the reference's `ets_calibrate` uses an MSE-fitted T and notes that CE works too;
- the squared error is the Brier score mean_n Σ_k (p_nk - y_nk)² (the reference averages over N·K entries, a
  constant factor K), evaluated from a 3 × 3 Gram matrix so each SLSQP step costs O(1) and memory stays O(N·K).
Every component keeps the class order, so ETS never changes the predicted class (up to ties): the fit leaves at
least MIN_MODEL_WEIGHT on the model's components, where on a degenerate validation set it would give the uniform
distribution all the weight and rows that tie up to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.arrays import softmax
from adacal.calibrators.base import CALIBRATORS, Calibrator, float_array
from adacal.calibrators.temperature import (
    fit_temperature_nll,
    saved_temperature,
    temperature_at_bound,
    tempered_softmax,
)
from adacal.errors import AdacalError


# The least weight fit_ets_weights leaves on the model's two components together, so that the mixture's argmax is
# the model's even when the fit would put everything on the uniform distribution.
MIN_MODEL_WEIGHT = 1e-6


def ets_components(logits: np.ndarray, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """The two non-trivial mixture components: softmax(logits / T) and softmax(logits)."""
    return tempered_softmax(logits, temperature), softmax(logits)


def brier_quadratic(logits: np.ndarray, labels: np.ndarray, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """(G, b) with Brier(w) = wᵀ G w − 2 bᵀ w + 1 for the mixture of [softmax(z/T), softmax(z), uniform]."""
    scaled, raw = ets_components(logits, temperature)
    k = logits.shape[1]
    rows = np.arange(labels.size)
    gram = np.empty((3, 3))
    gram[0, 0] = np.mean(np.sum(scaled * scaled, axis=1))
    gram[1, 1] = np.mean(np.sum(raw * raw, axis=1))
    gram[0, 1] = gram[1, 0] = np.mean(np.sum(scaled * raw, axis=1))
    # The uniform vector u = 1/K: <p, u> = 1/K for any probability vector p, and <u, u> = 1/K.
    gram[2, :] = gram[:, 2] = 1.0 / k
    linear = np.array([np.mean(scaled[rows, labels]), np.mean(raw[rows, labels]), 1.0 / k])
    return gram, linear


def fit_ets_weights(gram: np.ndarray, linear: np.ndarray) -> np.ndarray:
    """Weights on the simplex minimising wᵀ G w − 2 bᵀ w (SLSQP, as the reference code)."""
    from scipy.optimize import minimize  # scipy.optimize is slow to import; only fitting needs it

    result = minimize(
        lambda w: float(w @ gram @ w - 2.0 * linear @ w),
        np.array([1.0, 0.0, 0.0]),
        jac=lambda w: 2.0 * (gram @ w) - 2.0 * linear,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * 3,
        constraints={"type": "eq", "fun": lambda w: np.sum(w) - 1.0, "jac": lambda w: np.ones(3)},
        options={"ftol": 1e-12, "maxiter": 200},
    )
    if not result.success:
        raise AdacalError(f"Ensemble temperature scaling did not converge: {str(result.message).rstrip('.')}.")
    weights = np.clip(result.x, 0.0, None)
    weights /= weights.sum()
    informative = weights[0] + weights[1]
    if informative < MIN_MODEL_WEIGHT:
        # (Nearly) all weight on the uniform distribution, the optimum on a degenerate validation set (one class, a
        # few samples): its rows would tie up to rounding and lose the predicted class. Keep a trace of the model's
        # ranking (the Brier score moves by at most MIN_MODEL_WEIGHT).
        share = weights[:2] / informative if informative > 0 else np.array([1.0, 0.0])
        weights = np.array([*(share * MIN_MODEL_WEIGHT), 1.0 - MIN_MODEL_WEIGHT])
    return weights


@CALIBRATORS.register("ets")
class EnsembleTemperatureScaling(Calibrator):
    """Ensemble temperature scaling (Zhang et al. 2020): w0 · softmax(logits / T) + w1 · softmax(logits) + w2 / K.

    Takes no options; learns `temperature_` (by NLL) and `weights_` (on the simplex, minimising the Brier score).

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])  # 3 of 4 right
        >>> from adacal.calibrators import EnsembleTemperatureScaling
        >>> EnsembleTemperatureScaling().fit(logits, labels).transform(logits)[0].round(4).tolist()
        [0.75, 0.25]
    """

    name = "ets"

    def __init__(self) -> None:
        pass

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        self.temperature_ = fit_temperature_nll(logits, labels)
        self.weights_ = fit_ets_weights(*brier_quadratic(logits, labels, self.temperature_))
        self.at_bound_ = temperature_at_bound(self.temperature_, "nll")

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        scaled, raw = ets_components(logits, self.temperature_)
        w = self.weights_
        return w[0] * scaled + w[1] * raw + w[2] / logits.shape[1]

    def summary(self) -> dict[str, Any]:
        return {**super().summary(), "at_bound": self.at_bound_}

    def _ties_why(self) -> str:
        return (f" (T = {self.temperature_:.3g}, weights {np.round(self.weights_, 6).tolist()}: its mixture's "
                "differences fall below float64's resolution)")

    def _get_params(self) -> dict[str, Any]:
        return {"temperature": self.temperature_, "weights": self.weights_.tolist()}

    def _set_params(self, params: dict[str, Any]) -> None:
        temperature = saved_temperature(params)
        weights = float_array(params, "weights")
        if weights.size != 3 or (weights < 0).any() or (weights > 1).any() or abs(weights.sum() - 1.0) > 1e-6:
            raise ValueError("'weights' must be 3 non-negative numbers summing to 1")
        self.temperature_, self.weights_ = temperature, weights
        self.at_bound_ = temperature_at_bound(temperature, "nll")
