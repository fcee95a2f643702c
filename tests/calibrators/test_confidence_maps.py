"""Confidence maps (adacal/calibrators/confidence_maps.py) and the --val-fraction split (adacal/calibrators/holdout.py):
hand-worked isotonic and histogram maps, Platt scaling on the confidence against scikit-learn's unpenalised logistic
regression, JSON round trips, refusals; the split's reproducibility, partition and stratification."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adacal.calibrators.confidence_maps import (
    CONFIDENCE_MAPS, ConfidenceMap, HistogramConfidenceMap, IdentityConfidenceMap, IsotonicConfidenceMap,
    PlattConfidenceMap, build_confidence_map, confidence_map_methods, load_confidence_map, load_fitted,
    save_confidence_map,
)
from adacal.calibrators.holdout import check_val_fraction, holdout_split
from adacal.errors import InputError

RNG = np.random.default_rng(7)


def test_isotonic_by_hand():
    """Pool-adjacent-violators on 0, 1, 0, 1: the middle pair pools to 0.5; between thresholds it interpolates and
    outside the fitted range it is clipped."""
    fitted = IsotonicConfidenceMap().fit([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1])
    assert fitted.thresholds_.tolist() == [0.2, 0.4, 0.6, 0.8]
    assert fitted.values_.tolist() == [0.0, 0.5, 0.5, 1.0]
    np.testing.assert_allclose(fitted.transform([0.1, 0.3, 0.5, 0.7, 0.9]), [0.0, 0.25, 0.5, 0.75, 1.0])


def test_histogram_by_hand():
    """Two equal-mass bins of six confidences cut between 0.3 and 0.7: 1 of 3 right below, 2 of 3 above."""
    fitted = HistogramConfidenceMap(n_bins=2).fit([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0, 0, 1, 1, 1, 0])
    np.testing.assert_allclose(fitted.bin_values_, [1 / 3, 2 / 3])
    assert fitted.bin_counts_.tolist() == [3, 3]
    np.testing.assert_allclose(fitted.transform([0.05, 0.3, 0.69, 0.71, 1.0]), [1 / 3, 1 / 3, 2 / 3, 2 / 3, 2 / 3])


@pytest.mark.parametrize("low, high", [(0.3, 1.0), (1e-9, 1 - 1e-9), (0.5, 0.99)])
def test_platt_equals_unpenalised_logistic_regression_on_the_logit(low, high):
    from sklearn.linear_model import LogisticRegression

    conf = RNG.uniform(low, high, 800)
    correct = RNG.random(800) < conf ** 2
    fitted = PlattConfidenceMap().fit(conf, correct)
    x = np.log(conf) - np.log1p(-conf)
    reference = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x[:, None], correct)
    assert fitted.converged_
    np.testing.assert_allclose([fitted.slope_, fitted.intercept_], [reference.coef_[0, 0], reference.intercept_[0]],
                               atol=1e-6)
    new = RNG.uniform(low, high, 50)
    np.testing.assert_allclose(fitted.transform(new),
                               reference.predict_proba((np.log(new) - np.log1p(-new))[:, None])[:, 1], atol=1e-6)


def test_platt_on_separated_answers_stops_finite_and_says_so():
    fitted = PlattConfidenceMap().fit([0.2, 0.3, 0.8, 0.9], [0, 0, 1, 1])
    assert not fitted.converged_
    out = fitted.transform([0.1, 0.5, 0.95])
    assert np.isfinite(out).all() and out[0] < 0.01 and out[2] > 0.99


def test_identity_and_every_map_round_trip_through_json(tmp_path):
    conf = RNG.uniform(0.2, 1.0, 300)
    correct = RNG.random(300) < conf
    new = RNG.uniform(0.0, 1.0, 40)
    assert confidence_map_methods("all") == list(CONFIDENCE_MAPS)
    for name in CONFIDENCE_MAPS:
        fitted = build_confidence_map(name, n_bins=7).fit(conf, correct)
        out = fitted.transform(new)
        assert out.shape == (40,) and (out >= 0).all() and (out <= 1).all()
        again = ConfidenceMap.from_dict(json.loads(json.dumps(fitted.to_dict())))
        np.testing.assert_array_equal(again.transform(new), out)
        loaded = load_confidence_map(save_confidence_map(fitted, tmp_path / f"{name}.json"))
        np.testing.assert_array_equal(loaded.transform(new), out)
        assert type(load_fitted(tmp_path / f"{name}.json")) is type(fitted)
    np.testing.assert_array_equal(IdentityConfidenceMap().fit(conf, correct).transform(new), new)


def test_refusals(tmp_path):
    from adacal.calibrators import TemperatureScaling, load_calibrator, save_calibrator

    with pytest.raises(InputError, match="to be fitted"):
        PlattConfidenceMap().transform([0.5])
    with pytest.raises(InputError, match="not class scores"):
        PlattConfidenceMap().fit(RNG.random((10, 3)), RNG.integers(0, 2, 10))
    with pytest.raises(InputError, match="calibration method for top-label confidences"):
        confidence_map_methods("temperature")
    save_confidence_map(IsotonicConfidenceMap().fit([0.2, 0.8], [0, 1]), tmp_path / "map.json")
    with pytest.raises(InputError, match="got a confidence map"):
        load_calibrator(tmp_path / "map.json")
    save_calibrator(TemperatureScaling().fit(np.array([[2.0, 0.0]] * 4), [0, 0, 0, 1]), tmp_path / "t.json")
    with pytest.raises(InputError, match="got a calibrator of class scores"):
        load_confidence_map(tmp_path / "t.json")
    with pytest.raises(InputError, match="Expected a confidence map"):
        ConfidenceMap.from_dict({"method": "platt"})
    bad = IsotonicConfidenceMap().fit([0.2, 0.8], [0, 1]).to_dict()
    bad["params"]["values"] = [0.9, 0.1]
    with pytest.raises(InputError, match="valid params for the 'isotonic'"):
        ConfidenceMap.from_dict(bad)


def test_the_split_is_reproducible_a_partition_and_stratified():
    for trial in range(20):
        n = int(RNG.integers(2, 400))
        strata = RNG.integers(0, int(RNG.integers(1, 5)), n)
        fraction = float(RNG.uniform(0.05, 0.95))
        val, test = holdout_split(strata, fraction, seed=trial)
        again = holdout_split(strata, fraction, seed=trial)
        np.testing.assert_array_equal(val, again[0])
        np.testing.assert_array_equal(test, again[1])
        assert np.array_equal(np.sort(np.concatenate([val, test])), np.arange(n))
        assert val.size == min(max(round(fraction * n), 1), n - 1) and test.size > 0
        target = val.size
        for stratum in np.unique(strata):
            count = int((strata == stratum).sum())
            share = count * target / n  # each stratum's exact share of the validation rows
            assert np.floor(share) <= int((strata[val] == stratum).sum()) <= np.ceil(share), (trial, stratum)
    strata = np.repeat([0, 1], 50)
    assert not np.array_equal(holdout_split(strata, 0.5, seed=0)[0], holdout_split(strata, 0.5, seed=1)[0])


@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.2, float("nan"), True, "0.5"])
def test_val_fraction_out_of_range_is_refused(fraction):
    with pytest.raises(InputError, match="--val-fraction to be a number between 0 and 1"):
        check_val_fraction(fraction)


def test_a_split_needs_two_rows():
    with pytest.raises(InputError, match="at least 2 rows"):
        holdout_split([1], 0.5)
