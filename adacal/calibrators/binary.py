"""Platt scaling (Platt 2000) and beta calibration (Kull, Silva Filho & Flach 2017): binary maps of one class's
score, fitted by logistic regression, and their one-vs-rest form for K > 2.

Both read a class k of a row through softmax only (so logits and log-probabilities give the same output):
- "platt": P(y = k) = sigmoid(a · s_k + b) on the log-odds s_k = log p_k − log(1 − p_k) = z_k − log Σ_{j≠k} e^{z_j};
  for a binary model s₁ = z₁ − z₀, the margin (a one-score model's decision score s, or the log-odds of its
  probability p). Fitted exactly as scikit-learn's `CalibratedClassifierCV(method="sigmoid")` does
  (`adacal.calibrators.logistic.fit_platt_sigmoid`: Platt's smoothed targets, its start, L-BFGS-B), so a and b
  equal scikit-learn's (negated: it writes sigmoid(−(A s + B))) on the same decision values.
- "beta": P(y = k) = sigmoid(a · ln p_k − b · ln(1 − p_k) + c), a, b ≥ 0, fitted as the authors' `betacal` package
  (parameters "abm") fits it: p clipped to [ε, 1 − ε] (float64's ε), the maximum-likelihood logistic regression on
  the two features, and where it gives a < 0 (b < 0) the one-feature fit on −ln(1 − p) (on ln p) with a = 0 (b = 0),
  so the map is non-decreasing in p; where that one term is negative too (tiny or degenerate validation sets), the
  constant map of the base rate (a = b = 0; betacal would keep the negative term and reverse the ranking).
  The three parameters contain Platt's on the log-odds (a = b) and the identity
  (a = b = 1, c = 0).

Binary (K = 2): one map, fitted on class 1 against the rest, and P(y = 0) = 1 − P(y = 1) (as scikit-learn).
K > 2: one map per class k, fitted on s_k (or p_k) against [label = k], and the K outputs divided by their sum (a
row whose sum is 0 becomes uniform): scikit-learn's one-vs-rest reduction for `method="sigmoid"` (Zadrozny & Elkan
2002), which is what a user of `CalibratedClassifierCV` gets for a multi-class model. The per-class maps (and the
renormalisation) may change a row's predicted class, as may a binary map whose output crosses 1/2 elsewhere.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from adacal.calibrators.base import CALIBRATORS, Calibrator, float_array
from adacal.calibrators.logistic import (
    class_log_odds,
    fit_logistic,
    fit_platt_sigmoid,
    log_probs_and_rest,
    normalise_one_vs_rest,
)

LOG_EPS = float(np.log(np.finfo(np.float64).eps))  # betacal clips p to [ε, 1 − ε]


def _fitted_columns(k: int) -> list[int]:
    """The classes with a map: class 1 for a binary model, every class for K > 2."""
    return [1] if k == 2 else list(range(k))


class _OneVsRest(Calibrator):
    """Shared fit / transform: a per-class map with len(`param_names`) numbers per fitted class, in `params_`
    (M, len(param_names)), M = 1 for a binary model, K otherwise."""

    keeps_argmax = False
    param_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        pass

    def _features(self, logits: np.ndarray) -> np.ndarray:
        """The map's input for every class, (N, K, ...): computed once for all columns."""
        raise NotImplementedError

    def _fit_column(self, features: Any, targets: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _apply(self, features: Any, params: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        features = self._features(logits)
        self.params_ = np.array([self._fit_column(features[:, c], (labels == c).astype(np.float64))
                                 for c in _fitted_columns(logits.shape[1])])

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        k = logits.shape[1]
        features = self._features(logits)
        per_class = np.stack([self._apply(features[:, c], self.params_[i])
                              for i, c in enumerate(_fitted_columns(k))], axis=1)
        if k == 2:
            return np.hstack([1.0 - per_class, per_class])
        return normalise_one_vs_rest(per_class)

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        if self.params_.shape[0] == 1:
            return {name: float(value) for name, value in zip(self.param_names, self.params_[0])}
        return {"n_maps": int(self.params_.shape[0]),
                **{f"mean_{name}": float(value) for name, value in zip(self.param_names, self.params_.mean(axis=0))}}

    def _get_params(self) -> dict[str, Any]:
        return {name: self.params_[:, i].tolist() for i, name in enumerate(self.param_names)}

    def _set_params(self, params: dict[str, Any]) -> None:
        columns = [float_array(params, name) for name in self.param_names]
        sizes = {column.size for column in columns}
        if len(sizes) != 1 or sizes == {2}:
            raise ValueError(f"'{self.param_names[0]}' and the others must hold 1 value (binary) or one per class "
                             "(K > 2), all of the same length")
        self.params_ = np.stack(columns, axis=1)
        self._check_saved(self.params_)

    def _check_saved(self, params: np.ndarray) -> None:
        """Subclasses refuse saved parameters their fit could not give."""

    def _params_num_classes(self) -> int:
        m = int(self.params_.shape[0])
        return 2 if m == 1 else m


@CALIBRATORS.register("platt")
class PlattScaling(_OneVsRest):
    """Platt scaling (Platt 2000), as scikit-learn's `CalibratedClassifierCV(method="sigmoid")`: P(y = 1) =
    sigmoid(slope · s + intercept) on a binary model's margin s = z₁ − z₀ (one-vs-rest and renormalised for
    K > 2, on each class's log-odds). Takes no options; learns `params_` (one [slope, intercept] row per map).

    Example:
        >>> import numpy as np
        >>> scores, labels = np.array([-2.0, -1.0, 1.0, 2.0]), np.array([0, 1, 0, 1])  # one decision score each
        >>> from adacal.calibrators import PlattScaling
        >>> calibrator = PlattScaling().fit(scores, labels)
        >>> round(calibrator.summary()["slope"], 4), calibrator.transform([0.0])[0].tolist()
        (0.2023, [0.5, 0.5])
    """

    name = "platt"
    param_names = ("slope", "intercept")

    def _features(self, logits: np.ndarray) -> np.ndarray:
        return class_log_odds(logits)

    def _fit_column(self, features: np.ndarray, targets: np.ndarray) -> np.ndarray:
        return np.array(fit_platt_sigmoid(features, targets))

    def _apply(self, features: np.ndarray, params: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        with np.errstate(over="ignore", invalid="ignore"):
            return expit(params[0] * features + params[1])


@CALIBRATORS.register("beta")
class BetaCalibration(_OneVsRest):
    """Beta calibration (Kull, Silva Filho & Flach 2017), as the authors' `betacal` fits it: P(y = 1) = sigmoid(a ·
    ln p − b · ln(1 − p) + c) on a binary model's probability p of class 1, a, b ≥ 0 (one-vs-rest and renormalised
    for K > 2). Takes no options; learns `params_` (one [a, b, c] row per map).

    Example:
        >>> import numpy as np
        >>> probs, labels = np.array([0.1, 0.3, 0.6, 0.7, 0.8, 0.9]), np.array([0, 0, 1, 0, 1, 1])
        >>> from adacal.calibrators import BetaCalibration
        >>> calibrator = BetaCalibration().fit(probs, labels)
        >>> {key: round(value, 3) for key, value in calibrator.summary().items()}
        {'a': 2.453, 'b': 1.704, 'c': -0.467}
    """

    name = "beta"
    param_names = ("a", "b", "c")

    def _features(self, logits: np.ndarray) -> np.ndarray:
        log_p, log_rest = log_probs_and_rest(logits)
        return np.stack([np.maximum(log_p, LOG_EPS), -np.maximum(log_rest, LOG_EPS)], axis=2)

    def _fit_column(self, features: np.ndarray, targets: np.ndarray) -> np.ndarray:
        coefficients, intercept = fit_logistic(features, targets)
        if coefficients[0] < 0:  # betacal: refit on −ln(1 − p) alone, a = 0
            (b,), intercept = fit_logistic(features[:, 1:], targets)
            return np.array([0.0, b, intercept]) if b >= 0 else _constant(targets)
        if coefficients[1] < 0:  # refit on ln p alone, b = 0
            (a,), intercept = fit_logistic(features[:, :1], targets)
            return np.array([a, 0.0, intercept]) if a >= 0 else _constant(targets)
        return np.array([coefficients[0], coefficients[1], intercept])

    def _apply(self, features: np.ndarray, params: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        with np.errstate(over="ignore", invalid="ignore"):
            return expit(features @ params[:2] + params[2])

    def _check_saved(self, params: np.ndarray) -> None:
        if (params[:, :2] < 0).any():
            raise ValueError("'a' and 'b' must be non-negative (a fit keeps the map non-decreasing in p)")


def _constant(targets: np.ndarray) -> np.ndarray:
    """a = b = 0 and c the log-odds of the base rate: where even the one-term refit would make the map decrease in p
    (betacal keeps such a negative term; a decreasing map would reverse the model's ranking), the map is constant."""
    rate = float(np.clip(np.mean(targets), 1e-12, 1.0 - 1e-12))
    return np.array([0.0, 0.0, np.log(rate / (1.0 - rate))])
