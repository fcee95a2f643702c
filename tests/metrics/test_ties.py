"""Tied confidences stay tied: rows holding the same probabilities in another order (sums differing in the last bit)
must give one confidence, equal-mass bins never cut through it, and the ECEs equal uncertainty-calibration's."""

import itertools

import numpy as np
import pytest

from adacal.arrays import to_probs
from adacal.metrics import bin_statistics, ece_debias, ece_em, ece_ew, equal_mass_edges, prepare_predictions

calibration = pytest.importorskip("calibration")  # the `uncertainty-calibration` package (Kumar et al. 2019)

VALUE_SETS = [
    (0.7, 0.2, 0.1),
    (1 / 3, 1 / 3, 1 / 3),
    (0.15, 0.35, 0.5),
    (0.6, 0.25, 0.15),
    (0.45, 0.3, 0.15, 0.1),
    (0.55, 0.15, 0.15, 0.1, 0.05),
]


def test_issue_reproducer_gives_the_documented_value():
    probs = np.array([[0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.7, 0.1, 0.2], [0.7, 0.1, 0.2]])
    labels = np.array([0, 0, 1, 1])
    assert ece_em(probs, labels, n_bins=2) == pytest.approx(0.2, abs=1e-15)
    assert ece_em(probs, labels, n_bins=2) == pytest.approx(calibration.get_ece_em(probs, labels, num_bins=2), abs=1e-15)


def tied_rows(k, seed, dtype, renormalise):
    """Rows that are permutations of a few value sets (padded with zeros to k classes), as calibrator outputs are."""
    rng = np.random.default_rng(seed)
    rows = []
    for values in (v for v in VALUE_SETS if len(v) <= k):
        padded = np.zeros(k)
        padded[: len(values)] = values
        perms = list(itertools.permutations(range(k)))
        for _ in range(60):
            rows.append(padded[list(perms[rng.integers(len(perms))])])
    probs = np.array(rows)[rng.permutation(len(rows))]
    if renormalise:
        probs = probs / probs.sum(axis=1, keepdims=True)  # what a calibrator does: sums now differ in the last bit
    probs = probs.astype(dtype)
    labels = rng.integers(0, k, size=probs.shape[0])
    return probs, labels


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("renormalise", [False, True])
def test_tied_rows_give_tied_confidences_and_equal_mass_never_splits_them(dtype, k, renormalise):
    probs, labels = tied_rows(k, 7 + k, dtype, renormalise)
    tops = probs.max(axis=1)
    pred = prepare_predictions(probs, labels)
    assert pred.assumed == "probs"
    conf = pred.confidences
    # rows with the same top probability have exactly one confidence
    for value in np.unique(tops):
        assert np.unique(conf[tops == value]).size == 1
    assert np.unique(conf).size == np.unique(tops).size
    for n_bins in (2, 3, 4, 7, 15):
        edges = equal_mass_edges(conf, n_bins)
        stats = bin_statistics(conf, pred.correct, edges=edges)
        index = np.searchsorted(edges[1:-1], conf, side="left")
        for value in np.unique(conf):
            assert np.unique(index[conf == value]).size == 1  # a tie group is in one bin
        assert stats.counts.sum() == conf.size


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("renormalise", [False, True])
def test_tied_rows_match_uncertainty_calibration(dtype, k, renormalise):
    probs, labels = tied_rows(k, 11 + k, dtype, renormalise)
    # The package bins the raw top probability; adacal divides float32 rows by their float64 sums (1 ± ~1e-8).
    tolerance = 1e-12 if dtype == np.float64 else 1e-6
    reference = probs.astype(np.float64)
    for n_bins in (2, 3, 5, 15):
        assert ece_em(probs, labels, n_bins=n_bins) == pytest.approx(
            calibration.get_ece_em(reference, labels, num_bins=n_bins), abs=tolerance
        )
        assert ece_ew(probs, labels, n_bins=n_bins) == pytest.approx(
            calibration.get_ece(reference, labels, num_bins=n_bins), abs=tolerance
        )
        assert ece_debias(probs, labels, n_bins=n_bins) == pytest.approx(
            calibration.lower_bound_scaling_ce(reference, labels, p=2, debias=True, num_bins=n_bins, mode="top-label"),
            abs=tolerance,
        )


def test_rows_within_rounding_are_used_as_given_and_others_are_normalised():
    probs = np.array([[0.7, 0.2, 0.1], [0.7, 0.1, 0.2], [0.6, 0.3, 0.09999]])
    assert probs[0].sum() != probs[1].sum()  # 1 - 2**-53 and 1.0: both within rounding
    normalised, assumed = to_probs(probs)
    assert assumed == "probs"
    np.testing.assert_array_equal(normalised[:2], probs[:2])
    np.testing.assert_array_equal(normalised[2], probs[2] / probs[2].sum())
    pred = prepare_predictions(probs, np.array([0, 1, 2]))
    np.testing.assert_array_equal(pred.confidences, normalised.max(axis=1))
    np.testing.assert_array_equal(pred.probs, normalised)
