"""Property test: any array fed to any metric gives a clean InputError or a finite value in the metric's range."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from adacal.errors import InputError
from adacal.metrics import METRIC_NAMES, METRICS, compute_metrics

RANGES = {"nll": (0.0, math.inf), "brier": (0.0, 2.0)}

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=64)
anything = st.one_of(finite, st.just(np.nan), st.just(np.inf), st.just(-np.inf))
DTYPES = [np.float32, np.float16, np.int64, np.int8, np.bool_, np.complex64]


@st.composite
def score_arrays(draw):
    n = draw(st.integers(min_value=0, max_value=12))
    k = draw(st.integers(min_value=1, max_value=5) if draw(st.booleans()) and draw(st.booleans()) else st.integers(2, 5))
    kind = draw(st.sampled_from(["logits", "probs", "weird", "ties", "dtype"]))
    if kind == "weird":
        shape = draw(st.sampled_from([(n, k), (n,), (n, k, 2)]))
        scores = draw(arrays(np.float64, shape, elements=anything))
    else:
        scores = draw(arrays(np.float64, (n, k), elements=finite))
        if kind == "probs" and n:
            scores = np.abs(scores) + 1e-3
            scores = scores / scores.sum(axis=1, keepdims=True)
        if kind == "ties":
            scores = np.round(scores / 1e6, 1)
        if kind == "dtype":  # what np.load may hand over: narrow floats, integers, booleans, complex numbers
            with np.errstate(all="ignore"):
                scores = scores.astype(draw(st.sampled_from(DTYPES)))
    valid = draw(st.integers(0, 9)) < 7
    length = n if valid else draw(st.sampled_from([n, n + 1]))
    labels = draw(arrays(np.int64, length, elements=st.integers(0, k - 1) if valid else st.integers(-1, k)))
    if draw(st.integers(0, 4)) == 0:
        labels = labels.astype(draw(st.sampled_from([np.float64, np.int32, np.uint8, np.bool_])))
    return scores, labels


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=score_arrays(), n_bins=st.sampled_from([1, 3, 15]))
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
