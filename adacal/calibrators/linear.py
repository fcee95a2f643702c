"""Vector scaling, matrix scaling and Dirichlet calibration (Guo et al. 2017; Kull et al. 2019, "Beyond temperature
scaling: obtaining well-calibrated multiclass probabilities with Dirichlet calibration", NeurIPS).

All three are a multinomial logistic regression on a per-row input x (N, K):
    probs = softmax(x Wᵀ + b)
- "vector-scaling": x = logits, W diagonal (K scales, K intercepts);
- "matrix-scaling": x = logits, W a full K × K matrix;
- "dirichlet": x = log-probabilities log softmax(logits), W full (Kull et al.'s Dirichlet calibration).

Fitting minimises the mean validation negative log-likelihood plus the paper's ODIR penalty (Off-Diagonal and
Intercept Regularisation; vector scaling has only the intercept term):
    reg_lambda · Σ_{i≠j} W_ij² / (K (K − 1))  +  reg_mu · Σ_j b_j² / K
(the diagonal is left free, so temperature scaling, W = I / T and b = 0, costs no penalty). The objective is
convex; it is minimised by scipy's L-BFGS-B with the analytic gradient, in float64, in centred coordinates, started
at the NLL temperature scaling solution (W = I / T, b = 0), and a result above the start is never kept: the penalty
is 0 there, so the fitted map's validation NLL is never above temperature scaling's, which every map here contains
(for "dirichlet", softmax(log p / T) = softmax(logits / T)). The fit is deterministic: no random start.

Defaults: reg_lambda = reg_mu = 1 (`ODIR_DEFAULT`; per off-diagonal weight that is a penalty of w² / (K (K − 1)),
mild for K ≤ 10) and at most 500 L-BFGS-B iterations (`max_iter`). Kull et al. tune both strengths by cross-validation
over powers of 10. With many classes the K² weights overfit a validation set of a few thousand samples unless the
strengths are raised a lot (on synthetic K = 100, N = 5000 data, reg 1 to 100 still gave a test NLL well above
temperature scaling's), so tune them there, or let `adacal calibrate --method all` choose between calibrators by
cross-validation, which sees the overfitting. Large K is also slow: each iteration costs O(N K²) (K = 1000, N = 1000:
about 12 s on one core), and memory grows as K²: a fit that would not fit in the memory available (about 272 bytes per
parameter, 27 GB for K = 10⁴ in matrix form) is refused with an InputError before anything is allocated.

Vector scaling (2K parameters) takes ODIR's intercept term only (`reg_mu`, default 1; its scales are diagonal, so
there is nothing off-diagonal to penalise). Guo et al.'s vector scaling is unregularised (reg_mu = 0), but on a
small validation set its intercepts run away: on the digits MLP's 360 validation samples, unregularised intercepts
reached |b| ≈ 80 and test NLL 1.06 against 0.155 uncalibrated.

None of these maps keeps the predicted class in general: class-wise scales and intercepts can reorder the classes
of a row (only W = c · I, c > 0, with equal intercepts is sure to keep it).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from adacal.calibrators.base import CALIBRATORS, Calibrator, check_int, check_nonnegative, float_array
from adacal.calibrators.temperature import fit_temperature_nll

ODIR_DEFAULT = 1.0
MAX_ITER_DEFAULT = 500
# L-BFGS-B stops when the objective (mean NLL, nats) changes by less than FTOL relative or the gradient is below GTOL.
FTOL = 1e-10
GTOL = 1e-6
# Bytes a fit needs per parameter (the point, its gradient, L-BFGS-B's 10 pairs of correction vectors and its other
# work vectors, measured at ~210 after a few iterations with scipy 1.17) and per validation score (the inputs, their
# centred copy, one-hot labels, the mapped scores, log-probabilities and residuals).
BYTES_PER_PARAM = 272
BYTES_PER_SCORE = 96


def _log_softmax(values: np.ndarray) -> np.ndarray:
    shifted = values - values.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _softmax(values: np.ndarray) -> np.ndarray:
    return np.exp(_log_softmax(values))


def linear_objective(
    flat: np.ndarray,
    inputs: np.ndarray,
    onehot: np.ndarray,
    *,
    diagonal: bool,
    reg_lambda: float,
    reg_mu: float,
    centre: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """(mean NLL + ODIR penalty, its gradient) at the flat parameters [W (K or K²), c (K)].

    With `centre` m, `inputs` are taken to be x − m and c the intercept of the centred map, so the intercept of the
    map on x is b = c − W m (what the penalty applies to): the same objective in better-conditioned coordinates
    (log-probabilities share a large common offset). Without it, c = b.
    """
    n, k = inputs.shape
    if diagonal:
        scale, shift = flat[:k], flat[k:]
        mapped = inputs * scale + shift
        bias = shift if centre is None else shift - scale * centre
    else:
        weights, shift = flat[: k * k].reshape(k, k), flat[k * k :]
        mapped = inputs @ weights.T + shift
        bias = shift if centre is None else shift - weights @ centre
    log_probs = _log_softmax(mapped)
    loss = -float(np.sum(log_probs * onehot)) / n + reg_mu * float(np.sum(bias**2)) / k
    residual = (np.exp(log_probs) - onehot) / n  # d loss / d mapped
    bias_grad = 2.0 * reg_mu * bias / k  # d penalty / d b
    grad_shift = residual.sum(axis=0) + bias_grad
    if diagonal:
        grad_weights = np.sum(residual * inputs, axis=0)
        if centre is not None:
            grad_weights -= bias_grad * centre
    else:
        off_diagonal = weights - np.diag(np.diag(weights))
        grad_matrix = residual.T @ inputs + 2.0 * reg_lambda * off_diagonal / (k * (k - 1))
        if centre is not None:
            grad_matrix -= np.outer(bias_grad, centre)
        grad_weights = grad_matrix.reshape(-1)
        loss += reg_lambda * float(np.sum(off_diagonal**2)) / (k * (k - 1))
    return loss, np.concatenate([grad_weights, grad_shift])


class _LinearCalibrator(Calibrator):
    """Shared fit / transform of the three maps; subclasses say which input and which weight shape."""

    diagonal: ClassVar[bool] = False
    uses_log_probs: ClassVar[bool] = False
    keeps_argmax = False
    shift_invariant = False  # per-class weights on the logits themselves (Dirichlet's log-probabilities: invariant)

    def _inputs(self, logits: np.ndarray) -> np.ndarray:
        return _log_softmax(logits) if self.uses_log_probs else logits

    def _regularisation(self) -> tuple[float, float]:
        return 0.0, 0.0

    def _check_fit_memory(self, n: int, k: int) -> None:
        """Refuse, before allocating anything, a fit whose parameters (K² + K for the full maps: 10⁸ at K = 10⁴),
        L-BFGS-B's history of them and the (N, K) work arrays cannot fit in the memory available now."""
        from adacal.metrics.allocation import check_fits

        n_params = 2 * k if self.diagonal else k * k + k
        needed = BYTES_PER_PARAM * n_params + BYTES_PER_SCORE * n * k
        check_fits(needed, what=f"fitting {self.name} on {n} samples of {k} classes ({n_params:,} parameters)",
                   name="the number of classes", value=k)

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        from scipy.optimize import minimize  # scipy.optimize is slow to import; only fitting needs it

        n, k = logits.shape
        self._check_fit_memory(n, k)
        inputs = self._inputs(logits)
        onehot = np.zeros((n, k))
        onehot[np.arange(n), labels] = 1.0
        # Optimise in centred coordinates (see linear_objective): same optimum, far fewer iterations.
        centre = inputs.mean(axis=0)
        centred = inputs - centre
        # Start at temperature scaling (NLL): every map here contains it, and L-BFGS-B only goes downhill from it.
        inverse_temperature = 1.0 / fit_temperature_nll(logits, labels)
        start_weights = np.full(k, inverse_temperature) if self.diagonal else np.eye(k) * inverse_temperature
        start_shift = start_weights * centre if self.diagonal else start_weights @ centre  # so that b = 0
        start = np.concatenate([start_weights.reshape(-1), start_shift])
        reg_lambda, reg_mu = self._regularisation()
        result = minimize(
            lambda flat: linear_objective(
                flat, centred, onehot, diagonal=self.diagonal, reg_lambda=reg_lambda, reg_mu=reg_mu, centre=centre
            ),
            start,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": int(self.max_iter), "ftol": FTOL, "gtol": GTOL},
        )
        flat = result.x if np.isfinite(result.fun) and result.fun <= linear_objective(
            start, centred, onehot, diagonal=self.diagonal, reg_lambda=reg_lambda, reg_mu=reg_mu, centre=centre
        )[0] else start
        cut = k if self.diagonal else k * k
        weights = flat[:cut].copy() if self.diagonal else flat[:cut].reshape(k, k).copy()
        self.weights_ = weights
        self.bias_ = flat[cut:] - (weights * centre if self.diagonal else weights @ centre)
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
        converged, n_iter = params.get("converged", True), params.get("n_iter", 0)
        if not isinstance(converged, bool):
            raise ValueError(f"'converged' must be true or false, got {converged!r}")
        if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 0:
            raise ValueError(f"'n_iter' must be a non-negative integer, got {n_iter!r}")
        self.converged_, self.n_iter_ = converged, n_iter

    def _params_num_classes(self) -> int:
        return int(self.bias_.size)


