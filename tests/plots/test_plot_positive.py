"""A binary model's positive-class reliability diagram (`panel_from_scores(positive=True)`, `reliability(positive=
True)`, `plot reliability --positive`): its bars are scikit-learn's `calibration_curve` of P(class 1) on the same
inputs, its title's ECEs are evaluate's ECE-Positive-EM/-EW, and its axes and legend name class 1."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from adacal.errors import InputError
from adacal.metrics import compute_metrics
from adacal.plots import ReliabilityRequest, reliability, reliability_diagram, reliability_inputs
from adacal.plots.reliability_panels import panel_from_scores


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(11)
    truth = rng.beta(2.0, 3.0, 800)
    labels = (rng.random(800) < truth).astype(np.int64)
    p1 = truth ** 0.8
    return np.column_stack([1.0 - p1, p1]), labels


def test_positive_panel_bars_are_sklearns_calibration_curve(binary):
    probs, labels = binary
    panel = panel_from_scores(probs, labels, n_bins=10, positive=True)
    prob_true, prob_pred = calibration_curve(labels, probs[:, 1], n_bins=10, strategy="uniform")
    filled = panel.stats.counts > 0
    np.testing.assert_allclose(panel.stats.accuracy[filled], prob_true, atol=1e-12)
    np.testing.assert_allclose(panel.stats.mean_confidence[filled], prob_pred, atol=1e-12)
    expected = compute_metrics(probs, labels, n_bins=10, names="ece-positive-em,ece-positive-ew")
    assert (panel.ece_em, panel.ece_ew) == (expected["ece_positive_em"], expected["ece_positive_ew"])
    assert panel.positive
    top = panel_from_scores(probs, labels, n_bins=10)  # the top-label panel bins max(p, 1 − p): another diagram
    assert not np.allclose(top.stats.mean_confidence, panel.stats.mean_confidence)


def test_positive_diagram_names_class_one_on_its_axes_title_and_legend(binary):
    probs, labels = binary
    figure = reliability_diagram([panel_from_scores(probs, labels, label="m", positive=True)])
    main = next(ax for ax in figure.axes if ax.get_label() == "reliability:0")
    hist = next(ax for ax in figure.axes if ax.get_label() == "histogram:0")
    assert main.get_ylabel() == "Frequency of class 1 (%)" and hist.get_xlabel() == "Predicted P(class 1) (%)"
    assert "ECE-Positive-EM" in main.get_title() and "ECE-Positive-EW" in main.get_title()
    assert "Class-1 rate" in main.get_title() and "Acc." not in main.get_title()
    entries = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
    assert "Frequency of class 1 (15 equal-width bins)" in entries and "Average P(class 1)" in entries
    assert not any(entry.startswith("Accuracy") for entry in entries)


def test_one_call_positive_diagram(binary):
    probs, labels = binary
    display = reliability(probs, labels, n_bins=8, strategy="quantile", positive=True)
    prob_true, _ = calibration_curve(labels, probs[:, 1], n_bins=8, strategy="quantile")
    assert display.stats.counts.sum() == 800 and display.stats.n_bins == 8
    # adacal's equal-mass cuts are half-way between neighbours, sklearn's at interpolated percentiles: at most one
    # sample of 100 per bin moves at each cut
    assert np.abs(display.stats.accuracy - prob_true).max() < 0.02
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    reliability(probs, labels, ax=ax, positive=True)
    assert ax.get_xlabel() == "Predicted P(class 1) (%)"


def test_other_numbers_of_classes_are_refused(binary, tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 40)
    labels = rng.integers(0, 3, 40)
    with pytest.raises(InputError, match="got 3 classes: draw the top-label diagram"):
        panel_from_scores(probs, labels, positive=True)
    path = tmp_path / "k3.npz"
    np.savez(path, probs=probs, labels=labels)
    with pytest.raises(InputError, match="holds scores of 3 classes; drop --positive"):
        reliability_inputs(ReliabilityRequest([path], positive=True))
