"""Confidence maps: 1-D calibrators of top-label `(confidence, correct)` pairs — the top answer's confidence and
whether it was right, as an LLM evaluation writes them — fitted on validation pairs and applied to new confidences.

These are confidence maps only: they take a confidence per sample (N,) and return a calibrated confidence (N,); they
never see class scores (N, K). The calibrators of score matrices (temperature, vector scaling, the binary Platt/beta
maps of (N, 2) scores, and the top-label `histogram` / `isotonic` that rebuild a full row) live in the other modules
of `adacal.calibrators`; a saved confidence map says `"applies_to": "confidences"` and is refused for (N, K) scores
(and a saved calibrator of scores for confidences), in one line.

Methods (registry keys as `adacal calibrate --method` takes them):
- `uncalibrated`: the identity;
- `isotonic`: isotonic regression of correctness on confidence (sklearn `IsotonicRegression`, increasing, clipped to
  [0, 1] and to the fitted range), kept as its thresholds and applied with `np.interp`;
- `histogram`: equal-mass histogram binning (`adacal.metrics.binning`'s edges); a confidence becomes its bin's
  validation accuracy (an empty bin, its midpoint);
- `platt`: Platt scaling on the confidence — logistic regression of correctness on logit(confidence),
  p = sigmoid(a · logit(c) + b), unregularised maximum likelihood by Newton's method (confidences clipped to
  [1e-12, 1 − 1e-12] before the logit).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError, unknown_name

__all__ = ["APPLIES_TO", "CONFIDENCE_MAPS", "DEFAULT_MAP", "ConfidenceMap", "HistogramConfidenceMap",
           "IdentityConfidenceMap", "IsotonicConfidenceMap", "PlattConfidenceMap", "build_confidence_map",
           "confidence_map_methods", "is_confidence_map_dict", "load_confidence_map", "load_fitted",
           "save_confidence_map"]

# What a saved confidence map's dict says it applies to (a calibrator of class scores has no such key).
APPLIES_TO = "confidences"
FORMAT_VERSION = 1
# What `adacal calibrate` fits on confidences without --method: two parameters, the confidences' analogue of
# temperature scaling (a slope on logit(c)) with a bias.
DEFAULT_MAP = "platt"
LOGIT_CLIP = 1e-12
_NEWTON_STEPS = 100
_NEWTON_TOLERANCE = 1e-12
# A Platt slope or intercept past this is no optimum reached but a step function the likelihood pushes to infinity.
_SEPARATED = 1e3


def _checked_pairs(confidences: Any, correct: Any | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    from adacal.metrics.confidences import check_confidences, check_correct

    shape = np.shape(confidences)
    if len(shape) != 1:
        raise InputError(f"Expected confidences to be one number per sample (N,), got shape {shape}: a confidence "
                         "map takes top-label confidences, not class scores (use a calibrator of class scores).")
    conf, _ = check_confidences(confidences)
    hits = None if correct is None else check_correct(correct, n=conf.shape[0]).astype(np.float64)
    return conf, hits


class ConfidenceMap:
    """Base of the confidence maps: `fit(confidences, correct) -> self`, `transform(confidences) -> confidences`,
    `to_dict()` / `from_dict()` in plain JSON types; learned state ends in `_`; using one before `fit` is an
    InputError. Subclasses implement `_fit`, `_map`, `_get_params`, `_set_params`.

    Example:
        >>> from adacal.calibrators.confidence_maps import ConfidenceMap, HistogramConfidenceMap
        >>> fitted = HistogramConfidenceMap(n_bins=1).fit([0.9, 0.9, 0.8, 0.7], [1, 0, 1, 0])
        >>> ConfidenceMap.from_dict(fitted.to_dict()).transform([0.95]).tolist()
        [0.5]
    """

    name: ClassVar[str] = ""
    # What the map takes (a calibrator of class scores has no such attribute): how `evaluate --calibrator` tells.
    applies_to: ClassVar[str] = APPLIES_TO

    def check_options(self) -> None:
        """Raise InputError for an option out of range (maps with options override)."""

    def get_options(self) -> dict[str, Any]:
        return {}

    def _fit(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        raise NotImplementedError

    def _map(self, confidences: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _get_params(self) -> dict[str, Any]:
        return {}

    def _set_params(self, params: dict[str, Any]) -> None:
        pass

    def summary(self) -> dict[str, Any]:
        """A few learned values for reports and tables."""
        self._check_fitted()
        return {}

    def fit(self, confidences: Any, correct: Any) -> ConfidenceMap:
        """Fit on validation confidences (N,) in [0, 1] (or percent) and whether each top answer was right (N,)."""
        self.check_options()
        conf, hits = _checked_pairs(confidences, correct)
        if conf.size == 0:
            raise InputError("Expected at least one validation (confidence, correct) pair to fit on, got none.")
        self._fit(conf, hits)
        self.fitted_ = True
        return self

    def transform(self, confidences: Any) -> np.ndarray:
        """Calibrated confidences (N,) in [0, 1] of new confidences (N,)."""
        self._check_fitted()
        conf, _ = _checked_pairs(confidences)
        return np.clip(self._map(conf), 0.0, 1.0)

    def _check_fitted(self) -> None:
        if not getattr(self, "fitted_", False):
            raise InputError(f"Expected the '{self.name}' confidence map to be fitted: call fit(confidences, "
                             "correct) first.")

    def to_dict(self) -> dict[str, Any]:
        """The fitted map as JSON types: method, applies_to ("confidences"), format_version, options, params."""
        self._check_fitted()
        return {"method": self.name, "applies_to": APPLIES_TO, "format_version": FORMAT_VERSION,
                "options": self.get_options(), "params": self._get_params()}

    @classmethod
    def from_dict(cls, data: Any) -> ConfidenceMap:
        """Rebuild a fitted map from `to_dict()` output (on the base class, any method)."""
        if not is_confidence_map_dict(data):
            raise InputError("Expected a confidence map (a dict with \"applies_to\": \"confidences\", as to_dict() "
                             "writes it), got something else: a calibrator of class scores loads with "
                             "adacal.calibrators.load_calibrator.")
        if data.get("format_version") != FORMAT_VERSION:
            raise InputError(f"Expected confidence map format_version {FORMAT_VERSION}, got "
                             f"{data.get('format_version')!r}.")
        options, params = data.get("options", {}), data.get("params")
        if not isinstance(options, dict) or not isinstance(params, dict):
            raise InputError(f"Expected the '{data.get('method')}' confidence map to hold 'options' and 'params' "
                             "objects.")
        fitted = build_confidence_map(data.get("method"), **options)
        fitted.check_options()
        try:
            fitted._set_params(params)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"Expected valid params for the '{fitted.name}' confidence map, but {exc}.") from None
        fitted.fitted_ = True
        return fitted

    def __repr__(self) -> str:
        options = ", ".join(f"{key}={value!r}" for key, value in self.get_options().items())
        return f"{type(self).__name__}({options})"


def _floats(params: dict[str, Any], key: str) -> np.ndarray:
    values = params[key]
    if not isinstance(values, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                               and math.isfinite(v) for v in values):
        raise ValueError(f"'{key}' must be a list of finite numbers")
    return np.asarray(values, dtype=np.float64)


class IdentityConfidenceMap(ConfidenceMap):
    """The identity ("uncalibrated"): the model's own confidences.

    Example:
        >>> from adacal.calibrators.confidence_maps import IdentityConfidenceMap
        >>> IdentityConfidenceMap().fit([0.9, 0.6], [1, 0]).transform([0.7]).tolist()
        [0.7]
    """

    name = "uncalibrated"

    def _fit(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        pass

    def _map(self, confidences: np.ndarray) -> np.ndarray:
        return confidences.copy()


class IsotonicConfidenceMap(ConfidenceMap):
    """Isotonic regression of correctness on confidence (sklearn IsotonicRegression, increasing, values clipped to
    [0, 1], inputs to the fitted range); learns `thresholds_` and `values_`, applied by linear interpolation.

    Example:
        >>> from adacal.calibrators.confidence_maps import IsotonicConfidenceMap
        >>> fitted = IsotonicConfidenceMap().fit([0.6, 0.7, 0.8, 0.9], [1, 0, 1, 1])
        >>> fitted.values_.tolist(), fitted.transform([0.65, 0.95]).tolist()
        ([0.5, 0.5, 1.0, 1.0], [0.5, 1.0])
    """

    name = "isotonic"

    def _fit(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        from adacal.calibrators.isotonic import isotonic_steps

        self.thresholds_, self.values_ = isotonic_steps(confidences, correct)

    def _map(self, confidences: np.ndarray) -> np.ndarray:
        return np.interp(confidences, self.thresholds_, self.values_)

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        return {"n_thresholds": int(self.thresholds_.size)}

    def _get_params(self) -> dict[str, Any]:
        return {"thresholds": self.thresholds_.tolist(), "values": self.values_.tolist()}

    def _set_params(self, params: dict[str, Any]) -> None:
        thresholds, values = _floats(params, "thresholds"), _floats(params, "values")
        if thresholds.size != values.size or not thresholds.size or (np.diff(thresholds) < 0).any() \
                or (np.diff(values) < 0).any() or (values < 0).any() or (values > 1).any():
            raise ValueError("'thresholds' and 'values' must be non-empty, non-decreasing, of equal length, and "
                             "'values' in [0, 1]")
        self.thresholds_, self.values_ = thresholds, values


class HistogramConfidenceMap(ConfidenceMap):
    """Equal-mass histogram binning of the confidence: a confidence becomes the validation accuracy of its bin (bins
    as `adacal.metrics.binning` cuts them; an empty bin of tied confidences maps to its midpoint). Learns `edges_`,
    `bin_values_`, `bin_counts_`.

    Args:
        n_bins: the number of equal-mass bins (default 15).

    Example:
        >>> from adacal.calibrators.confidence_maps import HistogramConfidenceMap
        >>> fitted = HistogramConfidenceMap(n_bins=2).fit([0.6, 0.7, 0.8, 0.9], [1, 0, 1, 1])
        >>> fitted.bin_values_.tolist(), fitted.transform([0.5, 0.85]).tolist()
        ([0.5, 1.0], [0.5, 1.0])
    """

    name = "histogram"

    def __init__(self, *, n_bins: int = DEFAULT_N_BINS) -> None:
        self.n_bins = n_bins

    def check_options(self) -> None:
        from adacal.checks import check_positive_int

        check_positive_int(self.n_bins, "--n-bins")

    def get_options(self) -> dict[str, Any]:
        return {"n_bins": int(self.n_bins)}

    def _fit(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        from adacal.metrics.binning import bin_statistics, equal_mass_edges

        edges = equal_mass_edges(confidences, int(self.n_bins))
        stats = bin_statistics(confidences, correct, edges=edges)
        self.edges_ = np.asarray(edges, dtype=np.float64)
        self.bin_values_ = np.where(stats.counts > 0, stats.accuracy, (edges[:-1] + edges[1:]) / 2.0)
        self.bin_counts_ = np.asarray(stats.counts, dtype=np.int64)

    def _map(self, confidences: np.ndarray) -> np.ndarray:
        from adacal.metrics.binning import assign_bins

        return self.bin_values_[assign_bins(np.clip(confidences, self.edges_[0], self.edges_[-1]), self.edges_)]

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        return {"n_bins": int(self.n_bins)}

    def _get_params(self) -> dict[str, Any]:
        return {"edges": self.edges_.tolist(), "bin_values": self.bin_values_.tolist(),
                "bin_counts": self.bin_counts_.astype(int).tolist()}

    def _set_params(self, params: dict[str, Any]) -> None:
        edges, values = _floats(params, "edges"), _floats(params, "bin_values")
        counts = np.asarray(_floats(params, "bin_counts"), dtype=np.int64)
        if edges.size != self.n_bins + 1 or values.size != self.n_bins or counts.size != self.n_bins:
            raise ValueError(f"'edges' must hold {self.n_bins + 1} values, 'bin_values' and 'bin_counts' {self.n_bins}")
        if (np.diff(edges) < 0).any() or (values < 0).any() or (values > 1).any():
            raise ValueError("'edges' must be sorted and 'bin_values' in [0, 1]")
        self.edges_, self.bin_values_, self.bin_counts_ = edges, values, counts


def _logit(confidences: np.ndarray) -> np.ndarray:
    clipped = np.clip(confidences, LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.log(clipped) - np.log1p(-clipped)


def _sigmoid(values: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -values))


class PlattConfidenceMap(ConfidenceMap):
    """Platt scaling on the confidence: logistic regression of correctness on logit(confidence),
    p = sigmoid(slope · logit(c) + intercept), fitted by unregularised maximum likelihood (Newton's method; the
    same optimum as sklearn's LogisticRegression without penalty). Learns `slope_`, `intercept_`, `converged_`
    (False when the fit stopped at its step limit, or when right and wrong answers are separated by confidence — every
    right one at or above every wrong one, or all right, or all wrong —: the optimum is then infinitely steep).

    Example:
        >>> from adacal.calibrators.confidence_maps import PlattConfidenceMap
        >>> fitted = PlattConfidenceMap().fit([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 0])  # 50 % right at every confidence
        >>> round(fitted.slope_, 6) + 0.0, round(float(fitted.transform([0.99])[0]), 6)
        (0.0, 0.5)
    """

    name = "platt"

    def _fit(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        x = _logit(confidences)
        design = np.stack([x, np.ones_like(x)], axis=1)
        weights = np.zeros(2)
        self.converged_ = False
        loss = math.inf
        for _ in range(_NEWTON_STEPS):
            p = _sigmoid(design @ weights)
            gradient = design.T @ (p - correct)
            hessian = (design * (p * (1.0 - p))[:, None]).T @ design
            try:
                step = np.linalg.solve(hessian + 1e-12 * np.eye(2), gradient)
            except np.linalg.LinAlgError:
                break
            scale = 1.0
            while scale > 1e-8:  # step halving: the log-likelihood never gets worse
                trial = weights - scale * step
                z = design @ trial
                trial_loss = float(np.sum(np.logaddexp(0.0, z) - correct * z))
                if trial_loss <= loss or not math.isfinite(loss):
                    break
                scale /= 2.0
            improvement = loss - trial_loss
            weights, loss = trial, trial_loss
            if np.max(np.abs(scale * step)) < 1e-10 or 0.0 <= improvement < _NEWTON_TOLERANCE * max(1.0, loss):
                self.converged_ = True
                break
        right, wrong = x[correct == 1], x[correct == 0]
        separated = (not right.size or not wrong.size or right.min() >= wrong.max() or wrong.min() >= right.max())
        if separated or np.abs(weights).max() > _SEPARATED:  # (quasi-)separated answers: no finite optimum
            self.converged_ = False
        self.slope_, self.intercept_ = float(weights[0]), float(weights[1])

    def _map(self, confidences: np.ndarray) -> np.ndarray:
        return _sigmoid(self.slope_ * _logit(confidences) + self.intercept_)

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        return {"slope": self.slope_, "intercept": self.intercept_, "converged": bool(self.converged_)}

    def _get_params(self) -> dict[str, Any]:
        return self.summary()

    def _set_params(self, params: dict[str, Any]) -> None:
        values = _floats({"v": [params["slope"], params["intercept"]]}, "v")
        self.slope_, self.intercept_ = float(values[0]), float(values[1])
        self.converged_ = bool(params.get("converged", True))


CONFIDENCE_MAPS: dict[str, type[ConfidenceMap]] = {
    cls.name: cls for cls in (IdentityConfidenceMap, PlattConfidenceMap, HistogramConfidenceMap,
                              IsotonicConfidenceMap)
}


def confidence_map_methods(method: str) -> list[str]:
    """The confidence maps `method` names: one of CONFIDENCE_MAPS, or every one for "all"; another calibrator's name
    (of class scores only) is refused naming the choices.

    Example:
        >>> confidence_map_methods("all")
        ['uncalibrated', 'platt', 'histogram', 'isotonic']
    """
    if method == "all":
        return list(CONFIDENCE_MAPS)
    if method not in CONFIDENCE_MAPS:
        raise unknown_name("calibration method for top-label confidences", method, [*CONFIDENCE_MAPS, "all"])
    return [method]


def build_confidence_map(method: Any, **options: Any) -> ConfidenceMap:
    """An unfitted confidence map by name; `n_bins` is taken by histogram only (ignored by the others).

    Example:
        >>> build_confidence_map("histogram", n_bins=5)
        HistogramConfidenceMap(n_bins=5)
    """
    if method not in CONFIDENCE_MAPS:
        raise unknown_name("confidence map", str(method), list(CONFIDENCE_MAPS))
    cls = CONFIDENCE_MAPS[method]
    fitted = cls(n_bins=options.get("n_bins", DEFAULT_N_BINS)) if cls is HistogramConfidenceMap else cls()
    fitted.check_options()
    return fitted


def is_confidence_map_dict(data: Any) -> bool:
    """Whether a calibrator dict (a saved file's results.calibrator) is a confidence map's."""
    return isinstance(data, dict) and data.get("applies_to") == APPLIES_TO


def save_confidence_map(fitted: ConfidenceMap, path: str | os.PathLike) -> Path:
    """Write a fitted confidence map as a calibrator file (JSON report of kind "calibrator", written atomically),
    which `adacal evaluate --calibrator` applies to a (confidence, correct) file.

    Example:
        >>> import os, tempfile
        >>> from adacal.calibrators.confidence_maps import PlattConfidenceMap, load_confidence_map, save_confidence_map
        >>> fitted = PlattConfidenceMap().fit([0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     loaded = load_confidence_map(save_confidence_map(fitted, os.path.join(folder, "platt.json")))
        >>> loaded.slope_ == fitted.slope_
        True
    """
    from adacal.calibrators.saving import CALIBRATOR_KIND
    from adacal.reports import make_report, write_json

    data = fitted.to_dict()
    report = make_report(CALIBRATOR_KIND, config={"method": data["method"], "options": data["options"],
                                                  "applies_to": APPLIES_TO}, results={"calibrator": data})
    return write_json(path, report)


def load_confidence_map(path: str | os.PathLike) -> ConfidenceMap:
    """A fitted confidence map from a file `save_confidence_map` wrote; a calibrator of class scores is refused."""
    from adacal.calibrators.saving import CALIBRATOR_KIND
    from adacal.sources.documents import read_report

    report = read_report(path, kind=CALIBRATOR_KIND)
    data = report["results"].get("calibrator") if isinstance(report["results"], dict) else None
    if not is_confidence_map_dict(data):
        raise InputError(f"Expected {Path(path).name} to hold a confidence map (saved by 'adacal calibrate' on "
                         "top-label confidences), got a calibrator of class scores: apply it to a file of class "
                         "scores.")
    try:
        return ConfidenceMap.from_dict(data)
    except InputError as exc:
        raise InputError(f"Cannot load the confidence map in {Path(path)}: {exc}") from None


def load_fitted(path: str | os.PathLike) -> Any:
    """A calibrator file `adacal calibrate --save` wrote, of either kind: a `ConfidenceMap` for top-label
    confidences, else a `Calibrator` of class scores (`load_calibrator`)."""
    from adacal.calibrators.saving import CALIBRATOR_KIND, calibrator_from_report
    from adacal.sources.documents import read_report

    report = read_report(path, kind=CALIBRATOR_KIND)
    data = report["results"].get("calibrator") if isinstance(report["results"], dict) else None
    if is_confidence_map_dict(data):
        return load_confidence_map(path)
    return calibrator_from_report(report, path)
