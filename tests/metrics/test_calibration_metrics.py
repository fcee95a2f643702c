"""Calibration metrics on hand-worked examples and invariants (range, calibrated data, permutation, torch vs numpy,
logits vs softmax), the registry and input errors. The comparisons with reference implementations (slow loops and
published packages) run through the shared harness in test_metric_references.py."""

import math

import numpy as np
import pytest
import torch

import slow_metrics as slow
from adacal.arrays import softmax
from adacal.errors import InputError, UnknownNameError
from adacal.metrics import METRIC_NAMES, METRICS, compute_metrics, metric_key, prepare_predictions, reliability
from adacal.metrics import brier, classwise_ece, ece_debias, ece_em, ece_ew, error, mce, nll
from metric_tester import calibrated_sample, make_logits

# ------------------------------------------------------------------------------------------ hand-worked examples

# Four samples, two classes. Top-1 (confidence, correct):
#   [1, 0] label 0 -> (1.0, 1);  [1, 0] label 1 -> (1.0, 0);  [0.75, 0.25] label 0 -> (0.75, 1);
#   [0.5, 0.5] label 1 -> tie, class 0 predicted -> (0.5, 0).
HAND_PROBS = np.array([[1.0, 0.0], [1.0, 0.0], [0.75, 0.25], [0.5, 0.5]])
HAND_LABELS = np.array([0, 1, 0, 1])


def test_hand_worked_equal_width():
    # 4 bins (0,.25] (.25,.5] (.5,.75] (.75,1]: 0.5 -> bin 1 (gap .5), 0.75 -> bin 2 (gap .25), the two 1.0s -> bin 3
    # (conf 1, acc .5, gap .5); bin 0 empty. ECE = 1/4*.5 + 1/4*.25 + 2/4*.5 = .4375; MCE = .5. With 15 bins the
    # groups are the same (0.5 in (7/15, 8/15], 0.75 in (11/15, 12/15], 1.0 in the last bin), so also .4375.
    assert ece_ew(HAND_PROBS, HAND_LABELS, n_bins=4) == pytest.approx(0.4375, abs=1e-15)
    assert ece_ew(HAND_PROBS, HAND_LABELS) == pytest.approx(0.4375, abs=1e-15)
    assert mce(HAND_PROBS, HAND_LABELS, n_bins=4) == pytest.approx(0.5, abs=1e-15)
    assert error(HAND_PROBS, HAND_LABELS) == 0.5
    stats = reliability(HAND_PROBS, HAND_LABELS, n_bins=4)
    assert stats.counts.tolist() == [0, 1, 1, 2]
    assert stats.mean_confidence.tolist() == [0.0, 0.5, 0.75, 1.0]
    assert stats.accuracy.tolist() == [0.0, 0.0, 1.0, 0.5]


def test_hand_worked_equal_mass_with_ties():
    # Sorted confidences .5 .75 1 1. Two bins: cut after 2 samples at (.75 + 1)/2 = .875: {.5,.75} conf .625 acc .5
    # -> 1/2*.125; {1,1} acc .5 -> 1/2*.5; ECE = .3125.
    assert ece_em(HAND_PROBS, HAND_LABELS, n_bins=2) == pytest.approx(0.3125, abs=1e-15)
    # Three bins: array_split sizes 2,1,1 -> edges .875 and (1 + 1)/2 = 1: the tie at 1.0 is not split, bins hold
    # 2, 2, 0 samples, and the ECE is again .3125.
    stats = reliability(HAND_PROBS, HAND_LABELS, n_bins=3, binning="equal-mass")
    assert stats.counts.tolist() == [2, 2, 0]
    assert ece_em(HAND_PROBS, HAND_LABELS, n_bins=3) == pytest.approx(0.3125, abs=1e-15)
    # N = 4 < 15 bins: one sample per bin (the tied 1.0s share one), ECE = 1/4*.5 + 1/4*.25 + 2/4*.5 = .4375.
    assert ece_em(HAND_PROBS, HAND_LABELS, n_bins=15) == pytest.approx(0.4375, abs=1e-15)


