"""Property test: any arrays fed to any calibrator (fit, then transform) give a clean AdacalError or probabilities —
finite, in [0, 1], rows summing to 1, one row per input row — and a calibrator survives its JSON round trip."""

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from adacal.calibrators import CALIBRATORS, Calibrator, build_calibrator
from adacal.errors import AdacalError
from array_strategies import NARROW_DTYPES, score_arrays


def scores(n, k):
    return score_arrays(n, k, transposed=True, dtypes=[np.float64, *NARROW_DTYPES])


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
        # A binary model's one score per sample, (N,) or (N, 1), comes back as the two classes' probabilities.
        shape = np.shape(given_scores)
        expected = (shape[0], 2) if len(shape) == 1 or shape[1:] == (1,) else shape
        assert isinstance(probs, np.ndarray) and probs.shape == expected, (probs.shape,)
        assert np.isfinite(probs).all()
        assert (probs >= 0).all() and (probs <= 1 + 1e-12).all()
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-9)
    restored = Calibrator.from_dict(json.loads(json.dumps(calibrator.to_dict())))
    np.testing.assert_allclose(restored.transform(fit_scores), calibrator.transform(fit_scores), atol=1e-12)
