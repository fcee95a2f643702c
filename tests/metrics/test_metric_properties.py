"""Property test: any array fed to any metric gives a clean InputError or a finite value in the metric's range."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from adacal.errors import InputError
from adacal.metrics import METRIC_NAMES, METRICS, compute_metrics
from array_strategies import score_arrays

RANGES = {"nll": (0.0, math.inf), "brier": (0.0, 2.0)}


@st.composite
def score_arrays_and_labels(draw):
    n = draw(st.integers(min_value=0, max_value=12))
    k = draw(st.integers(min_value=1, max_value=5) if draw(st.booleans()) and draw(st.booleans())
             else st.integers(2, 5))
    scores = draw(score_arrays(n, k))
    valid = draw(st.integers(0, 9)) < 7
    length = n if valid else draw(st.sampled_from([n, n + 1]))
    labels = draw(arrays(np.int64, length, elements=st.integers(0, k - 1) if valid else st.integers(-1, k)))
    if draw(st.integers(0, 4)) == 0:
        labels = labels.astype(draw(st.sampled_from([np.float64, np.int32, np.uint8, np.bool_])))
    return scores, labels


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=score_arrays_and_labels(), n_bins=st.sampled_from([1, 3, 15]))
def test_metrics_raise_input_error_or_return_finite_values_in_range(data, n_bins):
    scores, labels = data
    try:
        values = compute_metrics(scores, labels, n_bins=n_bins)
    except InputError:
        for name in METRIC_NAMES:  # each metric alone must fail cleanly too
            try:
                METRICS.get(name)(scores, labels, n_bins=n_bins)
            except InputError:
                continue
            raise AssertionError(f"{name} accepted what compute_metrics rejected")
        return
    for key, value in values.items():
        low, high = RANGES.get(key, (0.0, 1.0))
        assert isinstance(value, float) and math.isfinite(value), key
        assert low - 1e-12 <= value <= high + 1e-12, (key, value)
