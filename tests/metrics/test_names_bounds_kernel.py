"""Metric names (display, JSON key, accepted spellings), memory bounds on bins and bootstrap, the one
calibration-error kernel and the one top-1 helper."""

import numpy as np
import pytest

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.metrics import (
    DISPLAY_NAMES,
    METRIC_NAMES,
    SELECTIVE_METRIC_NAMES,
    BinStatistics,
    bin_statistics,
    bootstrap,
    calibration_error,
    compute_metrics,
    display_name,
    ece_em,
    metric_key,
    resolve_metric_names,
    top_label,
)
from adacal.metrics import allocation


def test_every_metric_has_one_display_name_and_one_key_from_any_spelling():
    from adacal.metrics import BINARY_METRIC_NAMES

    assert set(DISPLAY_NAMES) == set(METRIC_NAMES) | set(SELECTIVE_METRIC_NAMES) | set(BINARY_METRIC_NAMES)
    for name in DISPLAY_NAMES:
        key, shown = metric_key(name), display_name(name)
        assert key == name.replace("-", "_") and key.islower()
        for spelling in (name, key, shown, shown.lower(), name.upper(), f" {key} "):
            assert resolve_metric_names(spelling) == (name,)
            assert metric_key(spelling) == key and display_name(spelling) == shown
    assert display_name("ece_em") == "ECE-EM" and metric_key("ECE-EM") == "ece_em"
    assert resolve_metric_names("ECE-EM,ece_ew,nll") == ("ece-em", "ece-ew", "nll")
    assert resolve_metric_names(["ece-em", "ECE_EM", "ece_em"]) == ("ece-em",)


def stats_of(counts, conf, acc):
    counts = np.asarray(counts)
    return BinStatistics(np.linspace(0, 1, len(counts) + 1), counts, np.asarray(conf, float), np.asarray(acc, float))


def test_calibration_error_kernel_by_hand():
    # bins: 2 samples at conf .9 acc .5; 6 at conf .3 acc .5 (gap .4 and −.2); an empty bin
    stats = stats_of([2, 6, 0], [0.9, 0.3, 0.0], [0.5, 0.5, 0.0])
    assert calibration_error(stats) == pytest.approx(0.25 * 0.4 + 0.75 * 0.2)
    assert calibration_error(stats, "l2") == pytest.approx(np.sqrt(0.25 * 0.16 + 0.75 * 0.04))
    assert calibration_error(stats, "max") == pytest.approx(0.4)
    debiased = 0.25 * (0.16 - 0.25 / 1) + 0.75 * (0.04 - 0.25 / 5)
    assert calibration_error(stats, "l2", debias=True) == pytest.approx(np.sqrt(max(debiased, 0.0)))
    stats = stats_of([4, 4], [0.9, 0.2], [0.25, 0.75])
    assert calibration_error(stats, "l2", debias=True) == pytest.approx(
        np.sqrt(0.5 * (0.65**2 - 0.1875 / 3) + 0.5 * (0.55**2 - 0.1875 / 3))
    )
    assert calibration_error(stats_of([0, 0], [0, 0], [0, 0]), "max") == 0.0
    with pytest.raises(InputError, match="norm"):
        calibration_error(stats, "l3")
    with pytest.raises(InputError, match="debias"):
        calibration_error(stats, "l1", debias=True)


def test_kernel_serves_ece_em_and_top_label_serves_binning():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(500, 4)) * 2
    labels = rng.integers(0, 4, size=500)
    top = top_label(logits, labels)
    probs = softmax(logits)
    np.testing.assert_array_equal(top.predicted_labels, probs.argmax(axis=1))
    np.testing.assert_array_equal(top.confidences, probs.max(axis=1))
    np.testing.assert_array_equal(top.correct, (probs.argmax(axis=1) == labels).astype(float))
    assert top.assumed == "logits"
    stats = bin_statistics(top.confidences, top.correct, n_bins=15, binning="equal-mass")
    assert calibration_error(stats) == pytest.approx(ece_em(logits, labels), abs=1e-15)
    # float32 probabilities without labels: no copy of the matrix; rows summing to 1 within float32 rounding are used
    # as given, so the confidences are the float32 maxima, the same as their float64 copy's
    probs32 = probs.astype(np.float32)
    assert np.abs(probs32.astype(np.float64).sum(axis=1) - 1.0).max() > 4 * np.finfo(np.float64).eps  # not float64's
    unlabelled = top_label(probs32)
    assert unlabelled.correct is None and unlabelled.assumed == "probs"
    np.testing.assert_array_equal(unlabelled.predicted_labels, probs32.argmax(axis=1))
    np.testing.assert_array_equal(unlabelled.confidences, probs32.max(axis=1).astype(np.float64))
    np.testing.assert_array_equal(top_label(probs32.astype(np.float64)).confidences, unlabelled.confidences)
    with pytest.raises(InputError, match="finite"):
        top_label(np.array([[0.5, np.nan]]))


