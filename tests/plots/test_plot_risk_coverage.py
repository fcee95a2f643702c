"""adacal.plots.risk_coverage: the drawn curves are the core's risk–coverage curve (checked against a loop over the
thresholds), the oracle and random references are the exact ones, AURC in the legend, inputs side by side."""

import numpy as np
import pytest

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.interpretation.confidence import TopLabelPredictions
from adacal.metrics import aurc
from adacal.metrics.selective import oracle_aurc, risk_coverage_curve
from adacal.plots.risk_coverage import (
    RiskCoverageInput,
    curve_of_predictions,
    oracle_curve,
    risk_coverage_figure,
    risk_coverage_inputs,
)
from adacal.predictions import Predictions


def _scores(n=400, k=5, seed=0, decimals=None):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 1.2
    probs = softmax(logits)
    if decimals is not None:  # many tied confidences
        probs = np.round(probs, decimals)
        probs /= probs.sum(axis=1, keepdims=True)
    return probs, labels


def _loop_curve(probs, labels):
    """The risk–coverage curve by its definition: accept every sample whose confidence is ≥ each distinct one."""
    confidence = probs.max(axis=1)
    wrong = probs.argmax(axis=1) != labels
    coverage, risk = [], []
    for t in sorted(set(confidence.tolist()), reverse=True):
        accepted = confidence >= t
        coverage.append(accepted.mean())
        risk.append(wrong[accepted].mean())
    return np.array(coverage), np.array(risk)


def _lines(fig):
    (ax,) = fig.axes
    assert ax.get_label() == "risk-coverage"
    return {line.get_gid(): line for line in ax.lines}


@pytest.mark.parametrize("decimals", [None, 2])
def test_drawn_curve_is_the_core_curve_and_the_definition(decimals):
    probs, labels = _scores(decimals=decimals)
    curve = risk_coverage_curve(probs, labels)
    line = _lines(risk_coverage_figure([("model", curve)]))["risk-coverage:model"]
    np.testing.assert_array_equal(line.get_xdata(), curve.coverage)
    np.testing.assert_array_equal(line.get_ydata(), curve.risk)
    coverage, risk = _loop_curve(probs, labels)
    np.testing.assert_allclose(line.get_xdata(), coverage, rtol=0, atol=1e-12)
    np.testing.assert_allclose(line.get_ydata(), risk, rtol=0, atol=1e-12)
    # drawn as steps ending at each point: the area under them is the AURC
    x = np.r_[0.0, line.get_xdata()]
    assert line.get_drawstyle() == "steps-pre"
    assert np.sum(np.diff(x) * line.get_ydata()) == pytest.approx(aurc(probs, labels), abs=1e-12)
    if decimals is not None:
        assert curve.coverage.size < len(labels) / 2  # ties grouped


def test_oracle_and_random_references():
    probs, labels = _scores(n=300, seed=3)
    wrong = probs.argmax(axis=1) != labels
    n, c = len(labels), int((~wrong).sum())
    lines = _lines(risk_coverage_figure([("m", risk_coverage_curve(probs, labels))]))
    oracle, random = lines["oracle:m"], lines["random:m"]
    # the oracle ranks every right answer first: its risk at coverage i/N, from that ranking
    ranked = np.sort(wrong)  # False (right) first
    risk_at = np.r_[0.0, np.cumsum(ranked) / np.arange(1, n + 1)]
    i = np.rint(np.asarray(oracle.get_xdata()) * n).astype(int)
    np.testing.assert_allclose(np.asarray(oracle.get_xdata()) * n, i, atol=1e-9)  # coverages the oracle reaches
    np.testing.assert_allclose(oracle.get_ydata(), risk_at[i], atol=1e-12)
    assert i[0] == 0 and c in i and i[-1] == n and oracle.get_linestyle() == "--"
    assert random.get_linestyle() == ":"
    np.testing.assert_allclose(random.get_xdata(), [0.0, 1.0])
    np.testing.assert_allclose(random.get_ydata(), [wrong.mean()] * 2, atol=1e-15)
    labels_text = [line.get_label() for line in (lines["risk-coverage:m"], oracle, random)]
    assert labels_text[0] == f"m: AURC {100 * aurc(probs, labels):.2f} %"
    assert labels_text[1] == f"m, oracle: AURC {100 * oracle_aurc(n, c):.2f} %"
    assert labels_text[2] == f"m, random: risk {100 * wrong.mean():.2f} %"


