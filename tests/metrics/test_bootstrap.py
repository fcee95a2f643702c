"""Bootstrap intervals: determinism by seed, intervals around the estimate, resampling equals recomputing."""

import numpy as np
import pytest

from adacal.errors import InputError, UnknownNameError
from adacal.metrics import bootstrap, compute_metrics, prepare_predictions
from adacal.metrics.calibration import METRIC_NAMES, compute_prepared


def overconfident(n=1500, k=5, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=n)
    logits = rng.normal(size=(n, k))
    hit = rng.random(n) < 0.7
    logits[hit, labels[hit]] += 3.0
    return logits * 3.0, labels  # sharpened: clearly over-confident


def test_same_seed_same_intervals_other_seed_differs():
    logits, labels = overconfident()
    first = bootstrap(logits, labels, ["ece-em", "nll"], n_resamples=60, seed=3)
    again = bootstrap(logits, labels, ["ece-em", "nll"], n_resamples=60, seed=3)
    other = bootstrap(logits, labels, ["ece-em", "nll"], n_resamples=60, seed=4)
    assert first == again
    assert first != other
    assert set(first) == {"ece_em", "nll"}
    assert set(first["ece_em"]) == {"low", "high", "std"}


def test_intervals_contain_the_point_estimate():
    logits, labels = overconfident()
    point = compute_metrics(logits, labels)
    intervals = bootstrap(logits, labels, None, n_resamples=100, seed=0)
    assert list(intervals) == list(point)
    for key, value in point.items():
        interval = intervals[key]
        assert interval["low"] <= value <= interval["high"], key
        assert interval["std"] > 0, key


def test_wider_confidence_gives_wider_interval():
    logits, labels = overconfident()
    narrow = bootstrap(logits, labels, ["ece-ew"], n_resamples=100, confidence=0.5)["ece_ew"]
    wide = bootstrap(logits, labels, ["ece-ew"], n_resamples=100, confidence=0.99)["ece_ew"]
    assert wide["low"] <= narrow["low"] and narrow["high"] <= wide["high"]


def test_resampled_predictions_equal_recomputed_metrics():
    logits, labels = overconfident(200, 4, 1)
    index = np.random.default_rng(0).integers(0, 200, size=200)
    pred = prepare_predictions(logits, labels)
    resampled = compute_prepared(pred.take(index), METRIC_NAMES, 15)
    direct = compute_metrics(logits[index], labels[index])
    for key in direct:
        assert resampled[key] == pytest.approx(direct[key], abs=1e-12), key


@pytest.mark.parametrize(
    "options, message",
    [
        ({"n_resamples": 0}, "n_resamples to be a positive integer"),
        ({"confidence": 1.0}, "confidence to be between 0 and 1"),
        ({"confidence": "high"}, "confidence to be a number"),
        ({"seed": -1}, "seed to be a non-negative integer"),
        ({"n_bins": 0}, "n_bins to be a positive integer"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(InputError, match=message):
        bootstrap(np.eye(3), [0, 1, 2], ["ece-em"], **options)


def test_unknown_metric():
    with pytest.raises(UnknownNameError, match="Did you mean 'brier'"):
        bootstrap(np.eye(3), [0, 1, 2], ["brie"], n_resamples=5)
