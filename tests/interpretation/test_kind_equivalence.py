"""One kind rule for arrays and files (issue #39): the same predictions handed to the Python API as an array and
written as a file (`np.savez(path, logits=...)`, a CSV) are read alike — kind, N, K and every metric to the bit — or
are both refused, over clean and perturbed matrices (one entry, one row, every row) drawn by hypothesis."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.interpretation import load_predictions
from adacal.interpretation.kind import read_matrix_kind, renormalized_rows
from adacal.metrics import compute_metrics, nll
from adacal.scores_kind import decide_scores_kind

PERTURBATIONS = ["none", "entry -1e-12", "zero row", "halved row", "row x100", "all x100", "rounded", "one entry +0.3",
                 "few rows halved", "binary -1e-9"]


@st.composite
def perturbed(draw):
    """Softmax probabilities or logits, float32 or float64, with one of PERTURBATIONS applied."""
    n = draw(st.integers(2, 320))
    k = draw(st.integers(2, 6))
    kind = draw(st.sampled_from(["probs", "logits"]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    how = draw(st.sampled_from(PERTURBATIONS))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    logits = rng.normal(scale=draw(st.sampled_from([0.5, 2.0, 6.0])), size=(n, k))
    scores = softmax(logits) if kind == "probs" else logits
    labels = rng.integers(0, k, n).astype(np.int64)
    row = int(rng.integers(0, n))
    if how == "entry -1e-12":
        scores[row, int(rng.integers(0, k))] = -1e-12
    elif how == "zero row":
        scores[row] = 0.0
    elif how == "halved row":
        scores[row] /= 2
    elif how == "row x100":
        scores[row] *= 100
    elif how == "all x100":
        scores = scores * 100
    elif how == "rounded":
        scores = np.round(scores, 2)
    elif how == "one entry +0.3":
        scores[row, 0] += 0.3
    elif how == "few rows halved":
        scores[: max(1, n // 20)] /= 2
    elif how == "binary -1e-9":
        scores = scores[:, -1] if kind == "probs" else logits[:, -1] - logits[:, 0]
        scores[row] = -1e-9 if kind == "probs" else scores[row]
        labels = labels % 2
    return scores.astype(dtype), labels


def _api(scores, labels):
    try:
        return decide_scores_kind(scores), compute_metrics(scores, labels)
    except InputError as refusal:
        assert "\n" not in str(refusal) and "scores_kind=" in str(refusal)
        return None


def _write(folder: Path, scores, labels, how: str) -> Path:
    if how == "npz":
        np.savez(folder / "p.npz", logits=scores, labels=labels)
        return folder / "p.npz"
    rows = np.atleast_2d(scores.T).T
    header = ",".join([*(f"c{i}" for i in range(rows.shape[1])), "label"])
    lines = [",".join([*(repr(float(v)) for v in row), str(int(y))]) for row, y in zip(rows, labels)]
    (folder / "p.csv").write_text("\n".join([header, *lines]) + "\n")
    return folder / "p.csv"


@pytest.mark.parametrize("how", ["npz", "csv"])
@settings(max_examples=60, deadline=None)
@given(data=perturbed())
def test_an_array_and_its_file_are_read_alike_or_both_refused(how, data):
    scores, labels = data
    api = _api(scores, labels)
    with tempfile.TemporaryDirectory() as folder:
        try:
            read = load_predictions(_write(Path(folder), scores, labels, how))
        except InputError as refusal:
            assert "--scores-kind" in str(refusal) or "--renormalize" in str(refusal)
            assert api is None, f"the file is refused but the array reads as {api[0]}: {refusal}"
            return
    assert api is not None, f"the array is refused but the file reads as {read.interpretation.kind}"
    kind, metrics = api
    record = read.interpretation
    assert record.kind.endswith("probabilities") == (kind == "probs")
    assert (record.n, record.k) == (len(labels), 2 if scores.ndim == 1 else scores.shape[1])
    assert compute_metrics(read.logits, read.labels) == metrics  # to the bit


def test_the_issues_examples_are_refused_by_both_naming_each_option(tmp_path):
    """299 softmax rows and one row that is not a probability row: never read as logits (ECE-EM 30.9 % instead of
    9.2 % before), by the API (naming scores_kind=) or by the file reader (naming --scores-kind)."""
    rng = np.random.default_rng(0)
    probs = softmax(rng.normal(scale=2.0, size=(300, 10)))
    labels = rng.integers(0, 10, 300)
    for broken_row in ([0.0] * 10, None, "halved"):
        scores = probs.copy()
        if broken_row is None:
            scores[17, 3] = -1e-12
        elif broken_row == "halved":
            scores[17] /= 2
        else:
            scores[17] = broken_row
        with pytest.raises(InputError, match=r"1 of 300 rows are not \(row 17 .*scores_kind='logits'"):
            compute_metrics(scores, labels)
        np.savez(tmp_path / "p.npz", logits=scores, labels=labels)
        with pytest.raises(InputError, match=r"1 of 300 rows are not \(row 17 .*--scores-kind logits"):
            load_predictions(tmp_path / "p.npz")


def test_renormalize_is_safe_when_a_rows_sum_overflows(tmp_path):
    """Rows of entries near 1e308 sum past float64's range: divided by their largest entry first, they are the
    probabilities they stand for, not NaN or zeros (a wrong NLL before)."""
    scores = np.array([[1e308, 1e308, 0.0], [1.5e308, 0.5e308, 1e308], [0.2, 0.3, 0.5]])
    labels = np.array([0, 2, 2])
    expected = np.array([[0.5, 0.5, 0.0], [0.5, 1 / 6, 1 / 3], [0.2, 0.3, 0.5]])
    np.testing.assert_allclose(renormalized_rows(scores), expected, rtol=1e-15)
    reading = read_matrix_kind(scores, name="scores", renormalize=True)
    np.testing.assert_allclose(reading.scores, expected, rtol=1e-15)
    np.savez(tmp_path / "big.npz", scores=scores, labels=labels)
    from adacal.sources import ReadOptions

    read = load_predictions(tmp_path / "big.npz", options=ReadOptions(renormalize=True))
    assert nll(read.logits, read.labels) == pytest.approx(-np.mean(np.log([0.5, 1 / 3, 0.5])), rel=1e-12)
    # finite sums keep numpy's own p / p.sum(axis=1), bit for bit
    finite = np.random.default_rng(1).uniform(size=(50, 4))
    np.testing.assert_array_equal(renormalized_rows(finite), finite / finite.sum(axis=1)[:, None])
