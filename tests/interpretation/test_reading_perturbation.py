"""Changing one entry, one row or one label of a valid predictions file either leaves its reading (kind, N, K,
split) unchanged or gives a one-line refusal: no single value flips how the other rows are read (docs/inputs.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prediction_writers import write_csv_header, write_npz_named, write_npz_unnamed, write_pt_batches

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.interpretation import load_predictions

WRITERS = {"npz": write_npz_named, "npz unnamed": write_npz_unnamed, "csv": write_csv_header,
           "pt batches": write_pt_batches}
ENTRIES = [-1e-12, -1e-9, 0.0, 1.0, -1.0, 0.5, 1 + 1e-9, 2.0, 100.0, 1e6, -1e6, np.nan, np.inf]


def _reading(path, options):
    record = load_predictions(path, options=options).interpretation
    return record.kind, record.n, record.k, record.split


@st.composite
def valid_predictions(draw):
    n = draw(st.integers(2, 25))
    shape = draw(st.sampled_from(["binary 1-D", "multi-class"]))
    k = 2 if shape == "binary 1-D" else draw(st.integers(2, 6))
    kind = draw(st.sampled_from(["probs", "logits"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    logits = rng.normal(scale=3.0, size=(n, k))
    scores = softmax(logits) if kind == "probs" else logits
    if shape == "binary 1-D":
        scores = scores[:, 1] if kind == "probs" else logits[:, 1] - logits[:, 0]
    return scores, rng.integers(0, k, n).astype(np.int64)


@st.composite
def perturbations(draw, n, k, binary):
    what = draw(st.sampled_from(["entry", "row", "label"]))
    row = draw(st.integers(0, n - 1))
    if what == "entry":
        column = 0 if binary else draw(st.integers(0, k - 1))
        return what, row, column, draw(st.one_of(st.sampled_from(ENTRIES),
                                                 st.floats(-50, 50, allow_nan=False)))
    if what == "row":
        return what, row, None, draw(st.sampled_from(["zeros", "half", "percent", "negated", "noise"]))
    return what, row, None, draw(st.integers(-2, k + 2))


def _perturbed(scores, labels, change, seed):
    what, row, column, value = change
    scores, labels = scores.copy(), labels.copy()
    if what == "entry":
        if scores.ndim == 1:
            scores[row] = value
        else:
            scores[row, column] = value
    elif what == "row":
        target = scores[row:row + 1]
        target[...] = {"zeros": 0 * target, "half": 0.5 * target, "percent": 100 * target, "negated": -target,
                       "noise": np.random.default_rng(seed).normal(size=target.shape)}[value]
    else:
        labels[row] = value
    return scores, labels


@pytest.mark.parametrize("writer", sorted(WRITERS))
@settings(max_examples=60, deadline=None)
@given(data=valid_predictions(), seed=st.integers(0, 100), choice=st.data())
def test_one_changed_value_keeps_the_reading_or_is_refused(writer, data, seed, choice):
    scores, labels = data
    n, k = len(labels), (2 if scores.ndim == 1 else scores.shape[1])
    change = choice.draw(perturbations(n, k, scores.ndim == 1))
    with tempfile.TemporaryDirectory() as folder:
        path, options = WRITERS[writer](Path(folder), scores, labels)
        try:
            before = _reading(path, options)
        except InputError:
            return  # a file refused as it stands is not the subject here
    changed_scores, changed_labels = _perturbed(scores, labels, change, seed)
    with tempfile.TemporaryDirectory() as folder:
        path, options = WRITERS[writer](Path(folder), changed_scores, changed_labels)
        try:
            after = _reading(path, options)
        except InputError as refusal:
            assert "\n" not in str(refusal)
            return
    assert after == before, (change, before, after)
