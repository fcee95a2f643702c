"""Calibrators are functions of a row (#39): the kind of scores is decided once, at fit (`fitted_on_`), and a row's
calibrated probabilities never depend on the rows beside it — for every registered calibrator, fitted on logits or
probabilities, binary (one score per sample or two columns) or multi-class, including batches whose other rows
flipped the old whole-array decision."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adacal.calibrators import CALIBRATORS, Calibrator, TemperatureScaling, build_calibrator
from adacal.calibrators.reading import MIN_JUDGED_ROWS
from adacal.errors import InputError

from calibration_problems import make_problem

NAMES = CALIBRATORS.names()
K = 4


def _softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def _problems():
    """{case: (fit scores, labels, kind fitted on, a batch to transform)}: every batch mixes rows that would have
    turned the old whole-array decision (logit rows that look like probabilities; a probability row among logits)."""
    logits, labels = make_problem(n=400, k=K, sigma=3.0, true_temperature=2.0, seed=11)
    new_logits = make_problem(n=40, k=K, sigma=3.0, true_temperature=2.0, seed=12)[0]
    looks_like_probs = np.array([[0.25, 0.25, 0.25, 0.25], [0.3, 0.7, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0],
                                 [0.1, 0.2, 0.3, 0.4]])
    logit_batch = np.vstack([new_logits[:6], looks_like_probs, new_logits[6:12]])
    probs = _softmax(logits)
    new_probs = _softmax(new_logits)
    edge_probs = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.25, 0.25, 0.25, 0.25],
                           [0.4, 0.3, 0.2, 0.10004]])  # the last sums to 1 within rounding: renormalised row-wise
    prob_batch = np.vstack([new_probs[:8], edge_probs, new_probs[8:16]])
    binary, binary_labels = make_problem(n=400, k=2, sigma=3.0, true_temperature=2.0, seed=13)
    decision = binary[:, 1] - binary[:, 0]
    new_decision = np.concatenate([[0.3, 0.7, 0.0, 1.0, -0.5, 4.0], decision[:10]])  # a few in [0, 1]
    binary_probs = _softmax(binary)[:, 1]
    new_binary_probs = np.concatenate([[0.0, 1.0, 0.5, 0.3], binary_probs[:10]])
    two_column_logits = np.vstack([[0.3, 0.7], [0.5, 0.5], binary[:10]])
    return {
        "multi-class logits": (logits, labels, "logits", logit_batch),
        "multi-class probabilities": (probs, labels, "probs", prob_batch),
        "binary decision scores": (decision, binary_labels, "logits", new_decision),
        "binary probabilities": (binary_probs, binary_labels, "probs", new_binary_probs),
        "binary two-column logits": (binary, binary_labels, "logits", two_column_logits),
    }


PROBLEMS = _problems()
CASES = [(name, case) for name in NAMES for case in PROBLEMS]


@pytest.fixture(scope="module")
def fitted():
    out = {}
    for name, case in CASES:
        scores, labels, _, _ = PROBLEMS[case]
        out[name, case] = build_calibrator(name).fit(scores, labels)
    return out


def _rows(batch):
    return [batch[i:i + 1] for i in range(len(batch))]


@pytest.mark.parametrize("name, case", CASES)
def test_transforming_rows_one_at_a_time_equals_transforming_the_batch(fitted, name, case):
    _, _, kind, batch = PROBLEMS[case]
    calibrator = fitted[name, case]
    assert calibrator.fitted_on_ == kind
    whole = calibrator.transform(batch)
    alone = np.vstack([calibrator.transform(row) for row in _rows(batch)])
    np.testing.assert_allclose(alone, whole, rtol=0, atol=1e-12)
    # ... and as any subset of its rows, in any order
    order = np.random.default_rng(0).permutation(len(batch))[: len(batch) // 2]
    np.testing.assert_allclose(calibrator.transform(batch[order]), whole[order], rtol=0, atol=1e-12)
    # the kind passed explicitly is the kind fitted on: the same numbers
    np.testing.assert_array_equal(calibrator.transform(batch, scores_kind=kind), whole)


@pytest.mark.parametrize("name", NAMES)
def test_fitted_on_logits_a_probability_looking_row_is_still_logits(fitted, name):
    calibrator = fitted[name, "multi-class logits"]
    row = np.array([[0.3, 0.7, 0.0, 0.0]])
    expected = calibrator.transform(row - 5.0)  # logits are read up to a constant per row by softmax-only maps
    if calibrator.shift_invariant:
        np.testing.assert_allclose(calibrator.transform(row), expected, rtol=0, atol=1e-12)
    if calibrator.shift_invariant:  # read as log-probabilities it would be another row: the reading is the logits'
        as_probs = calibrator.transform(row, scores_kind="probs")
        assert not np.allclose(calibrator.transform(row), as_probs, atol=1e-6)
    else:  # vector / matrix scaling take only the kind they were fitted on
        with pytest.raises(InputError, match="fitted on logits, got probabilities"):
            calibrator.transform(row, scores_kind="probs")


def test_issue_example_temperature_maps_a_logit_row_alone_as_in_a_batch():
    """The issue's case: T fitted on logits mapped [0.3, 0.7] to [0.428, 0.572] alone, [0.466, 0.534] in a batch.
    Now it is softmax([0.3, 0.7] / T) both ways, by hand."""
    logits, labels = make_problem(n=2000, k=2, sigma=2.0, true_temperature=1.4, seed=5)
    calibrator = TemperatureScaling().fit(logits, labels)
    t = calibrator.temperature_
    expected = 1.0 / (1.0 + np.exp(-(0.7 - 0.3) / t))  # P(class 1) = sigmoid(Δz / T)
    alone = calibrator.transform(np.array([[0.3, 0.7]]))
    batch = calibrator.transform(np.vstack([[0.3, 0.7], logits[:50]]))
    assert alone[0, 1] == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(batch[0], alone[0], rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_fitted_on_probabilities_a_row_that_is_not_one_is_refused_by_number(fitted, name):
    calibrator = fitted[name, "multi-class probabilities"]
    batch = PROBLEMS["multi-class probabilities"][3].copy()
    batch[5] = [0.5, 0.6, 0.1, 0.0]  # sums to 1.2
    with pytest.raises(InputError, match=r"fitted on probabilities and reads every row as probabilities.*row 5\b"):
        calibrator.transform(batch)
    with pytest.raises(InputError, match="fitted on probabilities"):
        calibrator.transform(np.array([[2.0, -1.0, 0.5, 0.0]]))  # one logit row
    binary = fitted[name, "binary probabilities"]
    with pytest.raises(InputError, match=r"fitted on probabilities.*row 2\b"):
        binary.transform(np.array([0.2, 0.4, 1.5]))


@pytest.mark.parametrize("name", NAMES)
def test_fitted_on_logits_a_whole_batch_of_probabilities_is_refused_not_reread(fitted, name):
    """A batch of MIN_JUDGED_ROWS or more probability rows is no logits by chance (the file readers allow 1 %): it is
    refused, naming scores_kind; fewer rows are read as logits, as fitted; told, it is read as told."""
    calibrator = fitted[name, "multi-class logits"]
    probs = _softmax(make_problem(n=MIN_JUDGED_ROWS, k=K, sigma=2.0, true_temperature=1.0, seed=3)[0])
    told = "scores_kind='probs'" if calibrator.shift_invariant else "the model's logits"
    with pytest.raises(InputError, match=rf"fitted on logits, but all {MIN_JUDGED_ROWS} rows are probability rows.*"
                                         rf"{told}.*scores_kind='logits'"):
        calibrator.transform(probs)
    few = probs[: MIN_JUDGED_ROWS - 1]
    np.testing.assert_allclose(calibrator.transform(few), calibrator.transform(few, scores_kind="logits"), atol=0)
    if calibrator.shift_invariant:
        np.testing.assert_allclose(calibrator.transform(probs, scores_kind="probs"),
                                   calibrator.transform(np.log(probs), scores_kind="logits"), rtol=0, atol=1e-9)


@pytest.mark.parametrize("name, case", CASES)
def test_dict_round_trip_keeps_fitted_on_and_outputs_bit_for_bit(fitted, name, case):
    _, _, kind, batch = PROBLEMS[case]
    calibrator = fitted[name, case]
    data = json.loads(json.dumps(calibrator.to_dict(), allow_nan=False))
    assert data["fitted_on"] == kind
    restored = Calibrator.from_dict(data)
    assert restored.fitted_on_ == kind
    np.testing.assert_array_equal(restored.transform(batch), calibrator.transform(batch))
    for row in _rows(batch)[:3]:
        np.testing.assert_array_equal(restored.transform(row), calibrator.transform(row))


def test_fit_decides_the_kind_by_the_shared_rule_and_an_explicit_kind_wins():
    logits, labels = make_problem(n=300, k=K, sigma=3.0, true_temperature=2.0, seed=21)
    probs = _softmax(logits)
    mixed = probs.copy()
    mixed[7] = [0.5, 0.5, 0.5, 0.5]  # one row of 300 that is not a probability row
    with pytest.raises(InputError, match="row 7"):
        TemperatureScaling().fit(mixed, labels)
    halved = probs.copy()
    halved[9] /= 2  # one halved row among softmax rows: refused, never read as logits
    with pytest.raises(InputError, match="row 9"):
        TemperatureScaling().fit(halved, labels)
    as_logits = TemperatureScaling().fit(probs, labels, scores_kind="logits")
    assert as_logits.fitted_on_ == "logits"
    on_probs = TemperatureScaling().fit(probs, labels)
    on_log = TemperatureScaling().fit(np.log(probs), labels)
    assert on_probs.fitted_on_ == "probs" and on_probs.temperature_ == pytest.approx(on_log.temperature_, rel=1e-6)
    with pytest.raises(InputError, match="scores_kind"):
        TemperatureScaling().fit(probs, labels, scores_kind="probabilities")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12), scale=st.sampled_from([0.05, 0.5, 3.0, 30.0]),
       name=st.sampled_from(NAMES), case=st.sampled_from(["multi-class logits", "binary decision scores"]))
def test_any_logit_rows_transform_alone_as_in_a_batch(fitted, seed, n, scale, name, case):
    """Random logit batches, small scales included (rows in [0, 1] that sum to about 1 by chance)."""
    rng = np.random.default_rng(seed)
    shape = (n, K) if case == "multi-class logits" else (n,)
    batch = np.abs(rng.normal(0.0, scale, size=shape)) if rng.random() < 0.5 else rng.normal(0.0, scale, size=shape)
    calibrator = fitted[name, case]
    whole = calibrator.transform(batch)
    alone = np.vstack([calibrator.transform(row) for row in _rows(batch)])
    np.testing.assert_allclose(alone, whole, rtol=0, atol=1e-12)
