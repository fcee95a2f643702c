"""Calibration tests with p-values (adacal.metrics.calibration_tests): against MAPIE's functions on the same inputs,
against slow transcriptions, and the resampling test's known null behaviour — p-values uniform on data drawn
calibrated, small on data drawn miscalibrated, and the uniformity check rejecting a deliberately wrong test."""

import math

import numpy as np
import pytest
from scipy import stats

from adacal.errors import InputError
from adacal.metrics import bin_statistics, calibration_error, ece_em, prepare_predictions, top_label_metrics
from adacal.metrics.calibration_tests import (
    TEST_NAMES,
    brownian_range_sf,
    calibration_tests,
    consistency_test,
    ks_test,
    kuiper_test,
    max_brownian_sf,
    run_calibration_tests,
    spiegelhalter_test,
)
from adacal.metrics.confidences import prepare_confidences

mapie = pytest.importorskip("mapie.metrics.calibration",
                            reason="MAPIE is the peer of the KS, Kuiper and Spiegelhalter tests")


def _cases():
    """Tie-free (confidence, correct) sets: calibrated, over-confident, under-confident, tiny."""
    rng = np.random.default_rng(3)
    out = []
    for n, truth in ((400, lambda c: c), (300, lambda c: c**2), (250, lambda c: np.sqrt(c)), (7, lambda c: c)):
        conf = rng.uniform(0.3, 1.0, n)
        out.append((conf, (rng.random(n) < truth(conf)).astype(int)))
    return out


@pytest.fixture
def no_jitter(monkeypatch):
    """MAPIE adds a seeded relative 1e-8 jitter to the scores before sorting (to break ties) but computes σ from the
    scores as given, which moves its statistics by ~1e-9; on tie-free scores the jitter changes no order, so with it
    disabled MAPIE computes exactly the published statistic."""
    monkeypatch.setattr(mapie, "add_jitter", lambda x, **_: np.asarray(x, dtype=float))


@pytest.mark.parametrize("case", range(4))
def test_statistics_equal_mapie(case, no_jitter):
    conf, correct = _cases()[case]
    tests = calibration_tests(conf, correct, ["spiegelhalter", "ks", "kuiper"])
    assert tests["ks"].statistic == pytest.approx(mapie.kolmogorov_smirnov_statistic(correct, conf), abs=1e-10)
    walk = np.cumsum((correct - conf)[np.argsort(conf)]) / len(conf)
    if walk.min() < 0 < walk.max():  # the walk crosses 0: its start D_0 = 0 changes no range
        assert tests["kuiper"].statistic == pytest.approx(mapie.kuiper_statistic(correct, conf), abs=1e-10)
        assert tests["kuiper"].p_value == pytest.approx(mapie.kuiper_p_value(correct, conf), abs=1e-9)
    else:  # one-sided: MAPIE's range leaves out D_0 = 0 and falls below KS; ours is the range from 0, = KS
        assert tests["kuiper"].statistic == pytest.approx(tests["ks"].statistic, abs=1e-12)
        assert tests["kuiper"].statistic > mapie.kuiper_statistic(correct, conf)
        assert tests["kuiper"].p_value == pytest.approx(brownian_range_sf(tests["kuiper"].statistic), abs=1e-15)
    assert tests["spiegelhalter"].statistic == pytest.approx(mapie.spiegelhalter_statistic(correct, conf), abs=1e-10)
    # p-values as MAPIE defines them: 1 − CDF of the Brownian maximum / range (its series is truncated at 1e-8, so
    # 1e-9 is as close as its p-values are to the exact ones); Spiegelhalter's one-sided 1 − Φ(Z), made two-sided.
    assert tests["ks"].p_value == pytest.approx(mapie.kolmogorov_smirnov_p_value(correct, conf), abs=1e-9)
    one_sided = mapie.spiegelhalter_p_value(correct, conf)
    assert tests["spiegelhalter"].p_value == pytest.approx(2 * min(one_sided, 1 - one_sided), abs=1e-12)
    assert all(test.n == len(conf) and test.resamples == 0 for test in tests.values())


def test_mapie_with_its_jitter_agrees_to_its_jitter():
    conf, correct = _cases()[1]
    assert ks_test(conf, correct).statistic == pytest.approx(mapie.kolmogorov_smirnov_statistic(correct, conf),
                                                             rel=1e-6)
    assert mapie.kuiper_statistic(correct, conf) <= kuiper_test(conf, correct).statistic


@pytest.mark.parametrize("x", [0.2, 0.5, 0.8, 1.0, 1.3, 2.0, 3.0, 5.0])
def test_null_distributions_equal_mapie_series(x):
    assert max_brownian_sf(x) == pytest.approx(1 - mapie.kolmogorov_smirnov_cdf(x), abs=1e-10)
    assert brownian_range_sf(x) == pytest.approx(1 - mapie.kuiper_cdf(x), abs=1e-10)


