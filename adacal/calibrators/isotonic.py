"""Isotonic regression of top-label correctness on top-class confidence (Zadrozny & Elkan 2002).

Fitted with sklearn.isotonic.IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1, increasing=True). The
learned step-wise-linear map is kept as its thresholds (X_thresholds_, y_thresholds_) and applied with np.interp,
which is what sklearn's predict does (linear interpolation, clipped to the fitted range), so a calibrator loaded
from JSON gives the same outputs without sklearn objects. The full row is rebuilt by `complete_top_label`
(predicted class kept, rows sum to 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.calibrators.base import CALIBRATORS, TopLabelCalibrator, float_array



def isotonic_steps(confidences: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The increasing isotonic fit of correctness on confidence (scikit-learn's, clipped to [0, 1] and outside the
    fitted range), as its (thresholds, values) steps for `np.interp`; shared by the score calibrator here and the
    confidence map of `adacal.calibrators.confidence_maps`."""
    from sklearn.isotonic import IsotonicRegression  # imported here: sklearn takes seconds to import

    regression = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0, increasing=True)
    regression.fit(confidences, correct)
    return (np.asarray(regression.X_thresholds_, dtype=np.float64),
            np.asarray(regression.y_thresholds_, dtype=np.float64))

@CALIBRATORS.register("isotonic")
class IsotonicCalibration(TopLabelCalibrator):
    """Isotonic regression of top-label correctness on top-class confidence (Zadrozny & Elkan 2002); takes no
    options and learns `thresholds_` (confidences) and `values_` (calibrated confidences).

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[3.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 3.0]]), np.array([0, 1, 1, 1])
        >>> from adacal.calibrators import IsotonicCalibration
        >>> IsotonicCalibration().fit(logits, labels).values_.tolist()  # 0.88: 1 of 2 right, 0.95: 2 of 2
        [0.5, 1.0]
    """

    name = "isotonic"

    def __init__(self) -> None:
        pass

    def _fit_confidences(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        self.thresholds_, self.values_ = isotonic_steps(confidences, correct)

    def _map_confidences(self, confidences: np.ndarray) -> np.ndarray:
        return np.interp(confidences, self.thresholds_, self.values_)

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        return {"n_thresholds": int(self.thresholds_.size)}

    def _get_params(self) -> dict[str, Any]:
        return {"thresholds": self.thresholds_.tolist(), "values": self.values_.tolist()}

    def _set_params(self, params: dict[str, Any]) -> None:
        thresholds, values = float_array(params, "thresholds"), float_array(params, "values")
        if thresholds.size != values.size or (np.diff(thresholds) < 0).any() or (np.diff(values) < 0).any():
            raise ValueError("'thresholds' and 'values' must be non-decreasing and of equal length")
        if (values < 0).any() or (values > 1).any():
            raise ValueError("'values' must be probabilities, in [0, 1]")
        if thresholds[0] < 0 or thresholds[-1] > 1:  # top-class confidences, which lie in [0, 1]
            raise ValueError(f"'thresholds' must lie in [0, 1], got {thresholds[0]:.6g} to {thresholds[-1]:.6g}")
        self.thresholds_, self.values_ = thresholds, values