def test_hand_worked_debiased():
    # Confidences .6 x3 (all correct) and .9 x3 (one correct). Two equal-mass bins split at .75.
    # Bin .6: (C - A)^2 - A(1 - A)/(n - 1) = .4^2 - 0 = .16; bin .9: (.9 - 1/3)^2 - (1/3)(2/3)/2 = 289/900 - 100/900
    # = .21. Weighted by 1/2 each: .185; ECE_DEBIAS = sqrt(.185). (Plain ECE_EM = .5*.4 + .5*17/30 = .48333...)
    probs = np.array([[0.6, 0.4]] * 3 + [[0.9, 0.1]] * 3)
    labels = np.array([0, 0, 0, 0, 1, 1])
    assert ece_debias(probs, labels, n_bins=2) == pytest.approx(math.sqrt(0.185), abs=1e-12)
    assert ece_em(probs, labels, n_bins=2) == pytest.approx(0.2 + 0.5 * 17 / 30, abs=1e-12)
    # A bin of one sample has no variance estimate and counts 0; the negative total is clipped at 0.
    assert ece_debias(HAND_PROBS, HAND_LABELS, n_bins=2) == 0.0


def test_hand_worked_single_class_present():
    # Labels all 0. Top-1: (.5, correct) and (.5 for class 1, wrong): one bin with conf .5, acc .5 -> ECE 0.
    probs = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]])
    labels = np.array([0, 0])
    assert ece_ew(probs, labels, n_bins=4) == 0.0
    assert error(probs, labels) == 0.5
    # Classwise with 4 bins: class 0: p (.5, .25), y (1, 1) -> .5*|.25 - 1| + .5*|.5 - 1| = .625;
    # class 1: p (.25, .5), y 0 -> .5*.25 + .5*.5 = .375; class 2: both .25 in bin 0 -> .25. Mean = 1.25/3.
    assert classwise_ece(probs, labels, n_bins=4) == pytest.approx(1.25 / 3, abs=1e-15)
    # Brier: (.5-1)^2 + .25^2 + .25^2 = .375 and (.25-1)^2 + .5^2 + .25^2 = .875 -> mean .625.
    assert brier(probs, labels) == pytest.approx(0.625, abs=1e-15)
    # NLL: -(log .5 + log .25)/2 = 1.5 log 2.
    assert nll(probs, labels) == pytest.approx(1.5 * math.log(2), abs=1e-15)


def test_hand_worked_classwise_with_exact_zero_and_one():
    # Class 0: p (1, 0, .5), y (1, 0, 1), 2 bins: bin 0 holds 0 (first bin is closed below) and .5 -> |.5 - 1|/3;
    # bin 1 holds 1 with y 1 -> 0. Class 1 mirrors it: |.5 - 0|/3. Mean = 1/6.
    probs = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    labels = np.array([0, 1, 0])
    assert classwise_ece(probs, labels, n_bins=2) == pytest.approx(1 / 6, abs=1e-15)


def test_perfect_one_hot_predictions_have_zero_error_everywhere():
    labels = np.array([0, 1, 2, 1])
    probs = np.eye(3)[labels]
    values = compute_metrics(probs, labels)
    for key, value in values.items():
        assert value == pytest.approx(0.0, abs=1e-11), key


def test_nll_of_probabilities_is_clipped():
    probs = np.array([[1.0, 0.0], [0.5, 0.5]])
    labels = np.array([1, 0])
    assert nll(probs, labels) == pytest.approx((-math.log(1e-12) + math.log(2)) / 2)


def test_nll_from_extreme_logits_stays_finite():
    logits = np.array([[1000.0, -1000.0], [0.0, 0.0]])
    labels = np.array([1, 0])
    assert nll(logits, labels) == pytest.approx((2000.0 + math.log(2)) / 2)


# ---------------------------------------------------------------------------------------------------- invariants


def test_ece_tends_to_zero_for_a_calibrated_model():
    small = ece_em(*calibrated_sample(1_000, 5, 0))
    large_probs, large_labels = calibrated_sample(200_000, 5, 1)
    large = ece_em(large_probs, large_labels)
    assert large < 0.01 and large < small
    assert ece_ew(large_probs, large_labels) < 0.01
    assert ece_debias(large_probs, large_labels) < 0.01
    assert classwise_ece(large_probs, large_labels) < 0.01


