"""Hypothesis strategies for the property tests that feed arbitrary arrays to metrics and calibrators.

Importable by name from any test folder (`from array_strategies import score_arrays`): tests/conftest.py puts tests/
on sys.path.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=64)
anything = st.one_of(finite, st.just(np.nan), st.just(np.inf), st.just(-np.inf))
# What np.load may hand over: narrow floats, integers, booleans, complex numbers.
NARROW_DTYPES = [np.float32, np.float16, np.int64, np.int8, np.bool_, np.complex64]


@st.composite
def score_arrays(draw, n, k, *, transposed=False, dtypes=NARROW_DTYPES):
    """A score array of about (n, k) of one kind: logits, rows of probabilities, values in tenths (ties), another
    dtype from `dtypes`, or "weird": NaN and ±Inf allowed, shaped (n, k), (n,), (n, k, 2) or, with `transposed`,
    (k, n)."""
    kind = draw(st.sampled_from(["logits", "probs", "weird", "ties", "dtype"]))
    if kind == "weird":
        shape = draw(st.sampled_from([(n, k), (n,), (n, k, 2)] + ([(k, n)] if transposed else [])))
        return draw(arrays(np.float64, shape, elements=anything))
    values = draw(arrays(np.float64, (n, k), elements=finite))
    if kind == "probs" and n:
        values = np.abs(values) + 1e-3
        values = values / values.sum(axis=1, keepdims=True)
    if kind == "ties":
        values = np.round(values / 1e6, 1)
    if kind == "dtype":
        with np.errstate(all="ignore"):
            values = values.astype(draw(st.sampled_from(dtypes)))
    return values
