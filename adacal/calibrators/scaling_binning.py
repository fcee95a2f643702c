"""Scaling-binning (Kumar, Liang & Ma 2019, "Verified uncertainty calibration", NeurIPS): a scaling map of the
top-class confidence, then equal-mass binning of the scaled confidences, each bin output as the mean of the scaled
confidences in it (not of the labels, as histogram binning does), so the calibrator takes finitely many values and its
calibration error can be measured.

As the authors' package (`calibration.PlattBinnerTopCalibrator`, uncertainty-calibration 0.1.4) fits it, on one
validation set:
1. scaling (`scaler`): "platt" (default, the package's), g(q) = sigmoid(a · logit(q) + b) on the top-class
   confidence q clipped to [1e-12, 1 − 1e-12], a and b the maximum-likelihood logistic regression of top-label
   correctness on logit(q); or "temperature", g = the top probability of softmax(logits / T), T fitted by NLL;
2. bins: `n_bins` equal-mass bins of the scaled validation confidences (the shared edges, `equal_mass_edges`: cuts at
   midpoints, which are the package's `get_equal_bins`; a bin (e_i, e_{i+1}] holds what `bisect_left` gives it);
3. output: a confidence q maps to the mean of g over the validation rows in the bin of g(q) (an empty bin, from tied
   values, maps to its midpoint).
The paper fits the scaler and the bins on two halves of the validation set; the package, and adacal, on all of it.
The row is rebuilt by `complete_top_label` (predicted class kept, rows sum to 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.arrays import softmax
from adacal.calibrators.base import (
    CALIBRATORS,
    TopLabelCalibrator,
    check_choice,
    check_int,
    complete_top_label,
    float_array,
)
from adacal.calibrators.logistic import class_log_odds, fit_logistic
from adacal.calibrators.temperature import fit_temperature_nll, saved_temperature, tempered_softmax
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.binning import assign_bins, equal_mass_edges
from adacal.metrics.prepared import row_top

SCALERS = ("platt", "temperature")
# The package clips the top-class confidence to [1e-12, 1 − 1e-12] before its logit.
LOGIT_LIMIT = float(np.log((1 - 1e-12) / 1e-12))


@CALIBRATORS.register("scaling-binning")
class ScalingBinning(TopLabelCalibrator):
    """Scaling-binning (Kumar, Liang & Ma 2019): Platt (or temperature) scaling of the top-class confidence, then the
    mean scaled confidence of its equal-mass bin. Learns `slope_` and `intercept_` (platt) or `temperature_`, and
    `edges_`, `bin_values_`.

    Args:
        n_bins: the number of equal-mass bins (default 15).
        scaler: "platt" (default, the authors' package) or "temperature".

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[3.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 3.0]]), np.array([0, 1, 1, 1])
        >>> from adacal.calibrators import ScalingBinning
        >>> calibrator = ScalingBinning(n_bins=1).fit(logits, labels)
        >>> calibrator.bin_values_.round(4).tolist()  # one bin: the mean scaled confidence, 3 of 4 right
        [0.75]
    """

    name = "scaling-binning"

    def __init__(self, *, n_bins: int = DEFAULT_N_BINS, scaler: str = "platt") -> None:
        self.n_bins = n_bins
        self.scaler = scaler

    def check_options(self) -> None:
        check_int("n_bins", self.n_bins, minimum=1)
        check_choice("scaling-binning scaler", self.scaler, SCALERS)

    def _scaled(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(each row's predicted class, its scaled top-class confidence g)."""
        if self.scaler == "temperature":
            predicted, scaled = row_top(tempered_softmax(logits, self.temperature_))
            return predicted, scaled
        predicted = row_top(softmax(logits))[0]
        log_odds = np.clip(class_log_odds(logits)[np.arange(len(logits)), predicted], -LOGIT_LIMIT, LOGIT_LIMIT)
        from scipy.special import expit

        return predicted, expit(self.slope_ * log_odds + self.intercept_)

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        predicted = row_top(softmax(logits))[0]
        correct = (predicted == labels).astype(np.float64)
        if self.scaler == "temperature":
            self.temperature_ = fit_temperature_nll(logits, labels)
        else:
            log_odds = np.clip(class_log_odds(logits)[np.arange(len(logits)), predicted], -LOGIT_LIMIT, LOGIT_LIMIT)
            (slope,), intercept = fit_logistic(log_odds[:, None], correct)
            self.slope_, self.intercept_ = float(slope), float(intercept)
        scaled = self._scaled(logits)[1]
        edges = equal_mass_edges(scaled, int(self.n_bins))
        index = assign_bins(scaled, edges)
        counts = np.bincount(index, minlength=int(self.n_bins))
        sums = np.bincount(index, weights=scaled, minlength=int(self.n_bins))
        midpoints = (edges[:-1] + edges[1:]) / 2.0
        self.edges_ = edges
        self.bin_values_ = np.where(counts > 0, sums / np.maximum(counts, 1), midpoints)
        self.bin_counts_ = counts

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        probs = softmax(logits)
        predicted, scaled = self._scaled(logits)
        new_top = self.bin_values_[assign_bins(scaled, self.edges_)]
        return complete_top_label(probs, new_top, top_index=predicted)

    def calibrate_confidences(self, confidences: Any) -> np.ndarray:
        """Not defined on confidences alone for the temperature scaler (it needs the logits); the Platt scaler's map
        of top-class confidences (N,) to bin values (N,)."""
        self._check_fitted()
        values = np.clip(np.asarray(confidences, dtype=np.float64).reshape(-1), 1e-12, 1 - 1e-12)
        if self.scaler == "temperature":
            raise InputError("Expected scaler='platt' to map confidences alone, got scaler='temperature': it maps "
                             "logits (use transform).")
        from scipy.special import expit

        scaled = expit(self.slope_ * np.log(values / (1 - values)) + self.intercept_)
        return self.bin_values_[assign_bins(scaled, self.edges_)]

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        scaling = ({"temperature": self.temperature_} if self.scaler == "temperature"
                   else {"slope": self.slope_, "intercept": self.intercept_})
        return {**scaling, "n_bins": int(self.n_bins)}

    def _get_params(self) -> dict[str, Any]:
        scaling = ({"temperature": self.temperature_} if self.scaler == "temperature"
                   else {"slope": self.slope_, "intercept": self.intercept_})
        return {**scaling, "edges": self.edges_.tolist(), "bin_values": self.bin_values_.tolist(),
                "bin_counts": self.bin_counts_.astype(int).tolist()}

    def _set_params(self, params: dict[str, Any]) -> None:
        if self.scaler == "temperature":
            self.temperature_ = saved_temperature(params)
        else:
            slope, intercept = float_array({"v": [params["slope"], params["intercept"]]}, "v")
            self.slope_, self.intercept_ = float(slope), float(intercept)
        edges, values = float_array(params, "edges"), float_array(params, "bin_values")
        counts = params.get("bin_counts", [0] * values.size)
        if not isinstance(counts, list) or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0
                                                   for c in counts):
            raise ValueError("'bin_counts' must be a list of non-negative integers")
        if edges.size != self.n_bins + 1 or values.size != self.n_bins or len(counts) != self.n_bins:
            raise ValueError(f"'edges' must hold {self.n_bins + 1} values and 'bin_values' {self.n_bins}")
        if (np.diff(edges) < 0).any() or (values < 0).any() or (values > 1).any() or edges[0] < 0 or edges[-1] > 1:
            raise ValueError("'edges' must be sorted within [0, 1] and 'bin_values' in [0, 1]")
        self.edges_, self.bin_values_ = edges, values
        self.bin_counts_ = np.asarray(counts, dtype=np.int64)
