"""Conformal prediction sets: score functions by name and the split-conformal predictor (numpy only).

    from adacal.conformal import ConformalPredictor, coverage_report
    predictor = ConformalPredictor("aps", alpha=0.1).fit(val_logits, val_labels)
    sets = predictor.predict_sets(test_logits)          # bool (N, K)
    report = coverage_report(sets, test_labels)

Scores (SCORES): thr (alias lac), aps, raps, topk. See docs/conformal.md for the definitions and the guarantee.
"""

from __future__ import annotations

from adacal.conformal.coverage import clopper_pearson, coverage_report
from adacal.conformal.predictor import (
    ConformalPredictor, check_alpha, conformal_quantile, load_predictors, quantile_rank, save_predictors,
)
from adacal.conformal.scores import (
    SCORES,
    AdaptiveScore,
    RegularizedScore,
    ScoreFunction,
    ThresholdScore,
    TopKScore,
    build_score,
    row_ranks,
    raps_tuning_split,
    row_uniforms,
    score_names,
    select_raps_parameters,
)

__all__ = [
    "SCORES",
    "AdaptiveScore",
    "ConformalPredictor",
    "RegularizedScore",
    "ScoreFunction",
    "ThresholdScore",
    "TopKScore",
    "build_score",
    "check_alpha",
    "clopper_pearson",
    "conformal_quantile",
    "coverage_report",
    "load_predictors",
    "quantile_rank",
    "row_ranks",
    "raps_tuning_split",
    "row_uniforms",
    "save_predictors",
    "score_names",
    "select_raps_parameters",
]
