"""Top-label `(confidence, correct)` inputs (adacal.metrics.confidences, adacal.evaluation.evaluate_confidences):
hand-worked figures, a loop transcription, the same bits as the (N, K) path for confidences derived from it, and
the refusals of what is no confidence or no correctness."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.evaluation import evaluate_confidences, evaluate_predictions
from adacal.metrics import compute_metrics, prepare_confidences, top_label_metrics
from adacal.metrics.confidences import check_confidences, check_correct, resolve_top_label_metrics

from slow_metrics import l1, mass_edges, width_edges

CONF = [0.95, 0.85, 0.62, 0.58, 0.33, 0.30]
CORRECT = [1, 0, 1, 1, 0, 1]


def test_hand_worked_figures():
    """Five equal-width bins: (0.8, 1]: 0.95, 0.85, right 1 of 2 -> |0.9 - 0.5| = 0.4, weight 2/6; (0.6, 0.8]: 0.62
    right -> 0.38; (0.4, 0.6]: 0.58 right -> 0.42; (0.2, 0.4]: 0.33 wrong, 0.30 right -> |0.315 - 0.5| = 0.185,
    weight 2/6. ECE-EW = (0.8 + 0.38 + 0.42 + 0.37) / 6; MCE 0.42; error 2/6; Brier-top = mean (p - c)^2; NLL of
    correctness = -mean(c log p + (1 - c) log(1 - p))."""
    metrics = top_label_metrics(CONF, CORRECT, n_bins=5)
    assert metrics["ece_ew"] == pytest.approx(1.97 / 6, abs=1e-15)
    assert metrics["mce"] == pytest.approx(0.42, abs=1e-15)
    assert metrics["error"] == pytest.approx(2 / 6, abs=1e-15)
    brier = (0.05**2 + 0.85**2 + 0.38**2 + 0.42**2 + 0.33**2 + 0.70**2) / 6
    assert metrics["brier_top"] == pytest.approx(brier, abs=1e-15)
    nll = -(math.log(0.95) + math.log(0.15) + math.log(0.62) + math.log(0.58) + math.log(0.67) + math.log(0.30)) / 6
    assert metrics["nll_correct"] == pytest.approx(nll, abs=1e-14)
    # Correct answers (0.95, 0.62, 0.58, 0.30) against wrong ones (0.85, 0.33): 4 of the 8 pairs ranked right
    # (0.95 above both; 0.62 and 0.58 above 0.33 only; 0.30 above neither).
    assert metrics["auroc_correct"] == pytest.approx(4 / 8, abs=1e-15)


def test_answers_under_half_confidence_are_not_flipped():
    """The issue's case: read as a binary model's P(class 1), a 0.3-confidence right answer becomes a confident
    prediction of class 0 (confidence 0.7) that is wrong; as confidences, it stays a 0.3 answer that was right."""
    conf = np.array([0.3, 0.3, 0.3, 0.3, 0.9, 0.9])
    correct = np.array([1, 0, 0, 0, 1, 1])
    metrics = top_label_metrics(conf, correct, n_bins=10, names="ece-ew,error")
    assert metrics["error"] == pytest.approx(3 / 6)
    # (0.2, 0.3]: |0.3 - 0.25| * 4/6; (0.8, 0.9]: |0.9 - 1| * 2/6
    assert metrics["ece_ew"] == pytest.approx(0.05 * 4 / 6 + 0.1 * 2 / 6, abs=1e-15)
    as_binary = compute_metrics(conf, correct, n_bins=10, names="ece-ew,error")
    assert as_binary["error"] != pytest.approx(metrics["error"])  # the misreading this input used to get


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binned_ece_matches_a_loop_transcription(seed):
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.05, 1.0, 700)
    correct = rng.uniform(size=700) < conf ** 1.5
    metrics = top_label_metrics(conf, correct, n_bins=15)
    targets = correct.astype(float).tolist()
    assert metrics["ece_ew"] == pytest.approx(l1(conf.tolist(), targets, width_edges(15)), abs=1e-12)
    assert metrics["ece_em"] == pytest.approx(l1(conf.tolist(), targets, mass_edges(conf.tolist(), 15)), abs=1e-12)
    assert metrics["auroc_correct"] == pytest.approx(roc_auc_score(correct, conf), abs=1e-15)
    brier = sum((p - c) ** 2 for p, c in zip(conf.tolist(), targets)) / 700
    assert metrics["brier_top"] == pytest.approx(brier, abs=1e-12)


@pytest.mark.parametrize("k", [2, 10])
def test_confidences_derived_from_class_probabilities_give_the_same_bits(k):
    """confidences = max prob, correct = argmax == label: every top-label metric both paths compute is the same
    float, bit for bit; so are the bootstrap intervals of the same seed."""
    rng = np.random.default_rng(k)
    probs = softmax(rng.normal(scale=2.0, size=(600, k)))
    labels = rng.integers(0, k, 600)
    conf, correct = probs.max(axis=1), probs.argmax(axis=1) == labels
    ours = evaluate_confidences(conf, correct, bootstrap=20, seed=3,
                                metric_names="error,ece-ew,ece-em,ece-debias,ece-sweep-em,ece-smooth,mce")
    theirs = evaluate_predictions(probs, labels, bootstrap=20, seed=3,
                                  metric_names="error,ece-ew,ece-em,ece-debias,ece-sweep-em,ece-smooth,mce")
    assert ours["metrics"] == theirs["metrics"]
    assert ours["bootstrap"] == theirs["bootstrap"]
    assert ours["bins"] == theirs["bins"]
    assert ours["ece_debias_squared"] == theirs["ece_debias_squared"]
    assert "num_classes" not in ours and ours["assumed_input"] == "confidences"


def test_percentages_with_a_margin_and_stray_values_refused():
    values, notes = check_confidences([73, 91.5, 100, 0.5])
    assert values.tolist() == [0.73, 0.915, 1.0, 0.005] and "percentages" in notes[0]
    with pytest.raises(InputError, match=r"1 of 4 values are not \(row 2: 1.5\)"):
        check_confidences([0.7, 0.9, 1.5, 0.2])
    with pytest.raises(InputError, match=r"row 1: -0.1"):
        check_confidences([0.7, -0.1, 0.9])
    with pytest.raises(InputError, match="finite"):
        check_confidences([0.7, float("nan")])
    with pytest.raises(InputError, match="1-D"):
        check_confidences([[0.7, 0.3], [0.2, 0.8]])


def test_correctness_spellings_and_refusals():
    assert check_correct([True, False]).tolist() == [True, False]
    assert check_correct([1, 0, 1.0]).tolist() == [True, False, True]
    assert check_correct(np.array(["True", " false", "1", "NO"])).tolist() == [True, False, True, False]
    with pytest.raises(InputError, match=r"1 of 3 values are not \(row 1: 2"):
        check_correct([1, 2, 0])
    with pytest.raises(InputError, match=r"row 0: 'maybe'"):
        check_correct(np.array(["maybe", "true"]))
    with pytest.raises(InputError, match=r"one value per confidence \(3\), got 2"):
        prepare_confidences([0.5, 0.6, 0.7], [1, 0])


def test_metrics_that_need_every_class_are_skipped_or_refused():
    assert resolve_top_label_metrics("nll,ece-em,brier") == (("ece-em",), ("nll", "brier"))
    with pytest.raises(InputError, match="need every class's probability"):
        top_label_metrics(CONF, CORRECT, names="classwise-ece")
    with pytest.raises(InputError, match="nll-correct"):
        top_label_metrics(CONF, CORRECT, names="ece-foo")
    with pytest.raises(InputError, match="class scores"):
        _ = prepare_confidences(CONF, CORRECT).probs
    results = evaluate_confidences([0.9, 0.8], [1, 1], metric_names="ece-ew,auroc-correct")
    assert "auroc_correct" not in results["metrics"] and "AUROC-CORRECT" in results["notes"][0]


def test_one_changed_entry_keeps_the_reading_or_is_refused():
    """Percentages stay percentages when one of them is changed to a value under 1 (most are still above 1); a set
    of fractions with one value changed to a percentage is refused, never read as percentages; one correctness
    changed to 2 is refused."""
    rng = np.random.default_rng(5)
    percent = np.round(rng.uniform(20, 100, 200), 2)
    changed = percent.copy()
    changed[17] = 0.5
    values, notes = check_confidences(changed)
    np.testing.assert_array_equal(values, changed / 100)
    assert "percentages" in notes[0]
    fractions = percent / 100
    stray = fractions.copy()
    stray[17] = 73.0
    with pytest.raises(InputError, match="row 17: 73"):
        check_confidences(stray)
    correct = rng.uniform(size=200) < fractions
    wrong = correct.astype(int)
    wrong[3] = 2
    with pytest.raises(InputError, match="row 3: 2"):
        top_label_metrics(fractions, wrong)
