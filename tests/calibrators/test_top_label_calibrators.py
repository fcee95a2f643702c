"""Spline, histogram binning and isotonic regression: they fix the top-label confidence and keep the row valid."""

import numpy as np
import pytest
from scipy.interpolate import BSpline
from scipy.linalg import null_space
from scipy.special import softmax
from sklearn.isotonic import IsotonicRegression

from adacal.calibrators import HistogramBinning, IsotonicCalibration, SplineCalibration, build_calibrator
from adacal.calibrators import complete_top_label
from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics

TOP_LABEL = ["spline", "histogram", "isotonic"]


def top_label_ece_em(probs, labels, n_bins=15):
    """ECE with equal-mass bins of the top-class confidence, from the shared bin statistics."""
    confidences = probs.max(axis=1)
    stats = bin_statistics(confidences, probs.argmax(axis=1) == labels, n_bins=n_bins, binning="equal-mass")
    return float(np.sum(stats.weights * np.abs(stats.gaps)))


def top_scores(logits, labels):
    probs = softmax(logits, axis=1)
    return probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)


@pytest.mark.parametrize("name", TOP_LABEL)
def test_reduces_top_label_ece_on_held_out_data(overconfident, name):
    (val_logits, val_labels), (test_logits, test_labels) = overconfident
    before = top_label_ece_em(softmax(test_logits, axis=1), test_labels)
    calibrator = build_calibrator(name).fit(val_logits, val_labels)
    after = top_label_ece_em(calibrator.transform(test_logits), test_labels)
    assert before > 0.1  # the example really is miscalibrated
    assert after < 0.3 * before
    # Only the confidence changed: the predictions (and so the error) are the same.
    np.testing.assert_array_equal(calibrator.transform(test_logits).argmax(axis=1), test_logits.argmax(axis=1))


def _reference_spline_derivative(scores, hits, n_knots):
    """Natural cubic least-squares spline of the cumulative (label - score) curve, built independently: cubic
    B-splines on the same knots, restricted to the null space of S''(0) = S''(1) = 0."""
    n = scores.size
    fractile = np.linspace(0.0, 1.0, n)
    cumulative = np.cumsum(hits - scores) / n
    inner = np.linspace(0.0, 1.0, n_knots)
    t = np.r_[[0.0] * 4, inner[1:-1], [1.0] * 4]
    size = t.size - 4
    design = BSpline.design_matrix(fractile, t, 3).toarray()
    second = np.array([[BSpline(t, np.eye(size)[j], 3).derivative(2)(x) for j in range(size)] for x in (0.0, 1.0)])
    basis = null_space(second)
    coefficients = basis @ np.linalg.lstsq(design @ basis, cumulative, rcond=None)[0]
    return BSpline(t, coefficients, 3).derivative()(fractile)


def test_spline_matches_an_independent_natural_spline_fit(overconfident):
    (val_logits, val_labels), _ = overconfident
    scores, hits = top_scores(val_logits, val_labels)
    order = np.argsort(scores)
    expected = scores[order] + _reference_spline_derivative(scores[order], hits[order], 6)
    calibrator = SplineCalibration(n_knots=6).fit(val_logits, val_labels)
    np.testing.assert_allclose(calibrator.scores_, scores[order])  # continuous scores: no ties to merge
    np.testing.assert_allclose(calibrator.calibrated_, expected, atol=1e-9)


def test_spline_map_is_in_unit_interval_and_nearly_monotone(overconfident):
    (val_logits, val_labels), _ = overconfident
    calibrator = SplineCalibration().fit(val_logits, val_labels)
    grid = np.linspace(0.0, 1.0, 2001)
    mapped = calibrator.calibrate_confidences(grid)
    assert ((mapped >= 0) & (mapped <= 1)).all()
    # Smooth and increasing up to small wiggles: rank correlation with the input near 1, drops tiny.
    inside = (grid >= calibrator.scores_[0]) & (grid <= calibrator.scores_[-1])
    ranks = np.argsort(np.argsort(mapped[inside]))
    assert np.corrcoef(ranks, np.arange(ranks.size))[0, 1] > 0.95
    assert np.max(-np.diff(mapped[inside]), initial=0.0) < 0.05


