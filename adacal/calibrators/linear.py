"""Vector scaling, matrix scaling and Dirichlet calibration (Guo et al. 2017; Kull et al. 2019, "Beyond temperature
scaling: obtaining well-calibrated multiclass probabilities with Dirichlet calibration", NeurIPS).

All three are a multinomial logistic regression on a per-row input x (N, K):
    probs = softmax(x Wᵀ + b)
- "vector-scaling": x = logits, W diagonal (K scales, K intercepts);
- "matrix-scaling": x = logits, W a full K × K matrix;
- "dirichlet": x = log-probabilities log softmax(logits), W full (Kull et al.'s Dirichlet calibration).

Fitting minimises the mean validation negative log-likelihood plus, for the full maps, the paper's ODIR penalty
(Off-Diagonal and Intercept Regularisation):
    reg_lambda · Σ_{i≠j} W_ij² / (K (K − 1))  +  reg_mu · Σ_j b_j² / K
(the diagonal is left free, so temperature scaling, W = I / T and b = 0, costs no penalty). The objective is
convex; it is minimised by scipy's L-BFGS-B with the analytic gradient, in float64, started at the NLL temperature
scaling solution (W = I / T, b = 0). L-BFGS-B only accepts steps that lower the objective, so the fitted map's
validation NLL is never above temperature scaling's, which it contains (for "dirichlet", softmax(log p / T) =
softmax(logits / T)). The fit is deterministic: no random start.

Defaults: reg_lambda = reg_mu = 0.01 (`ODIR_DEFAULT`). Kull et al. tune both by cross-validation over powers of 10;
raise them when the validation set is small for K² parameters (many classes), or let `adacal calibrate --method all`
choose between calibrators by cross-validation. Vector scaling has 2K parameters and is not regularised, as in the
paper.

None of these maps keeps the predicted class in general: class-wise scales and intercepts can reorder the classes
of a row (only W = c · I, c > 0, with equal intercepts is sure to keep it).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from adacal.calibrators.base import CALIBRATORS, Calibrator, check_int, check_nonnegative, float_array
from adacal.calibrators.temperature import fit_temperature_nll

ODIR_DEFAULT = 0.01
MAX_ITER_DEFAULT = 1000


def _log_softmax(values: np.ndarray) -> np.ndarray:
    shifted = values - values.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _softmax(values: np.ndarray) -> np.ndarray:
    return np.exp(_log_softmax(values))


def odir_penalty(weights: np.ndarray, bias: np.ndarray, reg_lambda: float, reg_mu: float) -> float:
    """reg_lambda · mean of the squared off-diagonal weights + reg_mu · mean of the squared intercepts."""
    k = bias.size
    off_diagonal = weights - np.diag(np.diag(weights))
    return float(reg_lambda * np.sum(off_diagonal**2) / (k * (k - 1)) + reg_mu * np.sum(bias**2) / k)


def linear_objective(
    flat: np.ndarray, inputs: np.ndarray, onehot: np.ndarray, *, diagonal: bool, reg_lambda: float, reg_mu: float
) -> tuple[float, np.ndarray]:
    """(mean NLL + ODIR penalty, its gradient) at the flat parameters [W (K or K²), b (K)]."""
    n, k = inputs.shape
    if diagonal:
        scale, bias = flat[:k], flat[k:]
        mapped = inputs * scale + bias
    else:
        weights, bias = flat[: k * k].reshape(k, k), flat[k * k :]
        mapped = inputs @ weights.T + bias
    log_probs = _log_softmax(mapped)
    loss = -float(np.sum(log_probs * onehot)) / n
    residual = (np.exp(log_probs) - onehot) / n  # d loss / d mapped
    grad_bias = residual.sum(axis=0) + 2.0 * reg_mu * bias / k
    if diagonal:
        grad_weights = np.sum(residual * inputs, axis=0)
    else:
        off_diagonal = weights - np.diag(np.diag(weights))
        grad_weights = (residual.T @ inputs + 2.0 * reg_lambda * off_diagonal / (k * (k - 1))).reshape(-1)
        loss += reg_lambda * float(np.sum(off_diagonal**2)) / (k * (k - 1))
    loss += reg_mu * float(np.sum(bias**2)) / k
    return loss, np.concatenate([grad_weights, grad_bias])


class _LinearCalibrator(Calibrator):
    """Shared fit / transform of the three maps; subclasses say which input and which weight shape."""

    diagonal: ClassVar[bool] = False
    uses_log_probs: ClassVar[bool] = False
    keeps_argmax = False

    def _inputs(self, logits: np.ndarray) -> np.ndarray:
        return _log_softmax(logits) if self.uses_log_probs else logits

    def _regularisation(self) -> tuple[float, float]:
        return 0.0, 0.0

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        from scipy.optimize import minimize  # scipy.optimize is slow to import; only fitting needs it

        inputs = self._inputs(logits)
        n, k = inputs.shape
        onehot = np.zeros((n, k))
        onehot[np.arange(n), labels] = 1.0
        # Start at temperature scaling (NLL): every map here contains it, and L-BFGS-B only goes downhill from it.
        inverse_temperature = 1.0 / fit_temperature_nll(logits, labels)
        start_weights = np.full(k, inverse_temperature) if self.diagonal else np.eye(k) * inverse_temperature
        start = np.concatenate([start_weights.reshape(-1), np.zeros(k)])
        reg_lambda, reg_mu = self._regularisation()
        result = minimize(
            lambda flat: linear_objective(
                flat, inputs, onehot, diagonal=self.diagonal, reg_lambda=reg_lambda, reg_mu=reg_mu
            ),
            start,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": int(self.max_iter), "ftol": 1e-12, "gtol": 1e-8},
        )
        flat = result.x if np.isfinite(result.fun) else start
        cut = k if self.diagonal else k * k
        self.weights_ = flat[:cut].copy() if self.diagonal else flat[:cut].reshape(k, k).copy()
        self.bias_ = flat[cut:].copy()
        # Stopping at the iteration limit or on a line search at machine precision still leaves a point no worse
        # than the start; `converged_` records which.
        self.converged_ = bool(result.success)
        self.n_iter_ = int(result.nit)

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        inputs = self._inputs(logits)
        mapped = inputs * self.weights_ + self.bias_ if self.diagonal else inputs @ self.weights_.T + self.bias_
        return _softmax(mapped)

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        k = self.bias_.size
        diagonal = self.weights_ if self.diagonal else np.diag(self.weights_)
        return {
            "n_params": int(self.weights_.size + k),
            "mean_scale": float(np.mean(diagonal)),
            "converged": self.converged_,
        }

    def _get_params(self) -> dict[str, Any]:
        return {
            "weights": self.weights_.tolist(),
            "bias": self.bias_.tolist(),
            "converged": self.converged_,
            "n_iter": self.n_iter_,
        }

    def _set_params(self, params: dict[str, Any]) -> None:
        weights = float_array(params, "weights", ndim=1 if self.diagonal else 2)
        bias = float_array(params, "bias")
        k = bias.size
        if k < 2 or weights.shape != ((k,) if self.diagonal else (k, k)):
            shape = "K" if self.diagonal else "K × K"
            raise ValueError(f"'weights' must be {shape} for the K = {k} entries of 'bias'")
        self.weights_, self.bias_ = weights, bias
        self.converged_ = bool(params.get("converged", True))
        self.n_iter_ = int(params.get("n_iter", 0))


@CALIBRATORS.register("vector-scaling")
class VectorScaling(_LinearCalibrator):
    """probs = softmax(logits · weights_ + bias_): a scale and an intercept per class (Guo et al. 2017)."""

    name = "vector-scaling"
    diagonal = True

    def __init__(self, *, max_iter: int = MAX_ITER_DEFAULT) -> None:
        self.max_iter = max_iter

    def check_options(self) -> None:
        check_int("max_iter", self.max_iter, minimum=1)


class _OdirCalibrator(_LinearCalibrator):
    def __init__(
        self, *, reg_lambda: float = ODIR_DEFAULT, reg_mu: float = ODIR_DEFAULT, max_iter: int = MAX_ITER_DEFAULT
    ) -> None:
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter

    def check_options(self) -> None:
        check_nonnegative("reg_lambda", self.reg_lambda)
        check_nonnegative("reg_mu", self.reg_mu)
        check_int("max_iter", self.max_iter, minimum=1)

    def _regularisation(self) -> tuple[float, float]:
        return float(self.reg_lambda), float(self.reg_mu)


@CALIBRATORS.register("matrix-scaling")
class MatrixScaling(_OdirCalibrator):
    """probs = softmax(logits · weights_ᵀ + bias_): a full K × K map with ODIR (Kull et al. 2019)."""

    name = "matrix-scaling"


@CALIBRATORS.register("dirichlet")
class DirichletCalibration(_OdirCalibrator):
    """probs = softmax(log(p) · weights_ᵀ + bias_), p = softmax(logits), with ODIR (Kull et al. 2019)."""

    name = "dirichlet"
    uses_log_probs = True
