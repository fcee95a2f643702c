"""Temperature scaling (Guo et al. 2017): probs = softmax(logits / T), one scalar T > 0 learned on validation data.

Objectives (option `objective`):
- "nll" (the default, Guo et al.'s choice): T minimising validation NLL, found by bounded Brent search on log T
  over [log 0.05, log 20], so T stays positive (float64, log-softmax, vectorised); NLL is convex in 1/T, so the
  minimum is unique and never worse than T = 1 on the data it was fitted on (where no T fits better, as on constant
  logits, T = 1); a search that does not converge raises;
- "ece-em": the AdaFocal paper's choice — T on the grid {0.1, 0.2, ..., 10.0} minimising validation ECE with
  `n_bins` equal-mass bins (ties go to the T closest to 1);
- "ece-ew": the same grid with equal-width bins.

A fit that ends at the edge of its range (T = 0.1 or 10 on the grid; within 0.01% of 0.05 or 20 for NLL) is flagged
by `at_bound_` = True (and `at_bound` in `summary()`): the best T may lie outside the range searched.

A temperature must keep every row's predicted class. softmax(logits / T) is computed as exp((z − max z) / T)
normalised (`tempered_softmax`), so a tiny T gives the one-hot limit, never inf − inf = NaN; but a huge T makes the
gaps (z − max z) / T fall below float64's resolution of 1, and the row's probabilities tie (T = 1e300 gave every row
of a 10-class model probability 0.1 each, error 14 % → 90 %). So a temperature given to `from_dict` (a saved file)
must be finite and lie in TEMPERATURE_LIMITS, [1e-6, 1e6], far outside anything a fit gives ([0.05, 20]); and
`transform` refuses a row whose top class the temperature ties with another where plain softmax keeps them apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.calibrators.base import CALIBRATORS, Calibrator, check_choice, check_int, positive_float
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import AdacalError
from adacal.metrics.binning import top1_ece
from adacal.metrics.prepared import row_top

TEMPERATURE_OBJECTIVES = ("ece-em", "ece-ew", "nll")
TEMPERATURE_GRID = np.arange(1, 101) / 10.0  # 0.1, 0.2, ..., 10.0 exactly as i / 10
NLL_BOUNDS = (0.05, 20.0)
# The temperatures a saved calibrator may hold: fits give [0.05, 20]; beyond 1e6 a model's logits ~10 apart are within
# 1e-5 of uniform, and near 1e300 every row ties in float64.
TEMPERATURE_LIMITS = (1e-6, 1e6)
# A fitted log T this close to log of an NLL bound counts as at the bound (Brent's bounded search stops within its
# tolerance of an edge, never exactly on it).
BOUND_LOG_TOLERANCE = 1e-4


def temperature_at_bound(temperature: float, objective: str) -> bool:
    """Whether a fitted T sits at the edge of the range its objective searches (so the optimum may lie beyond)."""
    if objective == "nll":
        return any(abs(np.log(temperature) - np.log(bound)) <= BOUND_LOG_TOLERANCE for bound in NLL_BOUNDS)
    return bool(temperature <= TEMPERATURE_GRID[0] or temperature >= TEMPERATURE_GRID[-1])


def tempered_softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(logits / temperature), as exp((z − max z) / T) normalised: every entry ≤ 0 before exp, so no T > 0
    overflows to inf − inf (a tiny T gives the one-hot limit); a row's top class gets exactly exp(0) = 1.

    Example:
        >>> import numpy as np
        >>> tempered_softmax(np.array([[1.0, 0.0]]), 1e-300).tolist()  # z / T would overflow to [inf, 0]
        [[1.0, 0.0]]
    """
    with np.errstate(over="ignore", under="ignore"):
        shifted = (logits - logits.max(axis=1, keepdims=True)) / temperature
        exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def saved_temperature(params: dict[str, Any], key: str = "temperature") -> float:
    """A saved temperature: a positive finite number within TEMPERATURE_LIMITS (ValueError otherwise)."""
    value = positive_float(params, key)
    low, high = TEMPERATURE_LIMITS
    if not low <= value <= high:
        effect = ("makes every row nearly uniform, and near 1e300 ties its classes in float64" if value > high
                  else "makes every row one-hot")
        raise ValueError(f"'{key}' must lie in [{low:g}, {high:g}] (fits give {NLL_BOUNDS[0]:g} to "
                         f"{NLL_BOUNDS[1]:g}; a temperature this far out {effect}), got {value:.6g}")
    return value


