"""Choosing a calibrator by cross-validation inside the validation split (compare_calibrators)."""

import numpy as np
import pytest
from calibration import get_ece_em
from scipy.special import softmax

from adacal.calibrators import TemperatureScaling, compare_calibrators
from adacal.calibrators.compare import cross_validate, stratified_folds
from adacal.errors import InputError, UnknownNameError


@pytest.mark.parametrize("n_folds", [2, 5, 7])
def test_stratified_folds_partition_and_balance(n_folds):
    rng = np.random.default_rng(0)
    labels = np.concatenate([np.zeros(40), np.ones(23), np.full(3, 2)]).astype(np.int64)  # class 2 < n_folds
    labels = labels[rng.permutation(labels.size)]
    folds = stratified_folds(labels, n_folds, seed=4)
    joined = np.concatenate(folds)
    assert len(folds) == n_folds and np.array_equal(np.sort(joined), np.arange(labels.size))  # a partition
    sizes = [fold.size for fold in folds]
    assert max(sizes) - min(sizes) <= 1
    for label in range(3):
        counts = [int(np.sum(labels[fold] == label)) for fold in folds]
        assert max(counts) - min(counts) <= 1  # every class spread as evenly as its count allows
    again = stratified_folds(labels, n_folds, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(folds, again))
    other = stratified_folds(labels, n_folds, seed=5)
    assert not all(np.array_equal(a, b) for a, b in zip(folds, other))


def test_cross_validation_score_matches_a_hand_loop(overconfident):
    """Temperature scaling refitted on k − 1 folds and scored by the published ECE-EM on the held-out fold."""
    (logits, labels), _ = overconfident
    logits, labels = logits[:1500], labels[:1500]
    folds = stratified_folds(labels, 4, seed=0)
    ours = cross_validate(TemperatureScaling(), logits, labels, folds, metric="ece-em", n_bins=15)
    expected = []
    for held_out in folds:
        train = np.setdiff1d(np.arange(labels.size), held_out)
        t = TemperatureScaling().fit(logits[train], labels[train]).temperature_
        expected.append(get_ece_em(softmax(logits[held_out] / t, axis=1), labels[held_out], num_bins=15))
    np.testing.assert_allclose(ours, expected, atol=1e-9)


def test_selection_uses_validation_only_and_reports_progress(overconfident):
    (val_logits, val_labels), (test_logits, test_labels) = overconfident
    val_logits, val_labels = val_logits[:600], val_labels[:600]
    methods = ["temperature", "histogram", "vector-scaling"]
    calls = []
    first = compare_calibrators(val_logits, val_labels, test_logits, test_labels, methods=methods, folds=3,
                                progress=lambda done, total, what: calls.append((done, total, what)))
    assert [c[:2] for c in calls] == [(done, 12) for done in range(1, 13)]
    assert calls[0][2] == "temperature: fold 1/3" and calls[-1][2] == "vector-scaling: fit on all validation data"
    rng = np.random.default_rng(9)
    second = compare_calibrators(val_logits, val_labels, rng.normal(size=(50, 10)), rng.integers(0, 10, 50),
                                 methods=methods, folds=3)
    assert first.best == second.best == first.results["selection"]["method"]
    assert first.results["selection"]["cv_scores"] == second.results["selection"]["cv_scores"]
    scores = first.results["selection"]["cv_scores"]
    assert first.best == min(scores, key=scores.get)
    assert list(first.fitted) == list(first.results["calibrators"]) == sorted(scores, key=scores.get)
    # The over-confident logits need T ≈ 2.5: temperature scaling beats doing histogram binning on 400 samples.
    assert scores["temperature"] < scores["histogram"]


def test_selection_options_are_checked(overconfident):
    (val_logits, val_labels), (test_logits, test_labels) = overconfident
    with pytest.raises(InputError, match="Expected folds to be an integer >= 2, got 1"):
        compare_calibrators(val_logits, val_labels, test_logits, test_labels, folds=1)
    with pytest.raises(UnknownNameError, match="Unknown metric"):
        compare_calibrators(val_logits, val_labels, test_logits, test_labels, metric="accuracy")
    with pytest.raises(InputError, match="Expected at least 5 validation samples for 5-fold selection, got 3"):
        compare_calibrators(val_logits[:3], val_labels[:3], test_logits, test_labels, methods=["temperature", "ets"])


def _extreme_logits(n=300, k=4, seed=0):
    """Finite logits near the float64 limit: vector scaling's linear map overflows on them, temperature scaling
    does not (its NLL is infinite at small T, which the search treats as out of reach)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 1e307
    labels = np.where(rng.random(n) < 0.8, logits.argmax(axis=1), 0)
    return logits, labels


def test_a_method_that_cannot_be_fitted_is_left_out_and_named(recwarn):
    import warnings

    warnings.simplefilter("always")
    logits, labels = _extreme_logits()
    comparison = compare_calibrators(logits, labels, logits, labels, methods=["temperature", "vector-scaling"],
                                     folds=3)
    results = comparison.results
    assert results["best"] == "temperature" and list(results["calibrators"]) == ["temperature"]
    assert "vector-scaling gave NaN or Inf probabilities" in results["selection"]["errors"]["vector-scaling"]
    assert np.isfinite(results["calibrators"]["temperature"]["test_post"]["nll"])
    # The failed fits' overflow warnings are dropped: the report names the failure.
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in recwarn]


def test_a_single_method_that_cannot_be_fitted_is_the_error():
    from adacal.errors import AdacalError

    logits, labels = _extreme_logits()
    with pytest.raises(AdacalError, match=r"vector-scaling gave NaN or Inf probabilities for \d+ of 300 samples"):
        compare_calibrators(logits, labels, logits, labels, methods=["vector-scaling"])