@pytest.mark.parametrize("n, c", [(4, 2), (5, 5), (3, 0), (1000, 917)])
def test_oracle_curve_edges(n, c):
    coverage, risk = oracle_curve(n, c)
    expected = np.array([max(0, i - c) / i if i else (1.0 if c == 0 else 0.0) for i in np.rint(coverage * n)])
    np.testing.assert_allclose(risk, expected, atol=1e-15)
    assert coverage[0] == 0.0 and coverage[-1] == 1.0 and np.all(np.diff(coverage) > 0)
    assert risk[-1] == pytest.approx((n - c) / n)


def test_two_inputs_side_by_side_in_their_colours():
    first, second = _scores(seed=1), _scores(seed=2, decimals=1)
    curves = [risk_coverage_curve(*first), risk_coverage_curve(*second)]
    fig = risk_coverage_figure([RiskCoverageInput("CE", curves[0], "ce"), ("AdaFocal", curves[1])])
    lines = _lines(fig)
    assert set(lines) == {f"{kind}:{name}" for kind in ("risk-coverage", "oracle", "random")
                          for name in ("CE", "AdaFocal")}
    for name, curve in zip(("CE", "AdaFocal"), curves):
        np.testing.assert_array_equal(lines[f"risk-coverage:{name}"].get_ydata(), curve.risk)
        colors = {lines[f"{kind}:{name}"].get_color() for kind in ("risk-coverage", "oracle", "random")}
        assert len(colors) == 1
    assert lines["risk-coverage:CE"].get_color() != lines["risk-coverage:AdaFocal"].get_color()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(legend) == 6 and any(t.startswith("AdaFocal: AURC ") for t in legend)


def test_top_label_pairs_and_class_scores_give_the_same_curve():
    probs, labels = _scores(seed=4, decimals=2)
    pairs = TopLabelPredictions(probs.max(axis=1), probs.argmax(axis=1) == labels)
    a, b = curve_of_predictions(pairs), curve_of_predictions(Predictions(probs, labels))
    np.testing.assert_array_equal(a.accepted, b.accepted)
    np.testing.assert_array_equal(a.errors, b.errors)


def test_inputs_labelled_by_file_stem_or_labels(tmp_path):
    probs, labels = _scores()
    items = risk_coverage_inputs([(tmp_path / "a" / "x.npz", Predictions(probs, labels)),
                                  (tmp_path / "b" / "x.npz", Predictions(probs, labels))])
    assert [item.label for item in items] == ["x (a)", "x (b)"]  # a repeated name told apart by folder
    named = risk_coverage_inputs([(tmp_path / "x.npz", Predictions(probs, labels))], labels=["mine"])
    assert named[0].label == "mine"


@pytest.mark.parametrize("bad, match", [
    ([], "at least one input"),
    ("curve", "a list of risk–coverage inputs"),
    ([("a", np.zeros(3))], "curve from risk_coverage_curve"),
    ([object()], "RiskCoverageInput or"),
])
def test_bad_figure_input_is_one_line(bad, match):
    with pytest.raises(InputError, match=match) as caught:
        risk_coverage_figure(bad)
    assert "\n" not in str(caught.value)


def test_labels_count_must_match(tmp_path):
    probs, labels = _scores()
    with pytest.raises(InputError, match="one label per INPUT"):
        risk_coverage_inputs([(tmp_path / "x.npz", Predictions(probs, labels))], labels=["a", "b"])