@CALIBRATORS.register("vector-scaling")
class VectorScaling(_LinearCalibrator):
    """Vector scaling (Guo et al. 2017): probs = softmax(logits · weights_ + bias_), a scale and an intercept per
    class. It may change the predicted class.

    Args:
        reg_mu: the L2 penalty on the intercepts, ≥ 0 (default 1.0; 0 is Guo et al.'s unregularised form).
        max_iter: the most L-BFGS-B iterations (default 500).

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])  # 3 of 4 right
        >>> from adacal.calibrators import VectorScaling
        >>> VectorScaling().fit(logits, labels).transform(logits)[0].round(4).tolist()
        [0.75, 0.25]
    """

    name = "vector-scaling"
    diagonal = True

    def __init__(self, *, reg_mu: float = ODIR_DEFAULT, max_iter: int = MAX_ITER_DEFAULT) -> None:
        self.reg_mu = reg_mu
        self.max_iter = max_iter

    def check_options(self) -> None:
        check_nonnegative("reg_mu", self.reg_mu)
        check_int("max_iter", self.max_iter, minimum=1)

    def _regularisation(self) -> tuple[float, float]:
        return 0.0, float(self.reg_mu)


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
    """Matrix scaling: probs = softmax(logits · weights_ᵀ + bias_), a full K × K map regularised by ODIR (Kull et
    al. 2019). It may change the predicted class.

    Args:
        reg_lambda: the ODIR penalty on the off-diagonal weights, ≥ 0 (default 1.0).
        reg_mu: the ODIR penalty on the intercepts, ≥ 0 (default 1.0).
        max_iter: the most L-BFGS-B iterations (default 500).

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])  # 3 of 4 right
        >>> from adacal.calibrators import MatrixScaling
        >>> MatrixScaling().fit(logits, labels).transform(logits)[0].round(4).tolist()
        [0.75, 0.25]
    """

    name = "matrix-scaling"


@CALIBRATORS.register("dirichlet")
class DirichletCalibration(_OdirCalibrator):
    """Dirichlet calibration (Kull et al. 2019): probs = softmax(log(p) · weights_ᵀ + bias_), p = softmax(logits),
    regularised by ODIR. It may change the predicted class.

    Args:
        reg_lambda: the ODIR penalty on the off-diagonal weights, ≥ 0 (default 1.0).
        reg_mu: the ODIR penalty on the intercepts, ≥ 0 (default 1.0).
        max_iter: the most L-BFGS-B iterations (default 500).

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])  # 3 of 4 right
        >>> from adacal.calibrators import DirichletCalibration
        >>> DirichletCalibration().fit(logits, labels).transform(logits)[0].round(4).tolist()
        [0.75, 0.25]
    """

    name = "dirichlet"
    uses_log_probs = True
    shift_invariant = True