def temperature_nll(logits: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    """Mean negative log-likelihood of softmax(logits / T), from log-softmax in float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = logits / temperature
        top = scaled.max(axis=1)
        log_norm = top + np.log(np.exp(scaled - top[:, None]).sum(axis=1))
        nll = float(np.mean(log_norm - scaled[np.arange(labels.size), labels]))
    # Logits near the float64 limit overflow at small T (inf - inf): that T is out of reach, not a failed fit.
    return np.inf if np.isnan(nll) else nll


def fit_temperature_grid(logits: np.ndarray, labels: np.ndarray, *, n_bins: int, binning: str) -> float:
    """The grid T minimising validation ECE; among equal minima (within 1e-12) the T closest to 1."""
    predicted, top = row_top(logits)
    correct = (predicted == labels).astype(np.float64)
    shifted = logits - top[:, None]  # the top class is at 0 for every T
    eces = np.array(
        [
            top1_ece(1.0 / np.exp(shifted / t).sum(axis=1), correct, n_bins=n_bins, binning=binning)
            for t in TEMPERATURE_GRID
        ]
    )
    candidates = np.flatnonzero(eces <= eces.min() + 1e-12)
    return float(TEMPERATURE_GRID[candidates[np.argmin(np.abs(TEMPERATURE_GRID[candidates] - 1.0))]])


def fit_temperature_nll(logits: np.ndarray, labels: np.ndarray) -> float:
    """The T in [0.05, 20] minimising validation NLL (bounded Brent search on log T; NLL is unimodal in log T)."""
    from scipy.optimize import minimize_scalar  # scipy.optimize is slow to import; only fitting needs it

    with np.errstate(invalid="ignore", over="ignore"):  # Brent's arithmetic on an infinite NLL (temperature_nll)
        result = minimize_scalar(
            lambda log_t: temperature_nll(logits, labels, float(np.exp(log_t))),
            bounds=(np.log(NLL_BOUNDS[0]), np.log(NLL_BOUNDS[1])),
            method="bounded",
            options={"xatol": 1e-8, "maxiter": 500},
        )
    if not result.success or not np.isfinite(result.x):
        raise AdacalError(f"Temperature scaling (nll) did not converge: {str(result.message).rstrip('.')}.")
    temperature = float(np.exp(result.x))
    # Brent stops within its tolerance of the minimum; never hand back a T that fits worse than leaving logits alone,
    # nor one that fits no better: where the NLL does not depend on T (constant logits, one class per row all the
    # way) Brent ends anywhere, often at a bound, and T = 1 is the honest answer (ties go to T = 1, as on the grid).
    if temperature_nll(logits, labels, temperature) >= temperature_nll(logits, labels, 1.0):
        return 1.0
    return temperature


@CALIBRATORS.register("temperature")
class TemperatureScaling(Calibrator):
    """Temperature scaling (Guo et al. 2017): probs = softmax(logits / temperature_), one T > 0.

    Learns `temperature_` and `at_bound_` (True when T is at the edge of the range searched).

    Args:
        objective: "nll" (default) minimises validation NLL; "ece-em" / "ece-ew" take the T of the grid
            0.1, 0.2, ..., 10 with the lowest validation ECE over equal-mass / equal-width bins (the AdaFocal paper).
        n_bins: the number of bins of the ECE objectives (default 15).

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])  # 3 of 4 right
        >>> from adacal.calibrators import TemperatureScaling
        >>> calibrator = TemperatureScaling().fit(logits, labels)
        >>> round(calibrator.temperature_, 4), calibrator.transform(logits)[0].round(4).tolist()  # T = 2 / ln 3
        (1.8205, [0.75, 0.25])
    """

    name = "temperature"

    def __init__(self, *, objective: str = "nll", n_bins: int = DEFAULT_N_BINS) -> None:
        self.objective = objective
        self.n_bins = n_bins

    def check_options(self) -> None:
        check_choice("temperature objective", self.objective, TEMPERATURE_OBJECTIVES)
        check_int("n_bins", self.n_bins, minimum=1)

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        if self.objective == "nll":
            self.temperature_ = fit_temperature_nll(logits, labels)
        else:
            binning = "equal-mass" if self.objective == "ece-em" else "equal-width"
            self.temperature_ = fit_temperature_grid(logits, labels, n_bins=int(self.n_bins), binning=binning)
        self.at_bound_ = temperature_at_bound(self.temperature_, self.objective)

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        return {"temperature": self.temperature_, "at_bound": self.at_bound_}

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        return tempered_softmax(logits, self.temperature_)

    def _ties_why(self) -> str:
        return (f" (T = {self.temperature_:.3g}: the gaps between its logits divided by T fall below float64's "
                "resolution; fits give T in [0.05, 20])")

    def _get_params(self) -> dict[str, Any]:
        return {"temperature": self.temperature_}

    def _set_params(self, params: dict[str, Any]) -> None:
        self.temperature_ = saved_temperature(params)
        self.at_bound_ = temperature_at_bound(self.temperature_, self.objective)
