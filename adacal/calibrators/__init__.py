"""Post-hoc calibrators: fit on validation logits, transform any logits into calibrated probabilities.

    from adacal.calibrators import build_calibrator, save_calibrator, load_calibrator
    calibrator = build_calibrator("temperature", objective="ece-em").fit(val_logits, val_labels)
    probs = calibrator.transform(test_logits)

Names (CALIBRATORS): uncalibrated (the identity, the baseline), temperature, platt, beta, ets, vector-scaling,
matrix-scaling, dirichlet, spline, histogram, isotonic, top-label-histogram, top-label-isotonic, scaling-binning.
Temperature scaling and ETS rescale the whole row; vector scaling, matrix scaling and Dirichlet calibration map it
linearly (class-wise, so they may change the predicted class); spline, histogram and isotonic recalibrate the
top-class confidence only and rebuild the row so that it sums to 1 and keeps its predicted class (see
`complete_top_label`), as do top-label-histogram / top-label-isotonic (one map per predicted class) and
scaling-binning; platt and beta map a binary model's class-1 score (one-vs-rest, renormalised, for K > 2).
Every calibrator follows scikit-learn's estimator conventions (get_params / set_params, fit, transform /
predict_proba, predict and classes_, fitted attributes ending in `_`), so one can end a Pipeline.
"""

from __future__ import annotations

from typing import Any

from adacal.calibrators.base import CALIBRATORS, Calibrator, TopLabelCalibrator, complete_top_label
from adacal.calibrators.binary import BetaCalibration, PlattScaling
from adacal.calibrators.class_conditional import TopLabelHistogramBinning, TopLabelIsotonicCalibration
from adacal.calibrators.ets import EnsembleTemperatureScaling
from adacal.calibrators.histogram import HistogramBinning
from adacal.calibrators.identity import IdentityCalibration
from adacal.calibrators.isotonic import IsotonicCalibration
from adacal.calibrators.linear import DirichletCalibration, MatrixScaling, VectorScaling
from adacal.calibrators.saving import load_calibrator, save_calibrator
from adacal.calibrators.scaling_binning import ScalingBinning
from adacal.calibrators.spline import SplineCalibration
from adacal.calibrators.temperature import TEMPERATURE_OBJECTIVES, TemperatureScaling
from adacal.calibrators.compare import CalibrationComparison, build_calibrators, compare_calibrators


def build_calibrator(name: str, **options: Any) -> Calibrator:
    """An unfitted calibrator by name, its options checked.

    Args:
        name: a registered name (`calibrator_names()`), e.g. "temperature", "ets", "dirichlet", "isotonic".
        **options: the calibrator's keyword-only options.

    Returns:
        The unfitted calibrator. An unknown name, option or option value is an InputError listing the choices.

    Example:
        >>> from adacal.calibrators import build_calibrator
        >>> build_calibrator("temperature", objective="ece-em")
        TemperatureScaling(objective='ece-em', n_bins=15) (not fitted)
    """
    calibrator = CALIBRATORS.build(name, **options)
    calibrator.check_options()
    return calibrator


def calibrator_names() -> list[str]:
    """The registered calibrator names, as `build_calibrator` and `adacal calibrate --method` take them.

    Returns:
        A list of names.

    Example:
        >>> from adacal.calibrators import calibrator_names
        >>> "temperature" in calibrator_names(), "dirichlet" in calibrator_names()
        (True, True)
    """
    return CALIBRATORS.names()


__all__ = [
    "BetaCalibration",
    "CALIBRATORS",
    "TEMPERATURE_OBJECTIVES",
    "CalibrationComparison",
    "Calibrator",
    "DirichletCalibration",
    "EnsembleTemperatureScaling",
    "HistogramBinning",
    "IdentityCalibration",
    "IsotonicCalibration",
    "MatrixScaling",
    "PlattScaling",
    "ScalingBinning",
    "SplineCalibration",
    "TemperatureScaling",
    "TopLabelCalibrator",
    "TopLabelHistogramBinning",
    "TopLabelIsotonicCalibration",
    "VectorScaling",
    "build_calibrator",
    "build_calibrators",
    "calibrator_names",
    "compare_calibrators",
    "complete_top_label",
    "load_calibrator",
    "save_calibrator",
]


def __dir__() -> list[str]:
    """The public names (`__all__`), the submodules and the dunder attributes; not `Any` or `annotations`."""
    import types

    modules = {name for name, value in globals().items() if isinstance(value, types.ModuleType)
               and value.__name__.startswith(f"{__name__}.")}
    return sorted({*__all__, *modules, *(name for name in globals() if name.startswith("__") and name.endswith("__"))})