def test_null_distributions_tail_and_limits():
    # P(max|B| > x) ~ 4 Φ̄(x) in the far tail, where 1 − CDF is 0 in double precision.
    assert max_brownian_sf(12.0) == pytest.approx(4 * 0.5 * math.erfc(12 / math.sqrt(2)), rel=1e-6)
    assert max_brownian_sf(0.0) == brownian_range_sf(0.0) == 1.0
    grid = np.linspace(0.05, 6, 200)
    for sf in (max_brownian_sf, brownian_range_sf):
        values = np.array([sf(x) for x in grid])
        assert np.all(np.diff(values) <= 1e-15) and values.min() >= 0 and values.max() <= 1
    # The range of B is at least its largest excursion from 0: P(R > x) ≥ P(max|B| > x).
    assert all(brownian_range_sf(x) >= max_brownian_sf(x) - 1e-12 for x in grid)


def _slow_walk_statistics(conf, correct):
    """KS and Kuiper by a loop: group tied confidences, walk the cumulative differences group by group."""
    n = len(conf)
    walk, total = [], 0.0
    for value in sorted(set(conf.tolist())):
        members = conf == value
        total += (correct[members].sum() - conf[members].sum()) / n
        walk.append(total)
    sigma = math.sqrt(sum(c * (1 - c) for c in conf)) / n
    walk = [0.0, *walk]  # the walk starts at D_0 = 0
    return max(abs(w) for w in walk) / sigma, (max(walk) - min(walk)) / sigma


def test_ties_are_one_step_whatever_their_order():
    rng = np.random.default_rng(5)
    conf = rng.choice([0.55, 0.7, 0.85, 0.95], size=300)
    correct = (rng.random(300) < conf).astype(int)
    ks, kuiper = _slow_walk_statistics(conf, correct)
    assert ks_test(conf, correct).statistic == pytest.approx(ks, abs=1e-12)
    assert kuiper_test(conf, correct).statistic == pytest.approx(kuiper, abs=1e-12)
    order = rng.permutation(300)
    for name in TEST_NAMES:
        before = calibration_tests(conf, correct, name, n_resamples=99)[name]
        after = calibration_tests(conf[order], correct[order], name, n_resamples=99)[name]
        assert after.statistic == pytest.approx(before.statistic, abs=1e-12)
        assert after.p_value == pytest.approx(before.p_value, abs=1e-12)


def _slow_consistency(conf, correct, binning, n_bins, n_resamples, seed):
    """The resampling test as the papers write it: one resample at a time, ECE by adacal's bin_statistics."""
    ece = calibration_error(bin_statistics(conf, correct, n_bins=n_bins, binning=binning))
    rng = np.random.default_rng(seed)
    order = np.argsort(conf, kind="stable")  # the module draws along the sorted confidences
    sorted_conf = conf[order]
    at_least = 0
    for _ in range(n_resamples):
        star = (rng.random(len(conf)) < sorted_conf).astype(float)
        ece_star = calibration_error(bin_statistics(sorted_conf, star, n_bins=n_bins, binning=binning))
        at_least += ece_star >= ece - 1e-12
    return ece, (1 + at_least) / (1 + n_resamples)


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_consistency_test_equals_slow_loop_and_adacal_ece(binning):
    conf, correct = _cases()[1]
    test = consistency_test(conf, correct, binning=binning, n_bins=10, n_resamples=300, seed=11)
    ece, p = _slow_consistency(conf, correct, binning, 10, 300, 11)
    assert test.statistic == pytest.approx(ece, abs=1e-12)
    assert test.p_value == pytest.approx(p, abs=1e-12)
    assert test.resamples == 300 and test.n == len(conf)
    key = "ece_em" if binning == "equal-mass" else "ece_ew"
    assert test.statistic == pytest.approx(top_label_metrics(conf, correct, n_bins=10)[key], abs=1e-12)


def test_consistency_is_seeded_and_chunk_free():
    conf, correct = _cases()[0]
    pred = prepare_confidences(conf, correct)
    whole = run_calibration_tests(pred, ["ece-em", "ece-ew"], n_resamples=250, seed=4)
    chunked = run_calibration_tests(pred, ["ece-em", "ece-ew"], n_resamples=250, seed=4, memory=9 * 400 * 7)
    assert whole == chunked
    other = run_calibration_tests(pred, ["ece-em"], n_resamples=250, seed=5)["ece-em"]
    assert other.statistic == whole["ece-em"].statistic


def test_class_scores_and_confidences_give_the_same_tests():
    rng = np.random.default_rng(9)
    logits = rng.normal(size=(200, 5)) * 2
    labels = rng.integers(0, 5, 200)
    pred = prepare_predictions(logits, labels)
    from_scores = run_calibration_tests(pred, n_resamples=199, seed=1)
    from_pairs = calibration_tests(pred.confidences, pred.correct, n_resamples=199, seed=1)
    assert from_scores == from_pairs
    assert from_scores["ece-em"].statistic == pytest.approx(ece_em(logits, labels), abs=1e-12)


