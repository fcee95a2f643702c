"""OOD scores from logits, AUROC / AUPR / FPR@95 per score (`detect_ood`), the temperature and saved logits.

The math of each score and metric lives in `adacal.metrics.ood`; this module validates, wires and reports.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import (
    as_logits,
    binary_score_columns,
    check_labels,
    check_not_near_probs,
    check_scores,
    looks_like_probs,
    mixed_binary_kinds,
    normalise_probs,
    one_score_per_sample,
)
from adacal.checks import name_items
from adacal.scores_kind import score_matrix_and_kind
from adacal.errors import InputError, unknown_name
from adacal.metrics.ood import OOD_SCORES as SCORE_REGISTRY
from adacal.reports import make_report
from adacal.sources.documents import read_report
from adacal.interpretation import Predictions
from adacal.sources.formats import ReadOptions
from adacal.interpretation import load_scores, load_validation_split

OOD_SCORES = tuple(SCORE_REGISTRY.names())  # every score adacal.metrics.ood registers
DEFAULT_CORRUPTION = "gaussian_noise"
DEFAULT_SEVERITY = 5
SEVERITIES = (1, 2, 3, 4, 5)
TEMPERATURE_SOURCES = ("none", "option", "calibrate.json", "fitted")
# The paper picks T on the validation set by minimising ECE_EM (PAPER.md, "Post-hoc calibration").
FIT_OBJECTIVE = "ece-em"
OOD_REPORT_PREFIX = "ood-"


# ------------------------------------------------------------------------------------------------------- scores


def check_score_names(scores: str | Iterable[str]) -> tuple[str, ...]:
    """Score names from "entropy,max-prob" or a sequence; unknown names are an error listing the choices."""
    names: list[str] = []
    for item in name_items(scores, f"OOD score names ({', '.join(OOD_SCORES)})"):
        name = item.lower()
        if not name:
            continue
        if name not in OOD_SCORES:
            raise unknown_name("OOD score", name, OOD_SCORES)
        if name not in names:
            names.append(name)
    if not names:
        raise InputError(f"Expected --scores to name at least one of {', '.join(OOD_SCORES)}, got '{scores}'.")
    return tuple(names)


def ood_scores(logits: Any, score: str = "entropy", *, temperature: float | None = None) -> np.ndarray:
    """Per-sample OOD scores (N,) from logits (N, K), higher = more OOD; with `temperature`, of logits / T. A binary
    model's one score per sample, (N,) or (N, 1), is read as the metrics read it (`adacal.arrays.as_score_matrix`)."""
    from adacal.metrics.ood import ood_scores as compute

    if not isinstance(score, str):
        raise InputError(f"Expected the name of an OOD score ({', '.join(OOD_SCORES)}), got {score!r}.")
    (name,) = check_score_names([score])
    logits = np.sort(_checked_scores(logits, "logits"), axis=1)  # permuted rows tie exactly (see _score_metrics)
    if temperature is None:
        return compute(logits, name)
    temperature = check_temperature(temperature)
    if name == "energy":
        _check_energy_with_temperature(logits, "")
    return compute(_scaled(logits, temperature), name)


def detect_ood(
    in_logits: Any,
    out_logits: Any,
    *,
    scores: str | Sequence[str] = ("entropy",),
    temperature: float | None = None,
    temperature_source: str | None = None,
    in_name: str = "in",
    out_name: str = "out",
) -> dict[str, Any]:
    """The `results` block of ood.json: per score, AUROC / AUPR-in / AUPR-out / FPR@95 and the ROC curve.

    OOD is the positive class. `pre` uses the logits as given; `post` (only when `temperature` is given) uses
    logits / T. Metric values are fractions in [0, 1]. A binary model's one score per sample, (N,) or (N, 1), is read
    as the metrics read it (`adacal.arrays.as_score_matrix`: all in [0, 1] → probabilities, else decision scores),
    except that when one set lies outside [0, 1] both are decision scores (`adacal.arrays.mixed_binary_kinds`).
    """
    names = check_score_names(scores)
    # One model's two sets: when one holds decision scores outside [0, 1], a set that happens to lie in [0, 1] holds
    # decision scores too (read alone it would pass for probabilities, and the two sets would be scored unlike).
    decision = mixed_binary_kinds(in_logits, out_logits)
    in_logits = _checked_scores(in_logits, "in-distribution logits", decision=decision)
    out_logits = _checked_scores(out_logits, "OOD logits", decision=decision)
    if in_logits.shape[1] != out_logits.shape[1]:
        raise InputError(
            f"Expected the in-distribution and OOD logits to have the same number of classes, "
            f"got {in_logits.shape[1]} and {out_logits.shape[1]}."
        )
    if temperature is not None:
        temperature = check_temperature(temperature)
        if "energy" in names:
            for what, logits in (("in-distribution ", in_logits), ("OOD ", out_logits)):
                _check_energy_with_temperature(logits, what)
    source = temperature_source or ("option" if temperature is not None else "none")
    if source not in TEMPERATURE_SOURCES:
        raise InputError(f"Expected temperature_source to be one of {', '.join(TEMPERATURE_SOURCES)}, got '{source}'.")
    if (source == "none") != (temperature is None):
        raise InputError(f"Expected a temperature with temperature_source '{source}', got {temperature!r}.")

    # Rows sorted once for every score (see _score_metrics); logits / T keeps a sorted row sorted.
    pre_sets = (np.sort(in_logits, axis=1), np.sort(out_logits, axis=1))
    post_sets = None if temperature is None else tuple(_scaled(rows, temperature) for rows in pre_sets)
    results: dict[str, Any] = {}
    for name in names:
        pre = _score_metrics(*pre_sets, name)
        post = None if post_sets is None else _score_metrics(*post_sets, name)
        results[name] = {"pre": pre, "post": post}
    return {
        "in": {"name": "in" if in_name is None else str(in_name), "n": int(in_logits.shape[0])},
        "out": {"name": "out" if out_name is None else str(out_name), "n": int(out_logits.shape[0])},
        "temperature": temperature,
        "temperature_source": source,
        "scores": results,
    }