def test_spline_needs_enough_samples():
    with pytest.raises(InputError, match="at least 6 validation samples"):
        SplineCalibration().fit(np.eye(3)[[0, 1, 2, 0, 1]] * 3.0, np.array([0, 1, 2, 0, 1]))


def test_histogram_maps_to_validation_bin_accuracy(overconfident):
    (val_logits, val_labels), (test_logits, _) = overconfident
    calibrator = HistogramBinning(n_bins=10).fit(val_logits, val_labels)
    scores, hits = top_scores(val_logits, val_labels)
    edges = calibrator.edges_
    assert np.isclose(np.sort(scores)[len(scores) // 10 - 1 : len(scores) // 10 + 1].mean(), edges[1])
    test_scores = softmax(test_logits, axis=1).max(axis=1)
    mapped = calibrator.calibrate_confidences(test_scores)
    for score, value in zip(test_scores[:200], mapped[:200]):  # slow, obvious loop over (lower, upper] bins
        b = min(max(np.searchsorted(edges, score, side="left") - 1, 0), 9)
        in_bin = (scores > edges[b]) & (scores <= edges[b + 1]) if b > 0 else scores <= edges[1]
        assert value == pytest.approx(hits[in_bin].mean())


def test_isotonic_matches_sklearn_predict(overconfident):
    (val_logits, val_labels), (test_logits, _) = overconfident
    scores, hits = top_scores(val_logits, val_labels)
    reference = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(scores, hits)
    calibrator = IsotonicCalibration().fit(val_logits, val_labels)
    test_scores = np.r_[softmax(test_logits, axis=1).max(axis=1), 0.0, 1.0]
    expected = reference.predict(test_scores)
    np.testing.assert_allclose(calibrator.calibrate_confidences(test_scores), expected, atol=1e-12)


# ----- how the full row is rebuilt ----------------------------------------------------------------------------------
def test_complete_top_label_shares_the_rest_in_proportion():
    probs = np.array([[0.6, 0.3, 0.1]])
    out = complete_top_label(probs, np.array([0.8]))
    np.testing.assert_allclose(out, [[0.8, 0.15, 0.05]])


def test_complete_top_label_caps_the_others_to_keep_the_argmax():
    probs = np.array([[0.45, 0.5, 0.05]])
    out = complete_top_label(probs, np.array([0.2]))  # below 1/K: clamped to 1/3 + 1e-6
    assert out[0, 1] == pytest.approx(1 / 3 + 1e-6)
    assert out.argmax() == 1
    assert out[0, 0] < out[0, 1] and out[0, 0] == pytest.approx(out[0, 1], abs=1e-8)
    assert out[0, 2] < out[0, 0]  # the order of the other classes is kept
    assert out.sum() == pytest.approx(1.0, abs=1e-15)


def test_complete_top_label_with_all_mass_on_the_top_class():
    out = complete_top_label(np.array([[0.0, 1.0, 0.0, 0.0]]), np.array([0.7]))
    np.testing.assert_allclose(out, [[0.1, 0.7, 0.1, 0.1]])


def test_complete_top_label_properties_on_random_rows():
    rng = np.random.default_rng(5)
    for k in (2, 3, 10):
        probs = rng.dirichlet(np.full(k, 0.3), size=2000)
        out = complete_top_label(probs, rng.random(2000))
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
        assert ((out >= 0) & (out <= 1)).all()
        np.testing.assert_array_equal(out.argmax(axis=1), probs.argmax(axis=1))
        top = out.max(axis=1, keepdims=True)
        assert (np.sort(out, axis=1)[:, -2] < top[:, 0]).all()  # strictly: no ties with the predicted class
