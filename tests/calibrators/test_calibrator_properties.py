"""Property test: any arrays fed to any calibrator (fit, then transform) give a clean AdacalError or probabilities —
finite, in [0, 1], rows summing to 1, one row per input row — and a calibrator survives its JSON round trip."""

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from adacal.calibrators import CALIBRATORS, Calibrator, build_calibrator
from adacal.errors import AdacalError

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=64)
anything = st.one_of(finite, st.just(np.nan), st.just(np.inf), st.just(-np.inf))
DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int8, np.bool_, np.complex64]


@st.composite
def scores(draw, n, k):
    kind = draw(st.sampled_from(["logits", "probs", "weird", "ties", "dtype"]))
    if kind == "weird":
        shape = draw(st.sampled_from([(n, k), (n,), (n, k, 2), (k, n)]))
        return draw(arrays(np.float64, shape, elements=anything))
    values = draw(arrays(np.float64, (n, k), elements=finite))
    if kind == "probs" and n:
        values = np.abs(values) + 1e-3
        values = values / values.sum(axis=1, keepdims=True)
    if kind == "ties":
        values = np.round(values / 1e6, 1)
    if kind == "dtype":
        with np.errstate(all="ignore"):
            values = values.astype(draw(st.sampled_from(DTYPES)))
    return values


@st.composite
def problems(draw):
    n = draw(st.integers(min_value=0, max_value=14))
    k = draw(st.sampled_from([1, 2, 3, 5]))
    fit_scores = draw(scores(n, k))
    valid = draw(st.integers(0, 9)) < 7
    length = n if valid else draw(st.sampled_from([max(n - 1, 0), n + 1]))
    labels = draw(arrays(np.int64, length, elements=st.integers(0, k - 1) if valid else st.integers(-1, k)))
    if draw(st.booleans()):
        labels = labels.astype(draw(st.sampled_from([np.float64, np.int32, np.uint8])))
    m = draw(st.integers(min_value=0, max_value=6))
    k_new = k if draw(st.integers(0, 9)) < 8 else draw(st.sampled_from([1, 2, 4]))
    return fit_scores, labels, draw(scores(m, k_new))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem=problems(), name=st.sampled_from(CALIBRATORS.names()))
def test_calibrators_fail_cleanly_or_return_probabilities(problem, name):
    fit_scores, labels, new_scores = problem
    calibrator = build_calibrator(name)
    try:
        calibrator.fit(fit_scores, labels)
    except AdacalError:
        return
    for given_scores in (fit_scores, new_scores):
        try:
            probs = calibrator.transform(given_scores)
        except AdacalError:
            assert given_scores is new_scores, "transform refused the scores fit accepted"
            continue
        assert isinstance(probs, np.ndarray) and probs.shape == np.shape(given_scores), (probs.shape,)
        assert np.isfinite(probs).all()
        assert (probs >= 0).all() and (probs <= 1 + 1e-12).all()
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-9)
    restored = Calibrator.from_dict(json.loads(json.dumps(calibrator.to_dict())))
    np.testing.assert_allclose(restored.transform(fit_scores), calibrator.transform(fit_scores), atol=1e-12)