def test_every_metric_is_permutation_invariant():
    logits, labels = make_logits(300, 6, 3)
    order = np.random.default_rng(0).permutation(300)
    before = compute_metrics(logits, labels)
    after = compute_metrics(logits[order], labels[order])
    for key in before:
        assert after[key] == pytest.approx(before[key], abs=1e-12), key


def test_torch_and_numpy_inputs_agree():
    logits, labels = make_logits(200, 5, 4)
    from_numpy = compute_metrics(logits, labels)
    from_torch = compute_metrics(torch.from_numpy(logits), torch.from_numpy(labels))
    from_float32 = compute_metrics(torch.from_numpy(logits).float(), torch.from_numpy(labels))
    assert from_torch == from_numpy
    for key in from_numpy:
        assert from_float32[key] == pytest.approx(from_numpy[key], abs=1e-5), key


def test_logits_and_their_softmax_give_the_same_metrics():
    logits, labels = make_logits(300, 8, 5)
    from_logits = compute_metrics(logits, labels)
    from_probs = compute_metrics(softmax(logits), labels)
    assert prepare_predictions(logits, labels).assumed == "logits"
    assert prepare_predictions(softmax(logits), labels).assumed == "probs"
    for key in from_logits:
        assert from_probs[key] == pytest.approx(from_logits[key], abs=1e-9), key


def test_float16_probabilities_are_taken_as_probabilities():
    # float16 rounding moves row sums by ~1e-3, beyond the float32 tolerance: the dtype's own tolerance applies
    logits, labels = make_logits(400, 10, 9)
    probs16 = softmax(logits).astype(np.float16)
    assert np.abs(probs16.astype(np.float64).sum(axis=1) - 1).max() > 1e-4
    assert prepare_predictions(probs16, labels).assumed == "probs"
    assert prepare_predictions(torch.from_numpy(softmax(logits)).bfloat16(), labels).assumed == "probs"
    reference = compute_metrics(logits, labels)
    for key, value in compute_metrics(probs16, labels).items():
        assert value == pytest.approx(reference[key], abs=2e-3), key


def test_ece_values_are_fractions():
    logits, labels = make_logits(500, 10, 6, scale=6.0)  # very over-confident
    for key, value in compute_metrics(logits, labels).items():
        if key not in ("nll", "brier"):
            assert 0.0 <= value <= 1.0, key
    assert 0.0 <= brier(logits, labels) <= 2.0


# ------------------------------------------------------------------------------------ registry and compute_metrics


def test_registry_sweep_every_name_runs():
    logits, labels = make_logits(100, 4, 7)
    binary_logits, binary_labels = make_logits(100, 2, 7)
    from adacal.metrics import BINARY_METRIC_NAMES, SELECTIVE_METRIC_NAMES

    assert set(METRICS.names()) == set(METRIC_NAMES) | set(SELECTIVE_METRIC_NAMES) | set(BINARY_METRIC_NAMES)
    values = compute_metrics(logits, labels)
    assert list(values) == [metric_key(name) for name in METRIC_NAMES]  # selective metrics: by name only
    values.update(compute_metrics(logits, labels, names=SELECTIVE_METRIC_NAMES))
    binary = compute_metrics(binary_logits, binary_labels, names=BINARY_METRIC_NAMES)  # K = 2 only, by name
    for name in METRICS.names():
        scores, targets, expected = ((binary_logits, binary_labels, binary) if name in BINARY_METRIC_NAMES
                                     else (logits, labels, values))
        value = METRICS.get(name)(scores, targets, n_bins=15)
        assert isinstance(value, float) and math.isfinite(value)
        assert value == expected[metric_key(name)]


def test_compute_metrics_selects_names_in_either_spelling():
    logits, labels = make_logits(50, 3, 8)
    values = compute_metrics(logits, labels, names="ece-em, nll")
    assert list(values) == ["ece_em", "nll"]
    assert list(compute_metrics(logits, labels, names=["ece_sweep_em"])) == ["ece_sweep_em"]


