"""Inputs the metrics had not been tried on: narrow-float probabilities and binary scores in the OOD scores, numpy
scalars as options, probabilities that do not sum to 1, the binning helpers on odd arrays, and the streaming meter
with list batches. Each test checks against a hand-worked value or a plain loop."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from adacal.errors import InputError
from adacal.metrics import (
    CalibrationMeter,
    assign_bins,
    bin_statistics,
    bootstrap,
    compute_metrics,
    display_name,
    ece_em,
    ece_ew,
    energy_score,
    entropy,
    entropy_score,
    equal_mass_edges,
    fpr_at_tpr,
    max_prob_score,
    metric_key,
    nll,
    ood_metrics,
    ood_scores,
    reliability,
    smooth_ece,
    smooth_reliability,
    sweep_bins,
    top_label,
)
from adacal.metrics.smooth import smooth_ece_of


def slow_entropy(row):
    total = math.fsum(float(v) for v in row)
    return -math.fsum(float(v) / total * math.log(float(v) / total) for v in row if v > 0)


# float16 rounds 0.1, 0.2, 0.7 so that the row sums to 1.000122: beyond the float32 tolerance (1e-4), within float16's.
HALF_ROWS = np.array([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1]], dtype=np.float16)


@pytest.mark.parametrize("convert", [lambda a: a, torch.from_numpy], ids=["numpy", "torch"])
def test_float16_probabilities_are_probabilities_in_the_ood_scores(convert):
    rows = HALF_ROWS.astype(np.float64)
    assert abs(rows[0].sum() - 1.0) > 1e-4  # the case that used to be read as logits
    expected_entropy = [slow_entropy(row) for row in rows]
    expected_max = [1.0 - row.max() / row.sum() for row in rows]
    np.testing.assert_allclose(entropy_score(convert(HALF_ROWS)), expected_entropy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(entropy(convert(HALF_ROWS)), expected_entropy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(max_prob_score(convert(HALF_ROWS)), expected_max, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ood_scores(convert(HALF_ROWS), "max-prob"), expected_max, rtol=0, atol=1e-12)
    with pytest.raises(InputError, match="Expected logits for the energy score"):
        energy_score(convert(HALF_ROWS))
    with pytest.raises(InputError, match="Expected logits for the energy score"):
        ood_scores(convert(HALF_ROWS), "energy", temperature=2.0)


def test_bfloat16_probabilities_are_probabilities_in_the_ood_scores():
    probs = torch.tensor([[0.1, 0.2, 0.7], [0.25, 0.25, 0.5]], dtype=torch.bfloat16)
    rows = probs.double().numpy()
    np.testing.assert_allclose(entropy_score(probs), [slow_entropy(row) for row in rows], rtol=0, atol=1e-12)
    np.testing.assert_allclose(max_prob_score(probs), 1.0 - rows.max(axis=1) / rows.sum(axis=1), rtol=0, atol=1e-12)


def test_ood_scores_take_a_binary_models_one_score_per_sample_as_the_metrics_do():
    # Positive-class probabilities p are rows [1 - p, p]; decision scores s are logits [0, s].
    np.testing.assert_allclose(entropy_score(np.array([0.2, 0.9])),
                               [slow_entropy([0.8, 0.2]), slow_entropy([0.1, 0.9])],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(max_prob_score(torch.tensor([[0.2], [0.5]], dtype=torch.float64)), [0.2, 0.5], rtol=0,
                               atol=1e-12)
    sigmoid = 1.0 / (1.0 + math.exp(-2.0))
    np.testing.assert_allclose(max_prob_score(np.array([2.0, -2.0])), [1.0 - sigmoid, 1.0 - sigmoid], atol=1e-12)
    np.testing.assert_allclose(energy_score(np.array([2.0, -3.0])), [-math.log(1 + math.exp(2.0)),
                                                                     -math.log(1 + math.exp(-3.0))], atol=1e-12)


def test_entropy_of_certain_rows_is_positive_zero():
    values = entropy(np.eye(3, dtype=int))
    assert values.tolist() == [0.0, 0.0, 0.0] and all(math.copysign(1.0, v) == 1.0 for v in values)


@pytest.mark.parametrize("temperature", [2, 2.0, np.int64(2), np.float32(2.0), np.float64(2.0)])
def test_ood_temperature_accepts_numpy_numbers(temperature):
    logits = np.array([[1.0, 2.0, 4.0], [0.0, 0.5, 1.0]])  # ([0, 0, 1] would be a probability row: refused)
    np.testing.assert_allclose(ood_scores(logits, "entropy", temperature=temperature),
                               [slow_entropy(np.exp(row / 2.0)) for row in logits], rtol=0, atol=1e-12)


@pytest.mark.parametrize("bad", [True, np.bool_(True), 0, -1.0, float("inf"), float("nan"), "2", torch.tensor(2.0)])
def test_ood_temperature_refuses_non_positive_or_non_numbers(bad):
    with pytest.raises(InputError, match="Expected temperature to be a positive number"):
        ood_scores(np.array([[1.0, 2.0]]), temperature=bad)


@pytest.mark.parametrize("method", [3, None, ["entropy"]])
def test_ood_scores_method_must_be_a_name(method):
    with pytest.raises(InputError, match="Expected method to be the name of an OOD score"):
        ood_scores(np.array([[1.0, 2.0]]), method)


def test_fpr_at_tpr_reads_a_float32_level_as_the_decimal_it_stands_for():
    # 20 OOD scores 5..24, 20 in-distribution 0..19: TPR is exactly 0.85 at threshold 8 (17 of 20 OOD flagged), where
    # 12 of 20 in-distribution samples (8..19) are flagged. np.float32(0.85) is 0.8500000238: taken as such, it would
    # move on to the next threshold.
    in_scores, out_scores = np.arange(20.0), np.arange(20.0) + 5
    assert fpr_at_tpr(in_scores, out_scores, tpr=0.85) == pytest.approx(0.6)
    for level in (np.float32(0.85), np.float16(0.85), np.float64(0.85)):
        assert fpr_at_tpr(in_scores, out_scores, tpr=level) == pytest.approx(0.6)
    with pytest.raises(InputError, match="Expected tpr"):
        fpr_at_tpr(in_scores, out_scores, tpr=np.bool_(True))


def test_ood_metrics_of_scores_far_apart_warn_nothing_and_rank_right():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = ood_metrics(np.array([1e308, -1e308]), np.array([1.7e308]))
        energy = energy_score(np.array([[1e308, 1e308], [-1e308, 1e308]]))
    assert result["auroc"] == 1.0 and result["fpr_at_95_tpr"] == 0.0
    assert np.all(np.isfinite(energy)) and energy[0] == -1e308


# ---------------------------------------------------------------- probabilities whose rows do not sum to 1

ROUNDED = np.array([[0.3, 0.3, 0.39], [0.5, 0.2, 0.29], [0.1, 0.1, 0.79]])  # rows sum to 0.99
LABELS = [0, 1, 2]


def _meter_of(scores):
    meter = CalibrationMeter()
    meter.update(scores, LABELS)
    return meter.compute()


@pytest.mark.parametrize(
    "call",
    [
        lambda s: compute_metrics(s, LABELS),
        lambda s: ece_ew(s, LABELS),
        lambda s: ece_em(s, LABELS, n_bins=2),
        lambda s: nll(s, LABELS),
        lambda s: smooth_ece(s, LABELS),
        lambda s: smooth_reliability(s, LABELS),
        lambda s: reliability(s, LABELS),
        lambda s: bootstrap(s, LABELS, "ece-em", n_resamples=2),
        lambda s: top_label(s, LABELS),
        _meter_of,
    ],
    ids=["compute", "ece_ew", "ece_em", "nll", "smooth", "smooth_reliability", "reliability", "bootstrap", "top_label",
         "meter"],
)
def test_probabilities_that_do_not_sum_to_one_are_refused_not_read_as_logits(call):
    # (the meter decides once for the stream, at compute(): it cannot name one batch's row sums)
    with pytest.raises(InputError, match="rows sum to 1, got values in \\[0, 1\\] whose rows sum to (0.99|nearly 1)"):
        call(ROUNDED)
    with pytest.raises(InputError, match="percentages it seems"):
        call(ROUNDED * 100)


def test_non_negative_logits_far_from_probabilities_are_still_logits():
    logits = np.array([[0.0, 5.0], [3.0, 0.0], [1.0, 2.0]])
    labels = [1, 0, 0]
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert compute_metrics(logits, labels) == pytest.approx(compute_metrics(probs, labels), abs=1e-12)


def test_nll_of_certain_correct_predictions_is_positive_zero():
    value = nll(np.eye(3, dtype=int), [0, 1, 2])
    assert value == 0.0 and math.copysign(1.0, value) == 1.0


# ---------------------------------------------------------------- the binning helpers on odd arrays


def slow_bin_of(value, edges):
    for i in range(len(edges) - 1):
        if value <= edges[i + 1]:
            return i
    return len(edges) - 2


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: equal_mass_edges(["a", "b"], 2), "Expected confidences to be real numbers"),
        (lambda: equal_mass_edges([0.1, np.nan, 0.3], 2), "Expected confidences to be finite"),
        (lambda: equal_mass_edges(torch.empty(3, device="meta"), 2), "meta device"),
        (lambda: equal_mass_edges(np.array([0.1, 0.2], dtype=complex), 2), "real numbers"),
        (lambda: assign_bins([np.inf], [0.0, 1.0]), "Expected values to be finite"),
        (lambda: assign_bins([0.3], [[0.0, 1.0]]), "Expected edges to be 1-D with at least 2 values"),
        (lambda: assign_bins([0.3], [0.5]), "Expected edges to be 1-D with at least 2 values"),
        (lambda: assign_bins([0.3], [0.0, 0.5, 0.2, 1.0]), "Expected edges to be sorted"),
        (lambda: assign_bins([0.3], [0.0, np.nan, 1.0]), "Expected edges to be finite"),
        (lambda: assign_bins([0.3], ["0", "1"]), "Expected edges to be real numbers"),
        (lambda: bin_statistics([0.2], [1], edges=0.5), "Expected edges to be 1-D"),
        (lambda: bin_statistics([0.2], [1], edges=[]), "Expected edges to be 1-D"),
        (lambda: bin_statistics([0.2], ["1"]), "Expected correct to be real numbers"),
        (lambda: bin_statistics([0.2], [2.0]), "Expected correct to be in \\[0, 1\\]"),
        (lambda: bin_statistics([0.2], [-1]), "Expected correct to be in \\[0, 1\\]"),
        (lambda: bin_statistics([np.nan], [1]), "Expected confidences to be finite"),
        (lambda: bin_statistics([0.1, 0.2], [1]), "same length"),
        (lambda: sweep_bins([0.1, 0.2], [1]), "same length"),
        (lambda: sweep_bins([[0.1, 0.2]], [[1, 0]]), "Expected confidences to be 1-D"),
        (lambda: sweep_bins([0.1, np.nan, 0.3], [1, 0, 1]), "Expected confidences to be finite"),
        (lambda: sweep_bins([0.1, 0.3], [1, 3]), "Expected correct to be in \\[0, 1\\]"),
        (lambda: smooth_ece_of(["0.5"], [1]), "Expected confidences to be real numbers"),
        (lambda: smooth_ece_of([0.5, np.nan], [1, 0]), "Expected confidences to be finite"),
        (lambda: smooth_ece_of([0.5], [1, 0]), "same non-zero length"),
    ],
)
def test_binning_helpers_refuse_bad_arrays_with_one_clear_error(call, message):
    with pytest.raises(InputError, match=message):
        call()


def test_binning_helpers_take_bfloat16_and_bool_tensors_as_their_values():
    conf = torch.tensor([0.1, 0.5, 0.9, 0.3], dtype=torch.bfloat16)
    hits = torch.tensor([False, True, True, False])
    values, correct = conf.double().numpy(), hits.numpy().astype(float)
    np.testing.assert_array_equal(equal_mass_edges(conf, 2), equal_mass_edges(values, 2))
    stats = bin_statistics(conf, hits, n_bins=2)  # 0.5 is the first bin's upper edge: (0, 0.5], (0.5, 1]
    assert stats.counts.tolist() == [3, 1] and stats.accuracy.tolist() == [1 / 3, 1.0]
    assert sweep_bins(conf, hits) == sweep_bins(values, correct)
    assert smooth_ece_of(conf, hits) == smooth_ece_of(values, correct)
    assert smooth_ece_of(values, correct, bandwidth=np.int64(1)) == smooth_ece_of(values, correct, bandwidth=1.0)


def test_equal_mass_edges_stay_sorted_in_zero_one_for_values_outside_it():
    values = np.array([-0.5, 0.5, 2.0, 3.0, 1.0 + 2e-16])
    edges = equal_mass_edges(values, 3)
    assert edges[0] == 0.0 and edges[-1] == 1.0 and np.all(np.diff(edges) >= 0)
    stats = bin_statistics(values, np.ones(values.size), edges=edges)
    assert stats.counts.sum() == values.size
    assert assign_bins(values, edges).tolist() == [slow_bin_of(v, edges) for v in values]


# ---------------------------------------------------------------- names


@pytest.mark.parametrize("names", [5, b"nll", 1.5])
def test_metric_names_of_the_wrong_type_are_an_input_error(names):
    with pytest.raises(InputError, match="Expected metric names"):
        compute_metrics(np.eye(2), [0, 1], names=names)


@pytest.mark.parametrize("function", [metric_key, display_name])
def test_metric_name_helpers_refuse_non_strings(function):
    with pytest.raises(InputError, match="Expected a metric name"):
        function(5)


# ---------------------------------------------------------------- the streaming meter


def test_meter_takes_an_empty_list_batch_and_matches_the_batch_metrics_over_random_splits():
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(40, 3)) * 2
    labels = rng.integers(0, 3, 40)
    expected = compute_metrics(logits, labels, n_bins=4)
    for _ in range(5):
        cuts = np.sort(rng.choice(np.arange(0, 41), size=4))  # repeats give empty batches
        meter = CalibrationMeter(n_bins=np.int64(4))
        meter.update([], [])
        for part in np.split(np.arange(40), cuts):
            batch = logits[part]
            meter.update(batch.tolist() if part.size % 2 else torch.from_numpy(batch), labels[part])
        got = meter.compute()
        assert got.keys() == expected.keys()
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=1e-9), key


def test_meter_reports_ragged_list_batches_clearly():
    with pytest.raises(InputError, match="rows of equal length"):
        CalibrationMeter().update([[1.0, 2.0], [1.0]], [0, 1])


def test_meter_refuses_a_classwise_table_that_cannot_fit_before_allocating_it(monkeypatch):
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(100 * 2**20))
    logits = np.zeros((2, 1000))
    with pytest.raises(InputError, match="Expected n_bins to fit in memory, got 100000"):
        compute_metrics(logits, [0, 1], n_bins=100_000)
    with pytest.raises(InputError, match="Expected n_bins to fit in memory, got 100000"):
        CalibrationMeter(n_bins=100_000).update(logits, [0, 1])
    with pytest.raises(InputError, match="Expected n_bins to fit in memory, got 100000"):
        CalibrationMeter(n_bins=100_000).update(np.zeros((0, 1000)), [])
    meter = CalibrationMeter(n_bins=100_000, names="ece-em")  # no classwise table: nothing that large
    meter.update(logits, [0, 1])
    assert meter.compute()["ece_em"] == pytest.approx(abs(1e-3 - 0.5))


def test_bootstrap_refuses_a_progress_that_cannot_be_called_before_any_resample():
    from adacal.metrics import bootstrap

    probs = np.array([[0.7, 0.3], [0.4, 0.6], [0.9, 0.1]])
    with pytest.raises(InputError, match="Expected progress to be a callable progress"):
        bootstrap(probs, np.array([0, 1, 1]), ["ece-ew"], n_resamples=5, progress="bar")


@pytest.mark.parametrize("sync", ["no", 1, None])
def test_meter_sync_must_be_a_bool(sync):
    from adacal.metrics import CalibrationMeter

    with pytest.raises(InputError, match="Expected sync to be True or False"):
        CalibrationMeter(sync=sync)