def _checked_scores(scores: Any, name: str, *, decision: bool = False) -> np.ndarray:
    """float64 scores (N, K), validated and read as the metrics and the file readers read them: a binary model's one
    score per sample as two columns; rows that are probabilities within the rounding of the input's dtype (float16 and
    bfloat16 probabilities sum to 1 only within ~1e-3 / ~1e-2) normalised, so that everything downstream takes them as
    probabilities rather than as logits once they are float64; and probabilities whose rows do not sum to 1 (rounded,
    truncated) or percentages refused rather than read as logits (`adacal.arrays.check_not_near_probs`).
    `decision`: one score per sample is read as decision scores whatever its range (see `detect_ood`)."""
    if decision and one_score_per_sample(scores):
        return check_scores(binary_score_columns(scores, name, decision=True)[0], name=name)
    array, probabilities = score_matrix_and_kind(scores, name=name)
    if probabilities:
        return normalise_probs(array)
    if not one_score_per_sample(scores):  # (binary columns are probabilities or decision scores by their range)
        check_not_near_probs(array, name=name)
    return array


def _check_energy_with_temperature(logits: np.ndarray, what: str) -> None:
    if looks_like_probs(logits):
        raise InputError(
            f"Expected {what}logits for the energy score with a temperature, but they look like "
            "probabilities (rows in [0, 1] summing to 1): log-probabilities differ from the logits by a "
            "constant per row, which entropy and max-prob ignore and energy does not. Save the logits, or "
            "score entropy and max-prob only."
        )


def _scaled(scores: np.ndarray, temperature: float) -> np.ndarray:
    """logits / T (probabilities as log-probabilities); a T so small that logits / T overflows is an error naming T."""
    logits = as_logits(scores)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        scaled = logits / temperature
    if not np.isfinite(scaled).all():
        raise InputError(
            f"Expected --temperature to keep logits / T finite, got T = {temperature!r}: logits up to "
            f"{float(np.abs(logits).max()):.4g} in size overflow when divided by it."
        )
    return scaled


def ood_report(results: dict[str, Any], *, config: dict[str, Any]) -> dict[str, Any]:
    """The full ood.json report (the common envelope around `detect_ood`'s results)."""
    return make_report("ood", config=config, results=results)


def _score_metrics(in_logits: np.ndarray, out_logits: np.ndarray, name: str) -> dict[str, Any]:
    from adacal.metrics.ood import ood_metrics, ood_scores, roc_curve_points

    # The rows come sorted (detect_ood): every score is a function of the multiset of a row's values, so samples whose
    # rows hold the same values in another order get the very same score and tie (ties count one half) instead of
    # being ranked by the rounding of a sum taken in another order.
    in_scores = ood_scores(in_logits, name)
    out_scores = ood_scores(out_logits, name)
    metrics = ood_metrics(in_scores, out_scores)
    fpr, tpr, _ = roc_curve_points(in_scores, out_scores)
    return {
        "auroc": float(metrics["auroc"]),
        "aupr_in": float(metrics["aupr_in"]),
        "aupr_out": float(metrics["aupr_out"]),
        "fpr_at_95_tpr": float(metrics["fpr_at_95_tpr"]),
        "roc": {"fpr": [float(v) for v in fpr], "tpr": [float(v) for v in tpr]},
    }


# ------------------------------------------------------------------------------------------------- temperature