def test_compute_metrics_validates_once(monkeypatch):
    import adacal.metrics.prepared as module

    calls = []
    original = module.check_score_shape
    monkeypatch.setattr(module, "check_score_shape", lambda *a, **k: calls.append(1) or original(*a, **k))
    logits, labels = make_logits(50, 3, 8)
    compute_metrics(logits, labels)
    assert len(calls) == 1


def test_unknown_metric_suggests_the_closest_name():
    with pytest.raises(UnknownNameError, match="Did you mean 'ece-em'"):
        compute_metrics(np.eye(2), [0, 1], names=["ece-emm"])
    with pytest.raises(InputError, match="at least one metric"):
        compute_metrics(np.eye(2), [0, 1], names=" , ")


@pytest.mark.parametrize("n_bins", [0, -1, 1.5, True, "15"])
def test_bad_n_bins_is_an_input_error(n_bins):
    with pytest.raises(InputError, match="Expected n_bins to be a positive integer"):
        ece_em(np.eye(2), [0, 1], n_bins=n_bins)


def test_bad_inputs_are_input_errors():
    with pytest.raises(InputError, match="2-D"):
        ece_ew(np.ones((3, 2, 2)), [0, 1, 0])
    with pytest.raises(InputError, match="3 entries"):
        ece_ew(np.eye(3), [0, 1])
    with pytest.raises(InputError, match=r"labels in \[0, 2\]"):
        ece_ew(np.eye(3), [0, 1, 3])
    with pytest.raises(InputError, match="finite"):
        nll(np.array([[np.nan, 0.0]]), [0])
    with pytest.raises(InputError, match="mode"):
        ece_debias(np.eye(2), [0, 1], mode="classwise")
    with pytest.raises(InputError, match="binning"):
        reliability(np.eye(2), [0, 1], binning="quantile")


@pytest.mark.parametrize("n, k", [(1000, 10), (70_001, 3), (3, 70_000)])
def test_block_computation_equals_arrays_to_probs_exactly(n, k):
    # Per-sample quantities are computed over blocks of rows; they must equal the whole-matrix computation of
    # adacal.arrays (to_probs, then argmax / max) bit for bit, for logits and for (float32) probabilities.
    from adacal.arrays import check_scores, to_probs

    rng = np.random.default_rng(n)
    logits = rng.normal(size=(n, k)) * 3
    labels = rng.integers(0, k, size=n)
    for scores in (logits, to_probs(logits)[0].astype(np.float32)):
        probs, assumed = to_probs(check_scores(scores))
        pred = prepare_predictions(scores, labels)
        assert pred.assumed == assumed
        assert np.array_equal(pred.predicted_labels, probs.argmax(axis=1))
        assert np.array_equal(pred.confidences, probs.max(axis=1))
        assert np.array_equal(pred.probs, probs)
        onehot = np.zeros_like(probs)
        onehot[np.arange(n), labels] = 1.0
        np.testing.assert_allclose(pred.brier_terms, ((probs - onehot) ** 2).sum(axis=1), rtol=0, atol=1e-12)


def test_top_label_of_probabilities_is_that_of_the_normalised_rows():
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(6), size=500) * (1 + rng.uniform(-5e-5, 5e-5, size=(500, 1)))  # sums within 1e-4
    labels = rng.integers(0, 6, size=500)
    pred = prepare_predictions(probs, labels)
    assert pred.assumed == "probs"
    # rows within K float32 epsilons of 1 are used as given, the others divided by their sums
    sums = probs.sum(axis=1, keepdims=True)
    within = np.abs(sums - 1.0) <= 6 * np.finfo(np.float32).eps
    assert 0 < within.sum() < 50  # both kinds of row
    normalised = np.where(within, probs, probs / sums)
    np.testing.assert_array_equal(pred.predicted_labels, normalised.argmax(axis=1))
    np.testing.assert_allclose(pred.confidences, normalised.max(axis=1), rtol=0, atol=1e-15)


