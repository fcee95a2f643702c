"""The same predictions written by every writer adacal reads give the in-memory array's metrics to the bit, or a
one-line refusal — never other figures (docs/inputs.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prediction_writers import WRITERS

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.interpretation import load_predictions
from adacal.metrics import compute_metrics
from adacal.scores_kind import decide_scores_kind


@st.composite
def predictions(draw):
    """Random predictions: probabilities or logits, float32 or float64, multi-class or a binary model's one score."""
    n = draw(st.integers(4, 30))
    shape = draw(st.sampled_from(["binary 1-D", "2 columns", "multi-class"]))
    k = 2 if shape != "multi-class" else draw(st.integers(3, 7))
    kind = draw(st.sampled_from(["probs", "logits"]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    logits = rng.normal(scale=draw(st.sampled_from([0.5, 2.0, 8.0])), size=(n, k))
    scores = softmax(logits) if kind == "probs" else logits
    if shape == "binary 1-D":
        scores = scores[:, 1] if kind == "probs" else logits[:, 1] - logits[:, 0]
    labels = rng.integers(0, k, n).astype(np.int64)
    return scores.astype(dtype), labels


@pytest.mark.parametrize("writer", sorted(WRITERS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=predictions())
def test_every_writer_reads_back_the_arrays_figures_or_refuses(writer, data):
    scores, labels = data
    try:  # the API follows the files' rule (adacal.scores_kind): what it refuses, no writer's file may read
        expected, kind = compute_metrics(scores, labels), decide_scores_kind(scores)
    except InputError:
        expected = kind = None
    with tempfile.TemporaryDirectory() as folder:
        path, options = WRITERS[writer](Path(folder), scores, labels)
        try:
            read = load_predictions(path, options=options)
        except InputError as refusal:
            assert "\n" not in str(refusal)
            return
    assert expected is not None, f"the {writer} file was read where the array is refused"
    assert read.interpretation is not None and read.interpretation.n == len(labels)
    assert compute_metrics(read.logits, read.labels) == expected  # to the bit
    # the record's kind is the one the metrics took the array for
    assert read.interpretation.kind.endswith("probabilities") == (kind == "probs")


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_reads_a_plain_example(tmp_path, writer):
    """A fixed, unambiguous example is read (not refused) by every writer, with the record saying how."""
    rng = np.random.default_rng(3)
    probs = softmax(rng.normal(size=(12, 4)))
    labels = rng.integers(0, 4, 12)
    path, options = WRITERS[writer](tmp_path, probs, labels)
    read = load_predictions(path, options=options)
    assert compute_metrics(read.logits, read.labels) == compute_metrics(probs, labels)
    record = read.interpretation
    assert (record.kind, record.n, record.k) == ("probabilities", 12, 4)
    assert record.split == ("test" if writer == "npz split" else "whole file")
    assert record.file == str(path)
