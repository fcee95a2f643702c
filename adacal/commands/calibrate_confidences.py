"""`adacal calibrate` on top-label `(confidence, correct)` inputs: read the validation and test pairs (a file with
`val_` / `test_` pairs, `--val FILE`, or a seeded stratified split of one file by `--val-fraction`), fit the
confidence maps (`adacal.calibrators.confidence_maps`), choose one by cross-validated NLL of correctness with
`--method all` (the selection rule of score matrices, `choose_calibrator`), and measure the top-label metrics on test
before and after — per group too with `--group-by KEY` (`adacal.grouped.grouped_results`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError

__all__ = ["ConfidenceSets", "SELECTION_KEYS", "calibrate_confidences", "read_confidence_sets", "split_rows"]

# The metrics `--select-metric` may name for confidence maps: its report key -> the top-label metric it stands for.
SELECTION_KEYS = {"nll": "nll_correct", "brier": "brier_top", "ece_em": "ece_em", "ece_ew": "ece_ew"}


@dataclass(frozen=True)
class ConfidenceSets:
    """Validation and test pairs (`TopLabelPredictions`) and how they were split (results.split of the report)."""

    val: Any
    test: Any
    split: dict[str, Any]

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.val.notes + self.test.notes))


def split_rows(predictions: Any, rows: np.ndarray) -> Any:
    """The rows `rows` of a `Predictions` or `TopLabelPredictions` (groups sliced alike; the record's n updated).

    Example:
        >>> import numpy as np
        >>> from adacal.interpretation.confidence import TopLabelPredictions
        >>> pairs = TopLabelPredictions(np.array([0.9, 0.8, 0.7]), np.array([True, False, True]))
        >>> split_rows(pairs, np.array([0, 2])).confidences.tolist()
        [0.9, 0.7]
    """
    groups = None if predictions.groups is None else {key: np.asarray(names)[rows]
                                                      for key, names in predictions.groups.items()}
    record = predictions.interpretation
    if record is not None:
        record = replace(record, n=int(rows.size))
    if hasattr(predictions, "confidences"):
        return replace(predictions, confidences=predictions.confidences[rows], correct=predictions.correct[rows],
                       groups=groups, interpretation=record)
    return replace(predictions, logits=predictions.logits[rows], labels=predictions.labels[rows], groups=groups,
                   interpretation=record)


def _top_label(path: Path, split: str, options: Any) -> Any:
    """The top-label pairs of `path`, or None for class scores: questions of different numbers of options in an
    LLM evaluation output (docs/inputs.md §10) are top-label confidences as `evaluate` reads them; the same number
    of options in every question are class scores (then the calibrators of score matrices apply, temperature on the
    option log-likelihoods among them)."""
    from adacal.interpretation.confidence import load_top_label
    from adacal.interpretation.llm_maps import load_questions

    questions = load_questions(path, options)
    if questions is not None:
        return questions.top_label() if questions.ragged else None
    return load_top_label(path, split=split, options=options)


def _has_own_split(predictions: Any) -> bool:
    from adacal.interpretation.split import WHOLE_FILE

    record = predictions.interpretation
    return record is not None and record.split != WHOLE_FILE


def read_confidence_sets(source: Path, *, val: Path | None, val_fraction: float | None, seed: int,
                         options: Any, group_by: str | None = None) -> ConfidenceSets | None:
    """The validation and test pairs of a top-label input, or None when `source` holds class scores (then the
    calibrators of score matrices apply). Refuses a --val file of the other kind, a file with its own val/test
    splits beside --val-fraction, and a file with no validation pairs and neither option, each in one line."""
    from adacal.calibrators.holdout import holdout_split
    from adacal.interpretation.groups import attach_groups

    test = _top_label(source, "test", options)
    if test is None:
        if val is not None and _top_label(val, "val", replace(options, labels_file=None)) is not None:
            raise InputError(f"Expected the validation file {val.name} to hold class scores like {source.name}, but it "
                             "holds top-label confidences (confidence, correct): give both as one kind.")
        return None
    if group_by is not None:
        test = attach_groups(test, source, group_by, options=options)
    if val is not None:
        val_pairs = _top_label(val, "val", replace(options, labels_file=None))
        if val_pairs is None:
            raise InputError(f"Expected the validation file {val.name} to hold top-label confidences (confidence, "
                             f"correct) like {source.name}, but it holds class scores: give both as one kind.")
        return ConfidenceSets(val_pairs, test, {"source": "--val", "n_val": len(val_pairs), "n_test": len(test)})
    if val_fraction is not None:
        if _has_own_split(test):
            raise InputError(f"Expected --val-fraction with a file of one set of rows, but {source.name} has its own "
                             "val_ and test_ splits: drop --val-fraction to fit on its val_ pairs.")
        val_rows, test_rows = holdout_split(test.correct, val_fraction, seed=seed)
        split = {"source": "--val-fraction", "val_fraction": val_fraction, "seed": seed,
                 "stratified_by": "correctness", "n_val": int(val_rows.size), "n_test": int(test_rows.size)}
        return ConfidenceSets(split_rows(test, val_rows), split_rows(test, test_rows), split)
    val_pairs = _top_label(source, "val", options)
    if not _has_own_split(test) or val_pairs is None or not _has_own_split(val_pairs):
        raise InputError(f"Expected validation pairs to fit on in {source.name} (val_confidence, val_correct), found "
                         "one set of rows: pass --val-fraction F to fit on a seeded random F of them, or --val FILE.")
    return ConfidenceSets(val_pairs, test, {"source": "file splits", "n_val": len(val_pairs), "n_test": len(test)})


def _test_metrics(confidences: np.ndarray, correct: np.ndarray, n_bins: int) -> dict[str, float]:
    from adacal.evaluation import evaluate_confidences

    metrics = dict(evaluate_confidences(confidences, correct, n_bins=n_bins)["metrics"])
    metrics["accuracy"] = 1.0 - metrics["error"]
    return metrics


def _cv_means(name: str, confidences: np.ndarray, correct: np.ndarray, folds: list[np.ndarray], n_bins: int,
              step: Callable[[str], None]) -> dict[str, Any]:
    """Mean held-out figures of a map refitted on all but each fold (keys "nll", "brier", "ece_em", "ece_ew": of
    the correctness), and the per-fold values."""
    from adacal.calibrators.confidence_maps import build_confidence_map
    from adacal.metrics.confidences import compute_confidence_metrics, prepare_confidences

    per_fold: dict[str, list[float]] = {key: [] for key in SELECTION_KEYS}
    for index, held_out in enumerate(folds):
        train = np.ones(correct.size, dtype=bool)
        train[held_out] = False
        fitted = build_confidence_map(name, n_bins=n_bins).fit(confidences[train], correct[train])
        pred = prepare_confidences(fitted.transform(confidences[held_out]), correct[held_out])
        metrics = compute_confidence_metrics(pred, ("nll-correct", "brier-top", "ece-em", "ece-ew"), n_bins)
        for key, metric in SELECTION_KEYS.items():
            per_fold[key].append(float(metrics[metric]))
        step(f"{name}: fold {index + 1}/{len(folds)}")
    return {"means": {key: float(np.mean(values)) for key, values in per_fold.items()}, "folds": per_fold}


def calibrate_confidences(
    sets: ConfidenceSets, *, methods: list[str], n_bins: int, folds: int, metric: str, seed: int,
    group_by: str | None = None, progress: Callable[[int, int, str], None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Fit each confidence map on the validation pairs, measure it on test, and (several methods) choose one by
    `folds`-fold stratified cross-validation inside the validation pairs (`choose_calibrator`: lowest mean CV
    `metric`, "nll" = NLL of correctness by default, ties to the simpler map, uncalibrated among the candidates).

    Returns:
        (results, fitted maps by name, the chosen name); results hold "calibrators" ({name: {"params", "test_pre",
        "test_post", "cv"}}), "best", "selection", "assumed_input": "confidences", and with `group_by`, "groups"
        ({"key", "before", "after"}: `grouped_results` tables of the test rows, uncalibrated and after the chosen map).
    """
    from adacal.calibrators.compare import stratified_folds
    from adacal.calibrators.confidence_maps import build_confidence_map
    from adacal.calibrators.selection import choose_calibrator

    if metric not in SELECTION_KEYS:
        raise InputError(f"Expected --select-metric nll, brier, ece-em or ece-ew for top-label confidences, got "
                         f"{metric.replace('_', '-')}: choose one of those.")
    val_conf, val_correct = sets.val.confidences, sets.val.correct.astype(np.float64)
    test_conf, test_correct = sets.test.confidences, sets.test.correct.astype(np.float64)
    several = len(methods) > 1
    if several and val_correct.size < folds:
        raise InputError(f"Expected at least --folds ({folds}) validation pairs to cross-validate on, got "
                         f"{val_correct.size}: lower --folds or give more validation rows.")
    total = len(methods) * ((folds if several else 0) + 1)
    done = 0

    def step(description: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, description)

    fold_sets = stratified_folds(val_correct.astype(np.int64), folds, seed=seed) if several else []
    before = _test_metrics(test_conf, test_correct, n_bins)
    entries: dict[str, Any] = {}
    fitted: dict[str, Any] = {}
    for name in methods:
        cv = _cv_means(name, val_conf, val_correct, fold_sets, n_bins, step) if several else None
        fitted[name] = build_confidence_map(name, n_bins=n_bins).fit(val_conf, val_correct)
        step(f"{name}: final fit")
        after = _test_metrics(fitted[name].transform(test_conf), test_correct, n_bins)
        entries[name] = {"params": fitted[name].summary(), "test_pre": before, "test_post": after,
                         **({"cv": cv} if cv is not None else {})}
    results: dict[str, Any] = {"calibrators": entries, "assumed_input": "confidences"}
    if several:
        choice = choose_calibrator({name: entry["cv"]["means"] for name, entry in entries.items()},
                                   metric=metric, folds=folds)
        best = choice["best"]
        ranked = sorted(entries, key=lambda name: _finite(entries[name]["test_post"].get("ece_em")))
        for rank, name in enumerate(ranked, start=1):
            entries[name]["test_rank"] = rank
        results["selection"] = {"metric": metric, "folds": folds, "seed": seed, "stratified_by": "correctness",
                                "reason": choice["reason"], "order": choice["order"], "skipped": choice["skipped"],
                                "errors": {}}
    else:
        best = methods[0]
        results["selection"] = {"metric": None, "folds": None, "seed": None, "reason": "the one method asked for",
                                "errors": {}}
    results["best"] = best
    if group_by is not None:
        results["groups"] = _groups(sets.test, group_by, fitted[best].transform(test_conf), n_bins)
    return results, fitted, best


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else math.inf


def _groups(test: Any, key: str, calibrated: np.ndarray, n_bins: int) -> dict[str, Any]:
    """Per-group top-label figures of the test rows before and after the chosen map."""
    from adacal.evaluation import evaluate_confidences
    from adacal.grouped import grouped_results

    names = test.groups[key]
    tables = {}
    for stage, confidences in (("before", test.confidences), ("after", calibrated)):
        overall = evaluate_confidences(confidences, test.correct, n_bins=n_bins)
        tables[stage] = grouped_results(confidences, test.correct, names, key=key, overall=overall, n_bins=n_bins)
    return {"key": key, **tables}