def check_temperature(temperature: Any, *, name: str = "--temperature") -> float:
    """`temperature` as a positive finite float within the calibrators' TEMPERATURE_LIMITS, [1e-6, 1e6] (T = 1e300
    ties every row's classes); anything else is an InputError naming `name` (the option)."""
    if isinstance(temperature, bool):
        raise InputError(f"Expected {name} to be a positive number, got {temperature!r}.")
    try:
        value = float(temperature)
    except (TypeError, ValueError):
        raise InputError(f"Expected {name} to be a positive number, got {temperature!r}.") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"Expected {name} to be a positive number, got {temperature!r}.")
    from adacal.calibrators.temperature import TEMPERATURE_LIMITS  # the calibrators' own limits (#39)

    low, high = TEMPERATURE_LIMITS
    if not low <= value <= high:
        raise InputError(f"Expected {name} to lie in [{low:g}, {high:g}] (fits give 0.05 to 20; far beyond, "
                         f"logits / T tie every row's classes in float64), got {temperature!r}.")
    return value


def temperature_from_calibration(path: str | os.PathLike) -> float | None:
    """T from a calibrate.json: the temperature calibrator's, else the best calibrator's if it has one; else None."""
    report = read_report(path, kind="calibrate")
    results = report["results"] if isinstance(report["results"], dict) else {}
    calibrators = results.get("calibrators")
    if not isinstance(calibrators, dict):
        return None
    for name in ("temperature", results.get("best")):
        entry = calibrators.get(name) if isinstance(name, str) else None
        params = entry.get("params") if isinstance(entry, dict) else None
        value = params.get("temperature") if isinstance(params, dict) else None
        if value is not None:
            return check_temperature(value, name=f"the temperature of '{name}' in {path}")
    return None


def fit_temperature(val_logits: Any, val_labels: Any, *, objective: str = FIT_OBJECTIVE) -> float:
    """Fit temperature scaling on validation logits (by default minimising ECE_EM, as the paper does); return T."""
    from adacal.calibrators import build_calibrator

    logits = _checked_scores(val_logits, "validation logits")
    labels = check_labels(val_labels, n=logits.shape[0], num_classes=logits.shape[1], name="validation labels")
    calibrator = build_calibrator("temperature", objective=objective).fit(logits, labels)
    return check_temperature(calibrator.temperature_, name="the fitted temperature")


def temperature_edge(temperature: float, *, objective: str = FIT_OBJECTIVE) -> dict[str, Any] | None:
    """Where a fitted T sits on the edge of the range the fit searched, {"edge": "lower" | "upper", "range": [lo, hi]};
    else None. A T on the edge is the best the search could return, not necessarily the best T: the model may need
    a T beyond the range (the grid objectives search 0.1 ... 10 in steps of 0.1, "nll" searches [0.05, 20])."""
    from adacal.calibrators.temperature import NLL_BOUNDS, TEMPERATURE_GRID

    value = check_temperature(temperature, name="the fitted temperature")
    if objective == "nll":
        low, high = (float(v) for v in NLL_BOUNDS)
        tolerance = 1e-3  # in log T: Brent's bounded search stops within xatol of a bound it presses against
        at_low = abs(math.log(value) - math.log(low)) < tolerance
        at_high = abs(math.log(value) - math.log(high)) < tolerance
    else:
        low, high = float(np.min(TEMPERATURE_GRID)), float(np.max(TEMPERATURE_GRID))
        at_low, at_high = value <= low * (1 + 1e-9), value >= high * (1 - 1e-9)
    if not (at_low or at_high):
        return None
    return {"edge": "lower" if at_low else "upper", "range": [low, high]}


def resolve_temperature(
    *,
    temperature: float | None = None,
    fit: bool = False,
    calibration: str | os.PathLike | None = None,
    val: Predictions | None = None,
) -> tuple[float | None, str]:
    """(T, temperature_source): the option if given, else fitted on `val` when `fit`, else from `calibration`
    (a calibrate.json, used only when the file exists), else (None, "none")."""
    if temperature is not None and fit:
        raise InputError("Expected either --temperature or --fit-temperature, not both.")
    if temperature is not None:
        return check_temperature(temperature), "option"
    if fit:
        if val is None:
            raise InputError(
                "Expected validation logits and labels to fit the temperature (--fit-temperature), but none were found."
            )
        return fit_temperature(val.logits, val.labels), "fitted"
    if calibration is not None and Path(calibration).is_file():
        value = temperature_from_calibration(calibration)
        if value is not None:
            return value, "calibrate.json"
    return None, "none"


# ---------------------------------------------------------------------------------------------- saved logits


def load_ood_logits(path: str | os.PathLike, *, split: str = "test", options: ReadOptions | None = None) -> np.ndarray:
    """Scores (N, K) of saved model outputs (labels optional): any file and key spelling `adacal.sources` reads
    (`logits`, `probs`, ..., or `test_logits` as in predictions.npz; .npz, .pt, .npy, .csv)."""
    return load_scores(path, split=split, options=options or ReadOptions())


def load_validation_predictions(path: str | os.PathLike, *, options: ReadOptions | None = None) -> Predictions | None:
    """`val_logits` and `val_labels` (or their other spellings) from a predictions file, or None when it holds no
    validation split."""
    return load_validation_split(path, options=options or ReadOptions())