def test_huge_bin_counts_and_bootstraps_are_refused_before_allocating(monkeypatch):
    probs = softmax(np.random.default_rng(1).normal(size=(40, 3)))
    labels = np.arange(40) % 3
    with pytest.raises(InputError, match=r"Expected n_bins to fit in memory, got 1000000000000: .* need about .*TiB"):
        ece_em(probs, labels, n_bins=10**12)
    # n_bins > N is fine
    assert 0 <= ece_em(probs, labels, n_bins=1000) <= 1
    # classwise ECE needs K × n_bins cells: refused with a small memory, allowed with enough
    monkeypatch.setattr(allocation, "available_memory", lambda: 10**6)
    with pytest.raises(InputError, match="for 3 classes"):
        compute_metrics(probs, labels, n_bins=3000, names=["classwise-ece"])
    with pytest.raises(InputError, match="Expected n_resamples to fit in memory"):
        bootstrap(probs, labels, ["ece-em", "nll"], n_resamples=10**6)
    monkeypatch.undo()
    assert compute_metrics(probs, labels, n_bins=3000, names=["classwise-ece"])["classwise_ece"] >= 0


def test_bootstrap_progress_callback_sees_every_resample():
    probs = softmax(np.random.default_rng(2).normal(size=(60, 3)))
    labels = np.arange(60) % 3
    seen = []
    def progress(done, total):
        seen.append((done, total))

    with_progress = bootstrap(probs, labels, ["ece-em"], n_resamples=7, progress=progress)
    assert seen == [(i, 7) for i in range(1, 8)]
    assert with_progress == bootstrap(probs, labels, ["ece-em"], n_resamples=7)


