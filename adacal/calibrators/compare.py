"""Fit calibrators on validation predictions and measure them on test: what `adacal calibrate` reports."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from adacal.arrays import check_labels, check_scores
from adacal.calibrators.base import CALIBRATORS, Calibrator, check_choice, check_int
from adacal.calibrators.temperature import TEMPERATURE_OBJECTIVES
from adacal.errors import InputError
from adacal.registry import option_names

RANKING_METRIC = "ece_em"


@dataclass(frozen=True)
class CalibrationComparison:
    """`results` is the calibrate.json results object; `fitted` the calibrators by name, best first."""

    results: dict[str, Any]
    fitted: dict[str, Calibrator]
    best: str


def build_calibrators(methods: list[str], *, objective: str | None = None, n_bins: int = 15) -> dict[str, Calibrator]:
    """Unfitted calibrators by name, each given the shared options it takes (n_bins; objective for temperature)."""
    n_bins = check_int("n_bins", n_bins, minimum=1)
    if objective is not None:
        check_choice("temperature objective", objective, TEMPERATURE_OBJECTIVES)
    calibrators = {}
    for name in methods:
        accepted = option_names(CALIBRATORS.get(name))
        options: dict[str, Any] = {}
        if "n_bins" in accepted:
            options["n_bins"] = n_bins
        if "objective" in accepted and objective is not None:
            options["objective"] = objective
        calibrators[name] = CALIBRATORS.build(name, **options)
        calibrators[name].check_options()
    return calibrators


def _rank_value(metrics: dict[str, float]) -> float:
    value = metrics.get(RANKING_METRIC)
    return value if value is not None and math.isfinite(value) else math.inf


def compare_calibrators(
    val_logits: Any,
    val_labels: Any,
    test_logits: Any,
    test_labels: Any,
    *,
    methods: list[str] | None = None,
    objective: str | None = "ece-em",
    n_bins: int = 15,
) -> CalibrationComparison:
    """Fit each method on validation data; metrics of test before/after and of calibrated validation data.

    Results: {"calibrators": {name: {"params", "calibrator", "val", "test_pre", "test_post"}}, "best": name}, with
    calibrators ordered best first by test ECE-EM after calibration ("val" = metrics of the calibrated validation
    predictions, i.e. on the data the calibrator was fitted on). `objective` is temperature scaling's (default
    "ece-em", the paper's); `n_bins` is used by the metrics, the ECE objectives and histogram binning.
    """
    from adacal.metrics import compute_metrics

    names = list(methods) if methods else CALIBRATORS.names()
    calibrators = build_calibrators(names, objective=objective, n_bins=n_bins)
    val_scores = check_scores(val_logits, name="validation logits")
    n, k = val_scores.shape
    val_labels = check_labels(val_labels, n=n, num_classes=k, name="validation labels")
    test_scores = check_scores(test_logits, name="test logits")
    n, k = test_scores.shape
    test_labels = check_labels(test_labels, n=n, num_classes=k, name="test labels")
    if val_scores.shape[1] != test_scores.shape[1]:
        raise InputError(
            f"Expected validation and test logits with the same number of classes, got {val_scores.shape[1]} "
            f"and {test_scores.shape[1]}."
        )

    test_pre = compute_metrics(test_scores, test_labels, n_bins=n_bins)
    entries: dict[str, dict[str, Any]] = {}
    for name, calibrator in calibrators.items():
        calibrator.fit(val_scores, val_labels)
        entries[name] = {
            "params": calibrator.summary(),
            "calibrator": calibrator.to_dict(),
            "val": compute_metrics(calibrator.transform(val_scores), val_labels, n_bins=n_bins),
            "test_pre": dict(test_pre),
            "test_post": compute_metrics(calibrator.transform(test_scores), test_labels, n_bins=n_bins),
        }
    order = sorted(entries, key=lambda name: (_rank_value(entries[name]["test_post"]), name))
    best = order[0]
    results = {"calibrators": {name: entries[name] for name in order}, "best": best}
    return CalibrationComparison(results=results, fitted={name: calibrators[name] for name in order}, best=best)

