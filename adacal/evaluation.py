"""Evaluation reports, the pure part of `adacal evaluate` that training uses too: metrics of (scores, labels), with
bootstrap intervals and per-bin statistics, in the report envelope. Reading a user's path and writing the report is
the command's (`adacal.commands.evaluate`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import check_scores, looks_like_probs
from adacal.checks import check_non_negative_int
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.allocation import check_bootstrap_fits
from adacal.metrics.binning import check_n_bins, debiased_square_error
from adacal.metrics.bootstrap import bootstrap_prepared, check_confidence, check_seed
from adacal.metrics.binary import metric_conventions
from adacal.metrics.calibration import (
    compute_prepared,
    default_metric_names,
    metric_key,
    prepare_metric_inputs,
    resolve_metric_names,
)
from adacal.metrics.calibration_tests import DEFAULT_RESAMPLES as DEFAULT_TEST_RESAMPLES
from adacal.metrics.calibration_tests import check_resamples
from adacal.reports import make_report

__all__ = ["add_calibration_analysis", "bins_note", "calibrated_probs", "check_bootstrap", "confidence_report",
           "evaluate_confidences", "evaluate_predictions", "evaluation_config", "evaluation_report"]


# Per-bin statistics in a report (four numbers per bin, for each binning) stop here: --n-bins 10^7 wrote 1.2 GB of
# JSON for a 50-sample file, and a reliability diagram draws at most 1,000 bins anyway.
MAX_REPORTED_BINS = 10_000


def check_bootstrap(n_resamples: Any, *, name: str = "bootstrap") -> int:
    """0 (no bootstrap) or a positive number of resamples."""
    return check_non_negative_int(n_resamples, name)


def calibrated_probs(calibrator: Any, logits: np.ndarray, *,
                     calibrator_path: str | os.PathLike = "calibrator", scores_kind: str | None = None) -> np.ndarray:
    """Probabilities from a fitted calibrator, applied to logits or probabilities as `scores_kind` says (the file
    reader's decision: "logits" or "probs"; None reads them as the calibrator was fitted). Vector and matrix scaling
    take only the kind they were fitted on: `Calibrator.transform` says so, naming the file here."""
    import inspect

    logits = check_scores(logits)
    # Any object with a transform will do; adacal's calibrators are told the kind the file reader decided.
    told = scores_kind is not None and "scores_kind" in inspect.signature(calibrator.transform).parameters
    try:
        transformed = calibrator.transform(logits, scores_kind=scores_kind) if told else calibrator.transform(logits)
    except InputError as exc:
        raise InputError(f"{str(exc).rstrip('.')} ({calibrator_path}).") from None
    probs = check_scores(transformed, name=f"the output of calibrator {calibrator_path}")
    if probs.shape != logits.shape or not looks_like_probs(probs):
        raise InputError(
            f"Expected calibrator {calibrator_path} to return probabilities of shape {logits.shape}, "
            f"got other values of shape {probs.shape}."
        )
    return probs


def evaluate_predictions(
    scores: Any,
    labels: Any,
    *,
    n_bins: int = DEFAULT_N_BINS,
    metric_names: str | Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    name: str = "scores",
    progress: Callable[[int, int], None] | None = None,
    scores_kind: str = "auto",
    tests: bool = False,
    test_resamples: int = DEFAULT_TEST_RESAMPLES,
    decompose: bool = False,
    binary_defaults: bool = False,
) -> dict[str, Any]:
    """The `results` block of an evaluate report.

    {"metrics": {snake_key: fraction (nll in nats, brier in [0, 2])}, "units", "assumed_input": "logits"|"probs",
     "n_samples", "num_classes", "bins": {"equal_width": ..., "equal_mass": ...} (top-1 reliability, n_bins each),
     "ece_debias_squared" (the debiased estimate of the squared error before root and clip; may be negative),
     "bootstrap": {snake_key: {"low", "high", "std"}} only when bootstrap > 0}.
    The kind of scores is `scores_kind` ("logits", "probs") or, in "auto", the per-row rule of docs/inputs.md §2
    (`prepare_predictions`): a matrix whose rows disagree is an InputError naming `name`, its rows and
    `scores_kind=`. Bins or bootstrap resamples that cannot fit in memory are refused before any metric is computed.
    `progress(done, total)` is called after each bootstrap resample. `tests` adds "calibration_tests" (the tests of
    `adacal.metrics.calibration_tests`, the resampling ones with `test_resamples` label sets drawn from `seed`),
    `decompose` adds "decomposition" (CORP: `adacal.metrics.decomposition.decompositions_of`). With
    `binary_defaults` and no `metric_names`, a binary model (K = 2) also gets the positive-class metrics
    (`adacal.metrics.calibration.default_metric_names`). "conventions" names the convention of each Brier score and
    positive-class ECE reported (`adacal.metrics.binary.metric_conventions`).
    """
    n_resamples = check_bootstrap(bootstrap)
    seed = check_seed(seed)
    confidence = check_confidence(confidence)
    if tests:
        check_resamples(test_resamples, name="test_resamples")
    pred, names, n_bins = prepare_metric_inputs(scores, labels, metric_names, n_bins, scores_kind, name=name)
    if binary_defaults and metric_names is None:
        names = default_metric_names(pred.num_classes)
    if n_resamples:
        check_bootstrap_fits(n_resamples, pred.n_samples, len(names), name="bootstrap")
    metrics = compute_prepared(pred, names, n_bins)
    units = "nll in nats; brier in [0, 2]" + ("; brier_positive in [0, 1]" if "brier_positive" in metrics else "")
    results: dict[str, Any] = {
        "metrics": metrics,
        "units": f"fractions in [0, 1], not % ({units})",
        "assumed_input": pred.assumed,
        "n_samples": pred.n_samples,
        "num_classes": pred.num_classes,
    }
    conventions = metric_conventions(metrics, pred.num_classes)
    if conventions:
        results["conventions"] = conventions
    # Equal-mass bin statistics, computed once for ECE-DEBIAS's estimate and the report's bins (when either is wanted).
    equal_mass = (pred.top_label_statistics("equal-mass", n_bins)
                  if "ece_debias" in results["metrics"] or n_bins <= MAX_REPORTED_BINS else None)
    if "ece_debias" in results["metrics"]:
        # The estimate before its root and the clip at 0 (Kumar et al.'s unbiased squared error): negative when the
        # bias correction exceeds the squared gaps, where ECE-DEBIAS reads 0 — below the estimator's resolution, not a
        # measured perfect calibration. Tables show it as "≤ 0".
        results["ece_debias_squared"] = debiased_square_error(equal_mass)
    if n_bins <= MAX_REPORTED_BINS:
        results["bins"] = {
            "equal_width": pred.top_label_statistics("equal-width", n_bins).to_dict(),
            "equal_mass": equal_mass.to_dict(),
        }
    if n_resamples:
        results["bootstrap"] = bootstrap_prepared(
            pred, names, n_resamples=n_resamples, seed=seed, confidence=confidence, n_bins=n_bins, progress=progress
        )
    add_calibration_analysis(results, pred, n_bins=n_bins, seed=seed, tests=tests, test_resamples=test_resamples,
                             decompose=decompose, classwise=True)
    return results


def add_calibration_analysis(results: dict[str, Any], pred: Any, *, n_bins: int, seed: int, tests: bool,
                             test_resamples: int, decompose: bool, classwise: bool) -> None:
    """Add "calibration_tests" ({test_key: {"statistic", "p_value", "n", "resamples"}}) when `tests`, and
    "decomposition" ({"brier_top", "nll_correct", and with `classwise` "brier": {"score", "miscalibration",
    "discrimination", "uncertainty", "n"}}, "notes" when a part is left out) when `decompose`, to `results`."""
    if tests:
        from adacal.metrics.calibration_tests import run_calibration_tests

        outcomes = run_calibration_tests(pred, n_bins=n_bins, n_resamples=test_resamples, seed=seed)
        results["calibration_tests"] = {name.replace("-", "_"): test.to_dict() for name, test in outcomes.items()}
    if decompose:
        from adacal.metrics.decomposition import decompositions_of

        decomposition, notes = decompositions_of(pred, classwise=classwise)
        if notes:
            decomposition["notes"] = notes
        results["decomposition"] = decomposition


def bins_note(n_bins: int) -> list[str]:
    """Why a report holds no per-bin statistics, when it does not."""
    if n_bins <= MAX_REPORTED_BINS:
        return []
    return [f"per-bin statistics (for reliability diagrams) are stored only up to {MAX_REPORTED_BINS:,} bins; "
            f"the metrics use all {n_bins:,}"]


def evaluation_config(
    *,
    n_bins: int = DEFAULT_N_BINS,
    metric_names: str | Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    source: dict[str, Any] | None = None,
    calibrator: str | os.PathLike | None = None,
    tests: bool = False,
    test_resamples: int = DEFAULT_TEST_RESAMPLES,
    decompose: bool = False,
    num_classes: int | None = None,
) -> dict[str, Any]:
    """The `config` section of an evaluate report: the options the metrics were computed with (metric names
    resolved to their canonical form; none named: `default_metric_names(num_classes)`) and where the predictions
    came from; "test_resamples" with `tests`, "decompose" with `decompose`."""
    extra: dict[str, Any] = {}
    if tests:
        extra["test_resamples"] = test_resamples
    if decompose:
        extra["decompose"] = True
    return {
        "n_bins": n_bins,
        "metrics": list(resolve_metric_names(metric_names) if metric_names is not None
                        else default_metric_names(num_classes)),
        "bootstrap": bootstrap,
        "seed": seed,
        "confidence": confidence,
        "source": source,
        "calibrator": None if calibrator is None else str(calibrator),
        **extra,
    }


def evaluation_report(
    scores: Any,
    labels: Any,
    *,
    n_bins: int = DEFAULT_N_BINS,
    metric_names: str | Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    input_path: str | os.PathLike | None = None,
    source: dict[str, Any] | None = None,
    calibrator: str | os.PathLike | None = None,
    progress: Callable[[int, int], None] | None = None,
    scores_kind: str = "auto",
    tests: bool = False,
    test_resamples: int = DEFAULT_TEST_RESAMPLES,
    decompose: bool = False,
) -> dict[str, Any]:
    """The full evaluate report (kind "evaluate"): the common envelope around `evaluate_predictions`' results
    (`scores_kind`, `tests`, `test_resamples` and `decompose` as it takes them; a binary model's default metrics
    include the positive-class ones)."""
    name = "scores" if input_path is None else f"the scores in {Path(input_path).name}"
    results = evaluate_predictions(
        scores, labels, n_bins=n_bins, metric_names=metric_names, bootstrap=bootstrap, seed=seed, confidence=confidence,
        name=name, progress=progress, scores_kind=scores_kind, tests=tests, test_resamples=test_resamples,
        decompose=decompose, binary_defaults=True,
    )
    config = evaluation_config(
        n_bins=n_bins, metric_names=metric_names, bootstrap=bootstrap, seed=seed, confidence=confidence,
        source=source, calibrator=calibrator, tests=tests, test_resamples=test_resamples, decompose=decompose,
        num_classes=results["num_classes"],
    )
    return make_report("evaluate", config=config, results=results, input_path=input_path)


def evaluate_confidences(
    confidences: Any,
    correct: Any,
    *,
    n_bins: int = DEFAULT_N_BINS,
    metric_names: str | Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    progress: Callable[[int, int], None] | None = None,
    tests: bool = False,
    test_resamples: int = DEFAULT_TEST_RESAMPLES,
    decompose: bool = False,
) -> dict[str, Any]:
    """The `results` block of an evaluate report of top-label `(confidence, correct)` pairs (`adacal.metrics.
    confidences`): as `evaluate_predictions`' with the top-label metrics ("nll_correct", "brier_top",
    "auroc_correct", "auprc_errors" beside the ECEs and error), "assumed_input": "confidences", no "num_classes", and
    "skipped_metrics": the metrics asked for that need every class's probability (not computed); `tests` and
    `decompose` add what they add to `evaluate_predictions`' (the top-label decompositions only).

    Example:
        >>> from adacal.evaluation import evaluate_confidences
        >>> results = evaluate_confidences([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_bins=10, metric_names="ece-ew")
        >>> results["assumed_input"], round(results["metrics"]["ece_ew"], 4)
        ('confidences', 0.4)
    """
    from adacal.metrics.confidences import compute_confidence_metrics, prepare_confidences, resolve_top_label_metrics
    from adacal.metrics.selective import RANKING_METRIC_NAMES, SELECTIVE_DISPLAY_NAMES

    n_resamples = check_bootstrap(bootstrap)
    seed = check_seed(seed)
    confidence = check_confidence(confidence)
    n_bins = check_n_bins(n_bins)
    if tests:
        check_resamples(test_resamples, name="test_resamples")
    names, skipped = resolve_top_label_metrics(metric_names)
    notes: list[str] = []
    pred = prepare_confidences(confidences, correct, notes_out=notes)
    if n_resamples:
        check_bootstrap_fits(n_resamples, pred.n_samples, len(names), name="bootstrap")
    metrics = compute_confidence_metrics(pred, names, n_bins)
    undefined = [SELECTIVE_DISPLAY_NAMES[name] for name in RANKING_METRIC_NAMES
                 if name in names and metric_key(name) not in metrics]
    if undefined:
        notes.append(f"{' and '.join(undefined)} not computed: every answer is right, or every one wrong")
    results: dict[str, Any] = {
        "metrics": metrics,
        "units": "fractions in [0, 1], not % (nll_correct in nats; brier_top in [0, 1])",
        "assumed_input": "confidences",
        "n_samples": pred.n_samples,
        "skipped_metrics": list(skipped),
    }
    equal_mass = pred.top_label_statistics("equal-mass", n_bins) if (
        "ece_debias" in metrics or n_bins <= MAX_REPORTED_BINS) else None
    if "ece_debias" in metrics:
        results["ece_debias_squared"] = debiased_square_error(equal_mass)
    if n_bins <= MAX_REPORTED_BINS:
        results["bins"] = {"equal_width": pred.top_label_statistics("equal-width", n_bins).to_dict(),
                           "equal_mass": equal_mass.to_dict()}
    if n_resamples:
        # The AUROC of correctness and AUPRC of errors: over the resamples where they are defined (bootstrap_prepared).
        results["bootstrap"] = bootstrap_prepared(pred, names, n_resamples=n_resamples, seed=seed,
                                                  confidence=confidence, n_bins=n_bins, progress=progress,
                                                  compute=compute_confidence_metrics)
    add_calibration_analysis(results, pred, n_bins=n_bins, seed=seed, tests=tests, test_resamples=test_resamples,
                             decompose=decompose, classwise=False)
    if notes:
        results["notes"] = notes
    return results


def confidence_report(
    confidences: Any,
    correct: Any,
    *,
    n_bins: int = DEFAULT_N_BINS,
    metric_names: str | Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    input_path: str | os.PathLike | None = None,
    source: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    tests: bool = False,
    test_resamples: int = DEFAULT_TEST_RESAMPLES,
    decompose: bool = False,
) -> dict[str, Any]:
    """The full evaluate report of top-label `(confidence, correct)` pairs: the envelope around
    `evaluate_confidences`' results; its config lists the metrics computed."""
    from adacal.metrics.confidences import resolve_top_label_metrics

    results = evaluate_confidences(confidences, correct, n_bins=n_bins, metric_names=metric_names,
                                   bootstrap=bootstrap, seed=seed, confidence=confidence, progress=progress,
                                   tests=tests, test_resamples=test_resamples, decompose=decompose)
    config = evaluation_config(n_bins=n_bins, metric_names=None, bootstrap=bootstrap, seed=seed,
                               confidence=confidence, source=source, tests=tests, test_resamples=test_resamples,
                               decompose=decompose)
    config["metrics"] = [name for name in resolve_top_label_metrics(metric_names)[0]
                         if metric_key(name) in results["metrics"]]
    return make_report("evaluate", config=config, results=results, input_path=input_path)
