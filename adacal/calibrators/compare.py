"""Fit calibrators on validation predictions, choose one by cross-validation on validation data, and measure them on
test: what `adacal calibrate` reports.

The choice (`choose_calibrator`) is by a proper scoring rule, the mean held-out NLL over the folds, with the identity
("uncalibrated") always a candidate, so that no calibrator is chosen that makes the probabilities worse than none;
ties go to the simpler method (SIMPLICITY_ORDER)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from adacal.arrays import check_labels, mixed_binary_kinds
from adacal.calibrators.base import CALIBRATORS, Calibrator, check_choice, check_int
from adacal.calibrators.reading import read_scores
from adacal.calibrators.selection import (  # noqa: F401 (choose_calibrator, ece_noise: public here too)
    BASELINE,
    SIMPLICITY_ORDER,
    SMALL_VALIDATION,
    choose_calibrator,
    ece_noise,
    finite_or_inf,
    simplicity_rank,
)
from adacal.calibrators.temperature import TEMPERATURE_OBJECTIVES
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import AdacalError, InputError
from adacal.registry import option_names

DEFAULT_FOLDS = 5
DEFAULT_SELECTION_METRIC = "nll"


@dataclass(frozen=True)
class CalibrationComparison:
    """What `compare_calibrators` returns.

    Args:
        results: the calibrate.json results object: "calibrators", "best" and "selection".
        fitted: the fitted calibrators by name, the selected one first.
        best: the name of the selected calibrator.

    Example:
        >>> import numpy as np
        >>> from adacal.calibrators import compare_calibrators
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])
        >>> comparison = compare_calibrators(logits, labels, logits, labels, methods=["temperature"])
        >>> comparison.best, sorted(comparison.results), list(comparison.fitted)
        ('temperature', ['best', 'calibrators', 'selection'], ['temperature'])
    """

    results: dict[str, Any]
    fitted: dict[str, Calibrator]
    best: str


def build_calibrators(
    methods: list[str], *, objective: str | None = None, n_bins: int = DEFAULT_N_BINS
) -> dict[str, Calibrator]:
    """Unfitted calibrators by name, each given the shared options it takes.

    Args:
        methods: registered calibrator names.
        objective: temperature scaling's objective, or None for its default.
        n_bins: passed to every calibrator that takes `n_bins` (default 15).

    Returns:
        {name: unfitted calibrator}, in the order of `methods`.

    Example:
        >>> from adacal.calibrators import build_calibrators
        >>> build_calibrators(["temperature", "histogram"], n_bins=10)["histogram"]
        HistogramBinning(n_bins=10) (not fitted)
    """
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




def stratified_folds(labels: np.ndarray, n_folds: int, *, seed: int = 0) -> list[np.ndarray]:
    """Held-out index sets of a seeded, stratified k-fold split: each class's samples, shuffled, are dealt to the folds
    in turn (continuing where the previous class stopped), so fold sizes differ by at most one and every class is
    spread as evenly as its count allows, even when a class has fewer samples than there are folds."""
    rng = np.random.default_rng(seed)
    assignment = np.empty(labels.size, dtype=np.int64)
    dealt = 0
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        assignment[members] = (dealt + np.arange(members.size)) % n_folds
        dealt += members.size
    return [np.sort(np.flatnonzero(assignment == fold)) for fold in range(n_folds)]


@contextmanager
def warnings_if_it_works() -> Iterator[None]:
    """Hold the warnings of a fit: shown if it succeeds, dropped if it raises (the report names the failure; numpy's
    overflow warnings from inside a fit that failed would only bury it)."""
    with warnings.catch_warnings(record=True) as caught:
        yield
    for message in caught:
        warnings.warn_explicit(message.message, message.category, message.filename, message.lineno)


def cross_validate_metrics(
    calibrator: Calibrator,
    logits: np.ndarray,
    labels: np.ndarray,
    folds: list[np.ndarray],
    *,
    metrics: list[str],
    n_bins: int,
    step: Callable[[str], None] | None = None,
    scores_kind: str = "auto",
) -> dict[str, list[float]]:
    """Each metric (compute_metrics names) of `calibrator` refitted on all but each fold and scored on that fold.

    Args:
        calibrator: an unfitted calibrator (refitted from its options on each fold).
        logits: validation scores (N, K), float64 as `adacal.calibrators.reading.read_scores` gives them.
        labels: validation class indices (N,).
        folds: the held-out index sets (`stratified_folds`).
        metrics: the metrics to score each held-out fold by.
        n_bins: bins of the ECE metrics.
        step: called with a description after each fold.
        scores_kind: the kind of `logits` ("probs" / "logits"), passed to each fold's fit; "auto" decides per fit.

    Returns:
        {report key: [the metric on each held-out fold]}.

    Example:
        >>> import numpy as np
        >>> from adacal.calibrators import IdentityCalibration
        >>> from adacal.calibrators.compare import cross_validate_metrics
        >>> logits, labels = np.array([[2.0, 0.0], [0.0, 2.0]] * 4), np.array([0, 1] * 4)
        >>> scores = cross_validate_metrics(IdentityCalibration(), logits, labels, [np.arange(4), np.arange(4, 8)],
        ...                                 metrics=["nll"], n_bins=15)
        >>> [round(value, 4) for value in scores["nll"]]  # −ln sigmoid(2) on both folds
        [0.1269, 0.1269]
    """
    from adacal.metrics import compute_metrics

    scores: dict[str, list[float]] = {}
    for index, held_out in enumerate(folds):
        train = np.ones(labels.size, dtype=bool)
        train[held_out] = False
        with warnings_if_it_works():
            fold_calibrator = type(calibrator)(**calibrator.get_params())
            fold_calibrator.fit(logits[train], labels[train], scores_kind=scores_kind)
            # The held-out rows are read as the fold's fit read its rows, never re-decided on their own.
            probs = fold_calibrator.transform(logits[held_out], scores_kind=fold_calibrator.fitted_on_)
        for key, value in compute_metrics(probs, labels[held_out], n_bins=n_bins, names=metrics).items():
            scores.setdefault(key, []).append(float(value))
        if step is not None:
            step(f"{calibrator.name}: fold {index + 1}/{len(folds)}")
    return scores


def cross_validate(
    calibrator: Calibrator,
    logits: np.ndarray,
    labels: np.ndarray,
    folds: list[np.ndarray],
    *,
    metric: str,
    n_bins: int,
    step: Callable[[str], None] | None = None,
    scores_kind: str = "auto",
) -> list[float]:
    """The metric (a compute_metrics name) of `calibrator` refitted on all but each fold and scored on that fold
    (`scores_kind`: what `logits` hold, as `Calibrator.fit` takes it)."""
    return next(iter(cross_validate_metrics(calibrator, logits, labels, folds, metrics=[metric], n_bins=n_bins,
                                            step=step, scores_kind=scores_kind).values()))


def compare_calibrators(
    val_logits: Any,
    val_labels: Any,
    test_logits: Any,
    test_labels: Any,
    *,
    methods: list[str] | None = None,
    objective: str | None = "nll",
    n_bins: int = DEFAULT_N_BINS,
    folds: int = DEFAULT_FOLDS,
    metric: str = DEFAULT_SELECTION_METRIC,
    seed: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
    scores_kind: str = "auto",
    test_scores_kind: str | None = None,
) -> CalibrationComparison:
    """Fit each method on validation data, choose one by cross-validation on validation data only, measure on test.

    Args:
        val_logits: validation logits (N, K).
        val_labels: validation class indices (N,).
        test_logits: test logits (M, K).
        test_labels: test class indices (M,).
        methods: calibrator names (default: all registered). With more than one, "uncalibrated" (the identity) is
            always among them: the choice may be to change nothing.
        objective: temperature scaling's objective (default "nll").
        n_bins: bins of the metrics, the ECE objectives and histogram binning (default 15).
        folds: folds of the stratified cross-validation that chooses between several methods (default 5).
        metric: the selection metric, any `compute_metrics` name, lower is better (default "nll", a proper scoring
            rule); with another, a method whose CV NLL is worse than uncalibrated's is skipped (`choose_calibrator`).
        seed: seed of the folds (default 0).
        progress: called as progress(done, total, description) after each fold fit and each final fit, or None.
        scores_kind: what the validation scores hold, "auto" (the shared per-row rule), "logits" or "probs" (a
            file reader's decision, passed on rather than made again).
        test_scores_kind: the same for the test scores (default: `scores_kind`).

    Returns:
        A `CalibrationComparison`: the calibrate.json results ({"calibrators", "best", "selection"}), the
        calibrators refitted on all the validation data (best first) and the selected name.

    Example:
        >>> import numpy as np
        >>> from adacal.calibrators import compare_calibrators
        >>> logits, labels = np.array([[2.0, 0.0]] * 4), np.array([0, 0, 0, 1])
        >>> comparison = compare_calibrators(logits, labels, logits, labels, methods=["temperature"])
        >>> comparison.best, round(comparison.results["calibrators"]["temperature"]["params"]["temperature"], 4)
        ('temperature', 1.8205)
    """
    # Selection: with more than one method, each (and the identity, "uncalibrated") is refitted on all but one fold of
    # the validation split (seeded, stratified by label: `stratified_folds`) and scored on the held-out fold by
    # `metric`, NLL and ECE-EM; `choose_calibrator` picks. A method that cannot be fitted on a fold (e.g. too few
    # samples for a spline) gets no score and is not chosen. The test split plays no part in the choice: it gives the
    # test metrics beside it and `test_rank` (the rank by test ECE-EM, the paper-style ranking). With one method there
    # is nothing to choose: folds = 0.
    # Results: {"calibrators": {name: {"params", "calibrator", "val", "test_pre", "test_post", "cv", "test_rank"}},
    # "best", "selection": {"method", "metric", "folds", "split": "validation", "seed", "stratified": True,
    # "cv_scores": {name: mean or None}, "cv_fold_scores": {name: [per fold]}, "cv_nll", "cv_ece_em": {name: mean},
    # "baseline", "skipped": {name: why}, "reason", "tie_order", "ece_noise", "errors": {name: message}}},
    # calibrators ordered best first, then by cross-validation score.
    from adacal.metrics import compute_metrics, metric_key, resolve_metric_names

    names = list(methods) if methods else CALIBRATORS.names()
    if len(names) > 1 and BASELINE in CALIBRATORS and BASELINE not in names:
        names = [BASELINE, *names]
    calibrators = build_calibrators(names, objective=objective, n_bins=n_bins)
    selection_metric = check_selection(metric, folds)
    seed = check_int("seed", seed, minimum=0)
    # As Calibrator.fit reads them (a binary model's one score per sample as two columns; float16 / bfloat16
    # probabilities, which sum to 1 only within their rounding, as probabilities), each set's kind decided once, so
    # that the fits, the metrics and the cross-validation folds all see the same float64 predictions.
    # One model's two splits are read alike: a binary model's scores outside [0, 1] in one make both decision scores.
    test_scores_kind = scores_kind if test_scores_kind is None else test_scores_kind
    if scores_kind == test_scores_kind == "auto" and mixed_binary_kinds(val_logits, test_logits):
        scores_kind = test_scores_kind = "logits"
    val_scores, val_kind = read_scores(val_logits, scores_kind=scores_kind, name="validation logits")
    n, k = val_scores.shape
    val_labels = check_labels(val_labels, n=n, num_classes=k, name="validation labels")
    test_scores, test_kind = read_scores(test_logits, scores_kind=test_scores_kind, name="test logits")
    n, k = test_scores.shape
    test_labels = check_labels(test_labels, n=n, num_classes=k, name="test labels")
    if val_scores.shape[1] != test_scores.shape[1]:
        raise InputError(
            f"Expected validation and test logits with the same number of classes, got {val_scores.shape[1]} "
            f"and {test_scores.shape[1]}."
        )
    n_folds = folds if len(calibrators) > 1 else 0
    if n_folds and val_labels.size < n_folds:
        raise InputError(
            f"Expected at least {n_folds} validation samples for {n_folds}-fold selection, got {val_labels.size}."
        )

    total = len(calibrators) * (n_folds + 1)
    done = 0

    def step(description: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, description)

    key = metric_key(resolve_metric_names(selection_metric)[0])
    scored_metrics = list(dict.fromkeys([selection_metric, "nll", "ece-em"]))
    fold_sets = stratified_folds(val_labels, n_folds, seed=seed) if n_folds else []
    fold_scores: dict[str, dict[str, list[float]] | None] = {}
    errors: dict[str, str] = {}
    for name, calibrator in calibrators.items():
        if not n_folds:
            continue
        try:
            fold_scores[name] = cross_validate_metrics(
                calibrator, val_scores, val_labels, fold_sets, metrics=scored_metrics, n_bins=n_bins, step=step,
                scores_kind=val_kind,
            )
        except AdacalError as exc:
            fold_scores[name], errors[name] = None, str(exc)
            done = (list(calibrators).index(name) + 1) * n_folds
    cv_means = {name: ({metric_name: float(np.mean(values)) for metric_name, values in scores.items()}
                       if scores is not None else None) for name, scores in fold_scores.items()}
    if n_folds and all(value is None for value in cv_means.values()):
        raise InputError(
            f"Expected at least one calibrator to fit on every validation fold, but none did: {errors}."
        )

    test_pre = calibrate_test_metrics(test_scores, test_labels, n_bins=n_bins, scores_kind=test_kind)
    entries: dict[str, dict[str, Any]] = {}
    for name, calibrator in calibrators.items():
        try:
            with warnings_if_it_works():
                calibrator.fit(val_scores, val_labels, scores_kind=val_kind)
                val_probs = calibrator.transform(val_scores, scores_kind=val_kind)
                test_probs = calibrator.transform(test_scores, scores_kind=test_kind)
        except AdacalError as exc:
            # Compared with others, a method that cannot be fitted is reported and left out; alone, it is the error.
            if len(calibrators) == 1:
                raise
            errors.setdefault(name, str(exc))
            step(f"{name}: failed")
            continue
        entries[name] = {
            "params": calibrator.summary(),
            "calibrator": calibrator.to_dict(),
            "val": compute_metrics(val_probs, val_labels, n_bins=n_bins),
            "test_pre": dict(test_pre),
            "test_post": calibrate_test_metrics(test_probs, test_labels, n_bins=n_bins, scores_kind="probs"),
        }
        if n_folds:
            scores = (fold_scores[name] or {}).get(key)
            entries[name]["cv"] = {
                "metric": key,
                "mean": cv_means[name][key] if cv_means[name] is not None else None,
                "std": float(np.std(scores)) if scores is not None else None,
                "folds": scores,
                "means": cv_means[name],
            }
        step(f"{name}: fit on all validation data")
    by_test = sorted(entries, key=lambda name: (finite_or_inf(_metric(entries[name]["test_post"], "ece_em")),
                                                simplicity_rank(name), name))
    for rank, name in enumerate(by_test, start=1):
        entries[name]["test_rank"] = rank
    if not entries:
        raise InputError(f"Expected at least one calibrator to fit on the validation data, but none did: {errors}.")
    choice = {"best": next(iter(entries)), "order": list(entries), "skipped": {}, "reason": "the only method"}
    if n_folds and all(cv_means.get(name) is None for name in entries):
        raise InputError(
            "Expected at least one calibrator to fit on every validation fold and on all of it, but none did: "
            f"{errors}."
        )
    if n_folds:
        choice = choose_calibrator({name: cv_means.get(name) for name in entries}, metric=key, folds=n_folds,
                                   baseline=BASELINE if BASELINE in entries else None)
    order, best = choice["order"], choice["best"]
    fold_size = int(min(fold.size for fold in fold_sets)) if n_folds else None
    noise = (ece_noise(softmax_rows(val_scores, val_kind), n_bins=n_bins, fold_size=fold_size, seed=seed)
             if val_labels.size < SMALL_VALIDATION else None)

    def means(metric_name: str) -> dict[str, float | None]:
        return {name: (cv_means[name] or {}).get(metric_name) for name in order} if n_folds else {}

    selection = {
        "method": best,
        "metric": key,
        "folds": n_folds,
        "split": "validation",
        "seed": seed,
        "stratified": True,
        "cv_scores": means(key),
        "cv_fold_scores": {name: (fold_scores[name] or {}).get(key) if fold_scores[name] is not None else None
                           for name in order} if n_folds else {},
        "cv_nll": means("nll"),
        "cv_ece_em": means("ece_em"),
        "baseline": BASELINE if BASELINE in entries and n_folds else None,
        "skipped": choice["skipped"],
        "reason": choice["reason"],
        "tie_order": list(SIMPLICITY_ORDER),
        "ece_noise": noise,
        "errors": errors,
    }
    results = {"calibrators": {name: entries[name] for name in order}, "best": best, "selection": selection}
    return CalibrationComparison(results=results, fitted={name: calibrators[name] for name in order}, best=best)


# Added to the test metrics before and after each calibrator: did calibrating change the ranking of confidences (a
# temperature keeps a binary model's; with K > 2 it may reorder two samples; binning ties them; docs/conventions.md).
SELECTIVE_TEST_METRICS = ("aurc", "auroc-correct")


def calibrate_test_metrics(scores: Any, labels: Any, *, n_bins: int, scores_kind: str = "auto") -> dict[str, float]:
    """`calibrate`'s test metrics: every default metric of `compute_metrics`, then `SELECTIVE_TEST_METRICS` (without
    `auroc-correct` where every answer is right, or every one wrong), the predictions validated once.

        >>> from adacal.calibrators.compare import calibrate_test_metrics
        >>> metrics = calibrate_test_metrics([[0.9, 0.1], [0.4, 0.6], [0.7, 0.3]], [0, 0, 1], n_bins=15)
        >>> metrics["aurc"], metrics["auroc_correct"]  # confidences 0.9 (right), 0.7 (wrong), 0.6 (wrong)
        (0.38888888888888884, 1.0)
    """
    from adacal.metrics.calibration import compute_prepared, prepare_metric_inputs

    pred, names, n_bins = prepare_metric_inputs(scores, labels, None, n_bins, scores_kind)
    defined = bool(pred.hits.any() and not pred.hits.all())
    extra = [name for name in SELECTIVE_TEST_METRICS if name not in names and (defined or name != "auroc-correct")]
    return compute_prepared(pred, (*names, *extra), n_bins)


def softmax_rows(scores: np.ndarray, scores_kind: str) -> np.ndarray:
    """Probabilities of checked scores of a known kind (probability rows as they are, softmax of logit rows)."""
    from adacal.arrays import softmax

    return scores if scores_kind == "probs" else softmax(scores)


def _metric(metrics: dict[str, float], key: str) -> float | None:
    value = metrics.get(key)
    return float(value) if value is not None else None


def check_selection(metric: Any, folds: Any) -> str:
    """The selection metric's name, after checking it and the number of folds (cheap, before any data is read)."""
    from adacal.metrics import resolve_metric_names

    if not isinstance(metric, str):
        raise InputError(f"Expected the selection metric to be a metric name, got {metric!r}.")
    names = resolve_metric_names(metric)
    if len(names) != 1:
        raise InputError(f"Expected one selection metric, got {metric!r}.")
    from adacal.metrics.selective import higher_is_better

    if higher_is_better(names[0]):  # the selection takes the lowest value
        raise InputError(f"Expected a selection metric where lower is better, got {metric!r} (higher is better): "
                         "choose nll, an ECE, aurc or risk@C.")
    check_int("folds", folds, minimum=2)
    return names[0]
