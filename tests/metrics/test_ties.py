"""Tied confidences stay tied: rows holding the same probabilities in another order (sums differing in the last bit)
must give one confidence and equal-mass bins never cut through it. (The ECEs of such rows against
uncertainty-calibration run in test_metric_references.py, cases tied-rows-*.)"""

import numpy as np
import pytest

import calibration  # the `uncertainty-calibration` package (Kumar et al. 2019), a test dependency
from adacal.arrays import to_probs
from adacal.metrics import bin_statistics, ece_em, equal_mass_edges, prepare_predictions
from metric_tester import tied_rows


def test_issue_reproducer_gives_the_documented_value():
    probs = np.array([[0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.7, 0.1, 0.2], [0.7, 0.1, 0.2]])
    labels = np.array([0, 0, 1, 1])
    assert ece_em(probs, labels, n_bins=2) == pytest.approx(0.2, abs=1e-15)
    assert ece_em(probs, labels, n_bins=2) == pytest.approx(calibration.get_ece_em(probs, labels, num_bins=2),
                                                            abs=1e-15)


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
