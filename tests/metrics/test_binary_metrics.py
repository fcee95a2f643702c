"""A binary model's positive-class metrics (`adacal.metrics.binary`) against scikit-learn on the same inputs and a
slow hand loop: brier-positive is `brier_score_loss`, half the multi-class Brier; the positive-class ECEs' bins are
`calibration_curve`'s points; K != 2 is refused in one line, never measured."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from adacal.errors import InputError
from adacal.metrics import (
    BINARY_METRIC_NAMES,
    CalibrationMeter,
    bin_statistics,
    bootstrap,
    brier,
    brier_positive,
    classwise_ece,
    compute_metrics,
    default_metric_names,
    display_name,
    ece_positive_em,
    ece_positive_ew,
    metric_key,
    positive_class,
)
from adacal.metrics.calibration import is_fraction_metric


def _binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, 2) probabilities, over-confident towards class 1, and labels drawn from a calibrated P(class 1)."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2.0, 2.0, n)
    labels = (rng.random(n) < truth).astype(np.int64)
    p1 = np.clip(truth ** 0.7, 0.0, 1.0)
    return np.column_stack([1.0 - p1, p1]), labels


def _slow_ece(probs: np.ndarray, outcomes: np.ndarray, edges: np.ndarray) -> float:
    """Σ_b (n_b / N) |mean y − mean p| by a loop over bins (b holds (edges[b], edges[b + 1]]; the first also 0)."""
    total = 0.0
    for b in range(edges.size - 1):
        low, high = edges[b], edges[b + 1]
        inside = [i for i, p in enumerate(probs) if (p > low or (b == 0 and p >= low)) and p <= high]
        if inside:
            total += len(inside) / probs.size * abs(np.mean(outcomes[inside]) - np.mean(probs[inside]))
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_brier_positive_is_sklearns_and_half_the_multiclass_brier(seed):
    probs, labels = _binary(2000, seed)
    value = brier_positive(probs, labels)
    assert value == pytest.approx(brier_score_loss(labels == 1, probs[:, 1]), abs=1e-15)
    assert brier(probs, labels) == pytest.approx(2.0 * value, rel=1e-12)


def test_brier_positive_from_logits_and_one_score_per_sample():
    probs, labels = _binary(500, 3)
    logits = np.log(np.clip(probs, 1e-300, None))
    expected = brier_score_loss(labels, probs[:, 1])
    assert brier_positive(logits, labels, scores_kind="logits") == pytest.approx(expected, abs=1e-12)
    assert brier_positive(probs[:, 1], labels) == pytest.approx(expected, abs=1e-15)  # P(class 1) alone


@pytest.mark.parametrize("seed", [0, 4])
def test_equal_width_bins_are_sklearns_uniform_calibration_curve(seed):
    probs, labels = _binary(3000, seed)
    stats = bin_statistics(probs[:, 1], labels == 1, n_bins=10, binning="equal-width")
    prob_true, prob_pred = calibration_curve(labels, probs[:, 1], n_bins=10, strategy="uniform")
    filled = stats.counts > 0
    np.testing.assert_allclose(stats.accuracy[filled], prob_true, atol=1e-12)
    np.testing.assert_allclose(stats.mean_confidence[filled], prob_pred, atol=1e-12)
    ece = sum(n / 3000 * abs(t - p) for n, t, p in zip(stats.counts[filled], prob_true, prob_pred))
    assert ece_positive_ew(probs, labels, n_bins=10) == pytest.approx(ece, abs=1e-12)


def test_equal_mass_bins_are_sklearns_quantile_calibration_curve_when_the_cuts_agree():
    # sklearn's quantile edges interpolate percentiles, adacal's cut half-way between neighbours (array_split):
    # with N = q·M + 1 distinct values both put q + 1 samples in the first bin and q in every other.
    probs, labels = _binary(8 * 250 + 1, 5)
    stats = bin_statistics(probs[:, 1], labels == 1, n_bins=8, binning="equal-mass")
    prob_true, prob_pred = calibration_curve(labels, probs[:, 1], n_bins=8, strategy="quantile")
    assert stats.counts.tolist() == [251] + [250] * 7
    np.testing.assert_allclose(stats.accuracy, prob_true, atol=1e-12)
    np.testing.assert_allclose(stats.mean_confidence, prob_pred, atol=1e-12)
    ece = sum(n / probs.shape[0] * abs(t - p) for n, t, p in zip(stats.counts, prob_true, prob_pred))
    assert ece_positive_em(probs, labels, n_bins=8) == pytest.approx(ece, abs=1e-12)


@pytest.mark.parametrize("binning, metric", [("equal-width", ece_positive_ew), ("equal-mass", ece_positive_em)])
@pytest.mark.parametrize("n_bins", [1, 3, 15])
def test_positive_eces_equal_a_slow_loop(binning, metric, n_bins):
    probs, labels = _binary(400, n_bins)
    p1, outcomes = probs[:, 1], (labels == 1).astype(float)
    if binning == "equal-width":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    else:  # half-way between neighbours at the np.array_split cuts (docs/conventions.md, "Bins")
        ordered = np.sort(p1)
        cuts = np.cumsum([part.size for part in np.array_split(ordered, n_bins)])[:-1]
        edges = np.concatenate([[0.0], (ordered[cuts - 1] + ordered[cuts]) / 2.0, [1.0]])
    assert metric(probs, labels, n_bins=n_bins) == pytest.approx(_slow_ece(p1, outcomes, edges), abs=1e-12)


def test_hand_worked_values():
    probs, labels = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]], [0, 1, 1, 1]
    # p1 = 0.1, 0.1, 0.8, 0.8 against y = 0, 1, 1, 1: (0.01 + 0.81 + 0.04 + 0.04) / 4
    assert brier_positive(probs, labels) == pytest.approx(0.225)
    # two bins: |0.5 − 0.1| and |1 − 0.8|, half the samples each
    assert ece_positive_ew(probs, labels, n_bins=2) == pytest.approx(0.3)
    assert ece_positive_em(probs, labels, n_bins=2) == pytest.approx(0.3)
    # a perfectly calibrated P(class 1) in every bin: 0
    assert ece_positive_ew([[0.5, 0.5]] * 4, [0, 1, 0, 1], n_bins=5) == 0.0


def test_positive_ece_is_not_the_top_label_ece_and_equals_classwise_for_two_classes():
    probs, labels = _binary(3000, 6)
    values = compute_metrics(probs, labels, names="ece-ew,ece-positive-ew")
    assert abs(values["ece_ew"] - values["ece_positive_ew"]) > 1e-3  # another quantity binned
    # Kull et al.'s classwise ECE of two classes: class 0's bins mirror class 1's, so it is the positive-class ECE
    assert classwise_ece(probs, labels) == pytest.approx(values["ece_positive_ew"], abs=1e-12)


def test_relabelling_swaps_the_positive_class():
    probs, labels = _binary(1000, 7)
    swapped = probs[:, ::-1]
    assert brier_positive(swapped, 1 - labels) == pytest.approx(brier_positive(probs, labels), abs=1e-15)
    assert ece_positive_ew(swapped, 1 - labels) == pytest.approx(ece_positive_ew(probs, labels), abs=1e-12)


@pytest.mark.parametrize("name", BINARY_METRIC_NAMES)
@pytest.mark.parametrize("k", [3, 10])
def test_other_numbers_of_classes_are_refused_in_one_line(name, k):
    rng = np.random.default_rng(k)
    probs, labels = rng.dirichlet(np.ones(k), 50), rng.integers(0, k, 50)
    from adacal.metrics import METRICS

    with pytest.raises(InputError, match=rf"Expected a binary model's scores .*got {k} classes") as caught:
        METRICS.get(name)(probs, labels)
    assert "\n" not in str(caught.value)
    with pytest.raises(InputError, match="binary"):
        compute_metrics(probs, labels, names=name)
    with pytest.raises(InputError, match="binary"):
        positive_class(probs, labels)


def test_default_names_add_them_for_two_classes_only():
    assert default_metric_names(2)[-3:] == BINARY_METRIC_NAMES
    assert not set(BINARY_METRIC_NAMES) & set(default_metric_names(3))
    assert not set(BINARY_METRIC_NAMES) & set(default_metric_names(None))
    assert [display_name(name) for name in BINARY_METRIC_NAMES] == ["Brier-Positive", "ECE-Positive-EW",
                                                                     "ECE-Positive-EM"]
    assert [metric_key(name) for name in BINARY_METRIC_NAMES] == ["brier_positive", "ece_positive_ew",
                                                                  "ece_positive_em"]
    assert not is_fraction_metric("brier-positive") and is_fraction_metric("ece-positive-em")


def test_bootstrap_intervals_and_the_meter_work_as_for_every_metric():
    probs, labels = _binary(600, 8)
    names = ",".join(BINARY_METRIC_NAMES)
    intervals = bootstrap(probs, labels, metric_names=names, n_resamples=40, seed=1)
    point = compute_metrics(probs, labels, names=names)
    for key, interval in intervals.items():
        assert interval["low"] <= interval["high"] and interval["std"] > 0
    # the resample of every row once is the data itself: the same kernel, the same value
    rng = np.random.default_rng(1)
    index = rng.integers(0, 600, 600)
    again = compute_metrics(probs[index], labels[index], names=names)
    from adacal.metrics import prepare_predictions
    from adacal.metrics.calibration import compute_prepared

    taken = compute_prepared(prepare_predictions(probs, labels).take(index), BINARY_METRIC_NAMES, 15)
    assert taken == pytest.approx(again, abs=1e-12)
    meter = CalibrationMeter(names=names)
    for start in range(0, 600, 250):
        meter.update(probs[start:start + 250], labels[start:start + 250])
    assert meter.compute() == pytest.approx(point, abs=1e-12)
    meter = CalibrationMeter(names="brier-positive")
    with pytest.raises(InputError, match="got 3 classes"):
        meter.update(np.full((2, 3), 1 / 3), [0, 2])
