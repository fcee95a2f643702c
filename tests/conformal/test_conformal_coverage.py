"""coverage_report against hand counts, and its Clopper–Pearson interval against the binomial tails that define it."""

import numpy as np
import pytest
from scipy import stats

from adacal.conformal import clopper_pearson, coverage_report
from adacal.errors import InputError


def test_a_hand_counted_report():
    sets = np.array([
        [True, False, False],   # label 0: covered, size 1
        [True, True, False],    # label 1: covered, size 2
        [False, False, False],  # label 0: missed, size 0
        [False, True, True],    # label 0: missed, size 2
        [True, True, True],     # label 2: covered, size 3
        [False, True, False],   # label 1: covered, size 1
    ])
    report = coverage_report(sets, [0, 1, 0, 0, 2, 1])
    assert report["n"] == 6 and report["coverage"] == pytest.approx(4 / 6)
    assert report["mean_set_size"] == pytest.approx(9 / 6) and report["median_set_size"] == 1.5
    assert report["size_distribution"] == {"0": 1, "1": 2, "2": 2, "3": 1}
    assert report["coverage_by_size"] == {"0": {"n": 1, "coverage": 0.0}, "1": {"n": 2, "coverage": 1.0},
                                          "2": {"n": 2, "coverage": 0.5}, "3": {"n": 1, "coverage": 1.0}}
    assert report["coverage_by_class"] == {"0": {"n": 3, "coverage": pytest.approx(1 / 3)},
                                           "1": {"n": 2, "coverage": 1.0}, "2": {"n": 1, "coverage": 1.0}}
    assert report["worst_class"] == {"class": 0, "n": 3, "coverage": pytest.approx(1 / 3)}
    assert report["singleton_rate"] == pytest.approx(2 / 6) and report["empty_rate"] == pytest.approx(1 / 6)
    low, high = report["coverage_interval"]
    assert low < 4 / 6 < high


def test_a_class_without_rows_has_no_coverage_and_is_not_the_worst():
    report = coverage_report(np.array([[True, False, False], [False, True, False]]), [0, 1])
    assert report["coverage_by_class"]["2"] == {"n": 0, "coverage": None}
    assert report["worst_class"]["class"] in (0, 1)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (9, 10), (10, 10), (450, 500), (1, 1)])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_clopper_pearson_ends_are_where_the_binomial_tails_reach_the_level(k, n, confidence):
    low, high = clopper_pearson(k, n, confidence=confidence)
    tail = (1 - confidence) / 2
    # the defining equations: P(X >= k | low) = tail, P(X <= k | high) = tail
    if k == 0:
        assert low == 0.0
    else:
        assert stats.binom.sf(k - 1, n, low) == pytest.approx(tail, rel=1e-6)
    if k == n:
        assert high == 1.0
    else:
        assert stats.binom.cdf(k, n, high) == pytest.approx(tail, rel=1e-6)


def test_the_report_is_json_and_the_interval_covers_the_truth_often_enough():
    import json

    rng = np.random.default_rng(0)
    inside = 0
    for _ in range(400):
        labels = rng.integers(0, 3, size=50)
        sets = np.zeros((50, 3), dtype=bool)
        covered = rng.random(50) < 0.8
        sets[np.arange(50), labels] = covered
        report = coverage_report(sets, labels)
        low, high = report["coverage_interval"]
        inside += low <= 0.8 <= high
    json.dumps(report)
    assert inside / 400 >= 0.93  # an exact interval covers at least its level (0.95), up to the simulation's noise


def test_bad_sets_are_refused():
    with pytest.raises(InputError, match="boolean"):
        coverage_report(np.ones((2, 3)), [0, 1])
    with pytest.raises(InputError, match="at least one row"):
        coverage_report(np.zeros((0, 3), dtype=bool), [])
    with pytest.raises(InputError, match="labels"):
        coverage_report(np.ones((2, 3), dtype=bool), [0, 3])
    with pytest.raises(InputError, match="confidence"):
        coverage_report(np.ones((2, 3), dtype=bool), [0, 1], confidence=1.5)
