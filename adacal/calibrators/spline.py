"""Spline calibration of the top-class confidence (Gupta et al. 2021, "Calibration of neural networks using splines").

Fit, as in the authors' reference (kartikgupta-at-anu/spline-calibration, recalibrate.py + utilities/spline.py):
1. sort the validation top-class scores s ascending (labels y = 1 if the top class is right);
2. the cumulative difference D_i = Σ_{j ≤ i} (y_j − s_j) / N against the fractile i / (N − 1);
3. a natural cubic spline with `n_knots` (default 6) equally spaced knots on [0, 1], knot values by least squares;
4. the calibrated score of validation sample i is s_i + D'(fractile_i) (the spline's derivative ≈ local
   accuracy − score).
New scores are mapped by linear interpolation of (s_i → calibrated_i) over the sorted validation scores (end values
outside their range, as the reference's `interpolated_function`), then clamped to [0, 1]. Tied validation scores
are merged into one point (their mean calibrated value). The map is monotone only approximately. The full row is
rebuilt by `complete_top_label` (predicted class kept, rows sum to 1).

We use scipy's CubicSpline(bc_type="natural") for the basis instead of the reference's hand-built matrices; the
least-squares problem and the resulting spline are the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.calibrators.base import CALIBRATORS, TopLabelCalibrator, check_int, float_array
from adacal.errors import InputError


def natural_spline_basis(knots: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(len(x), len(knots)) matrix: column j is the natural cubic spline through the unit vector e_j at `x`."""
    from scipy.interpolate import CubicSpline  # scipy.interpolate is slow to import; only fitting needs it

    return CubicSpline(knots, np.eye(knots.size), bc_type="natural")(x)


def fit_spline_map(confidences: np.ndarray, correct: np.ndarray, n_knots: int) -> tuple[np.ndarray, ...]:
    """(knot values, unique sorted scores, calibrated scores) for the Gupta et al. recalibration function."""
    from scipy.interpolate import CubicSpline

    order = np.argsort(confidences, kind="stable")
    scores, hits = confidences[order], correct[order]
    n = scores.size
    cumulative = np.cumsum(hits - scores) / n
    fractile = np.linspace(0.0, 1.0, n)
    knots = np.linspace(0.0, 1.0, n_knots)
    knot_values = np.linalg.lstsq(natural_spline_basis(knots, fractile), cumulative, rcond=None)[0]
    spline = CubicSpline(knots, knot_values, bc_type="natural")
    calibrated = scores + spline.derivative()(fractile)
    unique, inverse = np.unique(scores, return_inverse=True)
    merged = np.bincount(inverse, weights=calibrated) / np.bincount(inverse)
    return knot_values, unique, merged


@CALIBRATORS.register("spline")
class SplineCalibration(TopLabelCalibrator):
    """Spline recalibration of the top-class confidence (Gupta et al. 2021); learns `knot_values_` and the map
    `scores_` → `calibrated_`.

    Args:
        n_knots: the number of equally spaced knots of the natural cubic spline, ≥ 3 (default 6); fitting needs at
            least as many validation samples.

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[3.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 3.0]]), np.array([0, 1, 1, 1])
        >>> from adacal.calibrators import SplineCalibration
        >>> probs = SplineCalibration(n_knots=3).fit(logits, labels).transform(logits)
        >>> probs.argmax(axis=1).tolist(), probs.sum(axis=1).round(4).tolist()  # predicted class kept, rows sum to 1
        ([0, 0, 1, 1], [1.0, 1.0, 1.0, 1.0])
    """

    name = "spline"

    def __init__(self, *, n_knots: int = 6) -> None:
        self.n_knots = n_knots

    def check_options(self) -> None:
        check_int("n_knots", self.n_knots, minimum=3)

    def _fit_confidences(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        if confidences.size < self.n_knots:
            raise InputError(
                f"Expected at least {self.n_knots} validation samples for a {self.n_knots}-knot spline, "
                f"got {confidences.size}."
            )
        self.knot_values_, self.scores_, self.calibrated_ = fit_spline_map(confidences, correct, int(self.n_knots))

    def _map_confidences(self, confidences: np.ndarray) -> np.ndarray:
        return np.clip(np.interp(confidences, self.scores_, self.calibrated_), 0.0, 1.0)

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        return {"n_knots": int(self.n_knots), "knot_values": self.knot_values_.tolist()}

    def _get_params(self) -> dict[str, Any]:
        return {
            "knot_values": self.knot_values_.tolist(),
            "scores": self.scores_.tolist(),
            "calibrated": self.calibrated_.tolist(),
        }

    def _set_params(self, params: dict[str, Any]) -> None:
        knot_values = float_array(params, "knot_values")
        scores, calibrated = float_array(params, "scores"), float_array(params, "calibrated")
        if knot_values.size != self.n_knots:
            raise ValueError(f"'knot_values' must hold {self.n_knots} values")
        if scores.size != calibrated.size or (np.diff(scores) <= 0).any():
            raise ValueError("'scores' must be strictly increasing and as long as 'calibrated'")
        if scores[0] < 0 or scores[-1] > 1:  # the validation top-class confidences, which lie in [0, 1]
            raise ValueError(f"'scores' must lie in [0, 1], got {scores[0]:.6g} to {scores[-1]:.6g}")
        self.knot_values_, self.scores_, self.calibrated_ = knot_values, scores, calibrated