def _calibrated(rng, n, truth=lambda c: c):
    conf = rng.uniform(0.5, 1.0, n)
    return conf, (rng.random(n) < truth(conf)).astype(int)


def _null_p_values(test, n_sets=200, n=150, seed=0, truth=lambda c: c):
    rng = np.random.default_rng(seed)
    return np.array([test(*_calibrated(rng, n, truth), seed=i) for i in range(n_sets)])


def _looks_uniform(p_values):
    """KS against U(0, 1) not rejected at 0.01, and the share below 0.05 inside its binomial 99.9 % band."""
    n = len(p_values)
    low, high = stats.binom.ppf([0.0005, 0.9995], n, 0.05)
    below = int(np.sum(p_values < 0.05))
    return stats.kstest(p_values, "uniform").pvalue > 0.01 and low <= below <= high


def _resampling_p(binning):
    def test(conf, correct, seed):
        return consistency_test(conf, correct, binning=binning, n_bins=10, n_resamples=199, seed=seed).p_value
    return test


@pytest.mark.parametrize("binning", ["equal-mass", "equal-width"])
def test_resampling_p_values_are_uniform_when_calibrated_and_small_when_not(binning):
    test = _resampling_p(binning)
    assert _looks_uniform(_null_p_values(test))
    # Drawn miscalibrated: true P(correct | c) = c², over-confident by up to 0.25.
    p_off = _null_p_values(test, n_sets=40, truth=lambda c: c**2)
    assert np.median(p_off) < 0.01 and np.mean(p_off < 0.05) >= 0.9


def test_uniformity_check_rejects_a_wrong_test():
    """A test whose null draws come from the wrong distribution (labels drawn with p = c² instead of c: the null of
    an over-confident model) is caught by the same uniformity check: its p-values on calibrated data are not
    uniform. The check has power, so its passing above means something."""

    def wrong(conf, correct, seed):
        rng = np.random.default_rng(seed)
        ece = calibration_error(bin_statistics(conf, correct, n_bins=10, binning="equal-mass"))
        stars = [calibration_error(bin_statistics(conf, (rng.random(len(conf)) < conf**2).astype(float), n_bins=10,
                                                  binning="equal-mass")) for _ in range(49)]
        return (1 + sum(s >= ece for s in stars)) / 50

    assert not _looks_uniform(_null_p_values(wrong, n_sets=60))


def test_asymptotic_tests_hold_their_level_when_calibrated():
    rng = np.random.default_rng(1)
    p = {name: [] for name in ("spiegelhalter", "ks", "kuiper")}
    for _ in range(200):
        conf, correct = _calibrated(rng, 300)
        for name, test in calibration_tests(conf, correct, list(p)).items():
            p[name].append(test.p_value)
    assert _looks_uniform(np.array(p["spiegelhalter"]))
    high = stats.binom.ppf(0.9995, 200, 0.05)
    for name in ("ks", "kuiper"):  # asymptotic in N: at most the nominal share below 0.05
        assert np.sum(np.array(p[name]) < 0.05) <= high
    conf, correct = _calibrated(rng, 300, truth=lambda c: c**2)
    assert all(test.p_value < 1e-3 for test in calibration_tests(conf, correct, list(p)).values())


def test_undefined_and_bad_inputs():
    certain = calibration_tests([1.0, 1.0, 0.0], [1, 0, 0], ["spiegelhalter", "ks", "kuiper"])
    assert all(test.statistic is None and test.p_value is None for test in certain.values())
    assert spiegelhalter_test([0.5, 0.5], [1, 0]).p_value is None
    with pytest.raises(InputError, match="n_resamples"):
        consistency_test([0.6, 0.7], [1, 0], n_resamples=0)
    with pytest.raises(InputError, match="calibration test names"):
        calibration_tests([0.6], [1], "hosmer")
    with pytest.raises(InputError, match="binning"):
        consistency_test([0.6], [1], binning="quantile")
    with pytest.raises(InputError, match="at least one"):
        calibration_tests([], [])


def test_draws_follow_the_memory_budget(monkeypatch):
    """ADACAL_MEMORY_LIMIT (adacal.memory) caps a chunk of draws; the p-values stay those of one chunk."""
    from adacal.metrics import calibration_tests as module

    conf, correct = _cases()[0]
    pred = prepare_confidences(conf, correct)
    whole = run_calibration_tests(pred, ["ece-em"], n_resamples=120, seed=2, memory=1 << 30)
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(4 * 9 * 400 * 5))  # a quarter of it: 5 rows of 400 draws
    assert module._chunk_rows(400, None) == 5
    assert run_calibration_tests(pred, ["ece-em"], n_resamples=120, seed=2) == whole