@pytest.mark.parametrize("seed", range(3))
def test_sorted_bin_statistics_equal_the_per_sample_bincount(seed):
    from adacal.metrics.binning import equal_width_edges, sorted_bin_statistics
    from adacal.metrics.calibration import sorted_with_cumulative_hits

    rng = np.random.default_rng(seed)
    conf = np.round(rng.random(3000), 2)  # many ties, values exactly on edges too
    conf[:5] = [0.0, -0.0, 1.0, 0.2, 0.4]
    correct = (rng.random(3000) < conf).astype(float)
    ordered, cum = sorted_with_cumulative_hits(conf, correct)
    np.testing.assert_array_equal(ordered, np.sort(conf))
    for edges in (equal_width_edges(10), equal_width_edges(7), np.array([0.0, 0.2, 0.2, 0.5, 1.0])):
        fast = sorted_bin_statistics(ordered, cum, edges)
        slow = bin_statistics(conf, correct, edges=edges)
        np.testing.assert_array_equal(fast.counts, slow.counts)
        np.testing.assert_array_equal(fast.accuracy, slow.accuracy)
        np.testing.assert_allclose(fast.mean_confidence, slow.mean_confidence, rtol=1e-13, atol=0)
    # non-binary targets and out-of-range confidences take the argsort path, with the same results
    soft = rng.random(3000)
    ordered, cum = sorted_with_cumulative_hits(conf * 3 - 1, soft)
    order = np.argsort(conf * 3 - 1, kind="stable")
    np.testing.assert_array_equal(ordered, (conf * 3 - 1)[order])
    np.testing.assert_allclose(cum[1:], np.cumsum(soft[order]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_row_top_is_argmax_and_max_with_ties_to_the_lowest_class(dtype):
    from adacal.metrics import row_top

    rng = np.random.default_rng(5)
    values = rng.normal(size=(300, 7)).astype(dtype)
    values[:50, 4] = values[:50, 2] = 9.0  # tied maxima: the lower class wins
    values[50:60] = 0.25  # a whole row tied
    index, top = row_top(values)
    assert index.dtype == np.int64 and top.dtype == np.float64
    np.testing.assert_array_equal(index, values.argmax(axis=1))
    np.testing.assert_array_equal(top, values.max(axis=1).astype(np.float64))
    assert (index[:50] == 2).all() and (index[50:60] == 0).all()
    # a non-contiguous view (every other column) gives the same as its copy
    view = values[:, ::2]
    np.testing.assert_array_equal(row_top(view)[1], row_top(np.ascontiguousarray(view))[1])


def test_one_kernel_serves_temperature_scaling_meter_and_ood_scores():
    from adacal.metrics.binning import top1_ece
    from adacal.metrics import CalibrationMeter, classwise_ece, ece_ew, max_prob_score

    rng = np.random.default_rng(8)
    logits = rng.normal(size=(400, 5)) * 2
    labels = rng.integers(0, 5, size=400)
    top = top_label(logits, labels)
    for binning, metric in (("equal-mass", ece_em), ("equal-width", ece_ew)):
        # the calibrator's objective and the metric: same statistics, same kernel
        assert top1_ece(top.confidences, top.correct, n_bins=15, binning=binning) == pytest.approx(
            metric(logits, labels), abs=1e-15
        )
    # by hand: one bin holding confidences .9, .7 with one hit: |0.8 − 0.5| = 0.3
    assert top1_ece(np.array([0.9, 0.7]), np.array([1.0, 0.0]), n_bins=1, binning="equal-width") == pytest.approx(0.3)
    meter = CalibrationMeter(names="classwise-ece", n_bins=10)
    meter.update(logits[:150], labels[:150])
    meter.update(logits[150:], labels[150:])
    assert meter.compute()["classwise_ece"] == pytest.approx(classwise_ece(logits, labels, n_bins=10), abs=1e-12)
    np.testing.assert_array_equal(max_prob_score(logits), 1.0 - softmax(logits).max(axis=1))


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        # None labels used to score every sample against class 0 (top_label's placeholder): a silent wrong number
        (np.eye(3) * 2.0, None, "Expected labels .* got None"),
        ("meta", [0, 1, 2], "meta device"),
        ([[1.0, 2.0], [1.0]], [0, 1], "nested sequences of different lengths"),
        (np.eye(3), np.array([0, 1, 2], dtype=complex), "labels to be integers, got dtype complex128"),
        (np.eye(3), np.array([0.0, 1.0, 1e20]), r"labels in \[0, 2\], got values from 0 to 1e\+20"),
        (np.eye(3), np.array([0.0, 1.0, -1e20]), r"labels in \[0, 2\], got values from -1e\+20 to 1"),
        (np.eye(3), np.array([0, 1, 2**63 + 5], dtype=np.uint64), r"labels in \[0, 2\], got values from 0 to 9.22"),
    ],
)
def test_inputs_that_used_to_crash_or_mislead_are_one_sentence_errors(scores, labels, match):
    import warnings

    import torch

    from adacal.metrics import CalibrationMeter, smooth_ece

    if isinstance(scores, str):
        scores = torch.empty(3, 3, device="meta")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy cast warning on the way to the error either
        for metric in (ece_em, smooth_ece, compute_metrics, CalibrationMeter().update):
            with pytest.raises(InputError, match=match):
                metric(scores, labels)


def test_a_tiny_smoothing_bandwidth_is_refused_before_allocating_its_grid():
    from adacal.metrics import smooth_ece

    scores, labels = np.eye(3) * 2.0, [0, 1, 2]
    with pytest.raises(InputError, match="bandwidth to fit in memory, got 1e-09: the smoothing grid"):
        smooth_ece(scores, labels, bandwidth=1e-9)
    assert 0.0 < smooth_ece(scores, labels, bandwidth=1e-4) < 1.0