@pytest.mark.parametrize("k", [3, 100])
def test_one_pass_validation_scan_matches_whole_array_results_across_blocks(k, monkeypatch):
    import adacal.metrics.prepared as module
    import adacal.metrics.rows as rows

    # Small scan blocks, scanned by threads, so that a small matrix spans several blocks and thread ranges.
    monkeypatch.setattr(rows, "SCAN_BLOCK_BYTES", rows.BLOCK_ENTRIES * 8)  # float64 probabilities
    monkeypatch.setattr(rows, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv(rows.THREADS_VARIABLE, "2")
    n = 3 * (rows.BLOCK_ENTRIES // k) + 7  # several blocks and a ragged last one
    logits, labels = make_logits(n, k, 11)
    probs = softmax(logits)
    prepared = module.prepare_predictions(probs, labels)
    assert prepared.assumed == "probs"
    np.testing.assert_array_equal(prepared.predicted_labels, probs.argmax(axis=1))
    np.testing.assert_allclose(prepared.confidences, probs.max(axis=1) / probs.sum(axis=1), rtol=0, atol=1e-15)
    assert ece_em(probs, labels) == pytest.approx(slow.ece_em(probs, labels), abs=1e-12)
    # one negative entry in the last block, or a NaN in the middle one, is still seen: the one row refuses the
    # matrix (docs/inputs.md §2), it no longer turns every row into logits
    shifted = probs.copy()
    shifted[-1, 0] = -1e-9
    shifted[-1, 1] += 1e-9
    with pytest.raises(InputError, match=rf"1 of {n} rows are not \(row {n - 1} has the entry -1e-09\).*scores_kind="):
        module.prepare_predictions(shifted, labels)
    assert module.prepare_predictions(shifted, labels, scores_kind="logits").assumed == "logits"
    broken = probs.copy()
    broken[n // 2, 1] = np.nan
    with pytest.raises(InputError, match="NaN or Inf in 1 row"):
        module.prepare_predictions(broken, labels)


def test_nll_of_logits_near_the_float64_limit_is_their_mean_not_an_overflow():
    """−log p(true) of [a, −a] with the label on −a is 2a: each term is finite (2e307), and so is their mean,
    though their sum is not."""
    from adacal.metrics import nll

    a = 1e307
    logits = np.tile([[a, -a]], (100, 1))
    assert nll(logits, np.ones(100, dtype=int)) == pytest.approx(2 * a, rel=1e-12)
    assert nll(logits, np.zeros(100, dtype=int)) == 0.0
    assert nll(np.array([[1e308, -1e308]]), np.array([1])) == np.inf  # −log p itself beyond float64: infinite


def test_a_binary_models_one_score_per_sample_is_read_as_two_columns():
    """predict_proba(X)[:, 1], a sigmoid output (N, 1), or decision scores: the same metrics as the two columns
    [1 − p, p] (or the logits [0, s]), as the file readers take them."""
    from adacal.metrics import CalibrationMeter

    rng = np.random.default_rng(8)
    p = rng.random(500)
    y = (rng.random(500) < p).astype(int)
    columns = compute_metrics(np.stack([1 - p, p], axis=1), y)
    for spelled in (p, p[:, None], torch.from_numpy(p).float(), torch.from_numpy(p)[:, None]):
        got = compute_metrics(spelled, y)
        for key, value in columns.items():
            assert got[key] == pytest.approx(value, abs=1e-6 if isinstance(spelled, torch.Tensor) else 1e-12), key
    s = np.log(p / (1 - p))  # decision scores outside [0, 1]: sigmoid(s) = p
    assert ece_em(s, y) == pytest.approx(ece_em(np.stack([np.zeros_like(s), s], axis=1), y), abs=1e-12)
    assert ece_em(s, y) == pytest.approx(columns["ece_em"], abs=1e-9)
    meter = CalibrationMeter()
    meter.update(torch.from_numpy(p[:200]), torch.from_numpy(y[:200]))
    meter.update(torch.empty(0), torch.empty(0, dtype=torch.long))  # an empty binary batch adds nothing
    meter.update(p[200:, None], y[200:])
    assert meter.compute()["ece_em"] == pytest.approx(columns["ece_em"], abs=1e-9)
    with pytest.raises(InputError, match=r"labels in \[0, 1\], got values from 0 to 2"):
        ece_em(p, np.where(y == 1, 2, 0))
