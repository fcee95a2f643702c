"""auprc-errors: the average precision of the wrong answers ranked by low confidence, for (N, K) scores and top-label
confidences, against sklearn's `average_precision_score` and a hand-worked example."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from adacal.errors import InputError
from adacal.evaluation import evaluate_confidences, evaluate_predictions
from adacal.metrics import METRICS, auprc_errors, compute_metrics, top_label_metrics
from adacal.metrics.confidences import TOP_LABEL_METRIC_NAMES
from adacal.metrics.selective import higher_is_better


def test_hand_worked_example_with_a_tie():
    # Confidences 0.9 R, 0.8 R, 0.8 W, 0.6 R, 0.5 W. From the lowest up: 0.5 (W): precision 1, recall 1/2;
    # 0.6 (R): no new error; 0.8 (R and W tied, entering together): precision 2/4, recall 2/2. AP = 1/2 + 1/4.
    conf = [0.9, 0.8, 0.8, 0.6, 0.5]
    correct = [1, 1, 0, 1, 0]
    assert top_label_metrics(conf, correct, names="auprc-errors")["auprc_errors"] == pytest.approx(0.75, abs=1e-15)
    probs = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
    assert auprc_errors(probs, [0, 0, 0, 0, 1]) == pytest.approx(0.75, abs=1e-15)


def test_perfect_and_reversed_rankings():
    # Every error below every right answer: 1. Every error above: precision k/(R + k) at each error's entry.
    assert top_label_metrics([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], names="auprc-errors")["auprc_errors"] == 1.0
    reversed_ = top_label_metrics([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1], names="auprc-errors")["auprc_errors"]
    assert reversed_ == pytest.approx((1 / 3 + 2 / 4) / 2, abs=1e-15)
    # All tied: precision is the error rate at the one threshold.
    assert top_label_metrics([0.7] * 5, [1, 0, 1, 1, 0], names="auprc-errors")["auprc_errors"] == pytest.approx(0.4)


@pytest.mark.parametrize("seed", range(6))
def test_equals_sklearn_on_scores_with_ties(seed):
    rng = np.random.default_rng(seed)
    n, k = 300, 4
    probs = rng.dirichlet(np.ones(k), size=n)
    probs = np.round(probs, 1 if seed % 2 else 3)  # many ties when rounded to one decimal
    probs = probs / probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, size=n)
    conf, wrong = probs.max(axis=1), probs.argmax(axis=1) != labels
    expected = average_precision_score(wrong, -conf)
    assert compute_metrics(probs, labels, names="auprc-errors", scores_kind="probs")["auprc_errors"] == \
        pytest.approx(expected, abs=1e-12)
    assert top_label_metrics(conf, ~wrong, names="auprc-errors")["auprc_errors"] == pytest.approx(expected, abs=1e-12)


def test_undefined_with_one_kind_of_answer():
    with pytest.raises(InputError, match="leave out auprc-errors"):
        auprc_errors([[0.9, 0.1], [0.2, 0.8]], [0, 1])
    with pytest.raises(InputError, match="only wrong ones"):
        auprc_errors([[0.9, 0.1], [0.2, 0.8]], [1, 0])
    results = evaluate_confidences([0.9, 0.8], [1, 1], metric_names="ece-ew,auprc-errors")
    assert "auprc_errors" not in results["metrics"] and "AUPRC-ERRORS" in results["notes"][0]


def test_registered_and_in_the_top_label_default_report():
    assert "auprc-errors" in METRICS.names() and "auroc-correct" in METRICS.names()
    assert {"auroc-correct", "auprc-errors", "nll-correct", "brier-top"} <= set(TOP_LABEL_METRIC_NAMES)
    assert higher_is_better("auprc-errors")
    results = evaluate_confidences([0.9, 0.8, 0.7, 0.3, 0.2], [1, 1, 0, 1, 0], n_bins=5)
    assert {"auroc_correct", "auprc_errors", "nll_correct", "brier_top"} <= set(results["metrics"])
    assert results["metrics"]["auprc_errors"] == pytest.approx(
        average_precision_score([0, 0, 1, 0, 1], [-0.9, -0.8, -0.7, -0.3, -0.2]), abs=1e-15)


def test_bootstrap_interval_skips_resamples_where_undefined():
    rng = np.random.default_rng(3)
    conf = rng.uniform(0.5, 1.0, size=40)
    correct = rng.uniform(size=40) < conf
    results = evaluate_confidences(conf, correct, bootstrap=60, seed=1, n_bins=5)
    interval = results["bootstrap"]["auprc_errors"]
    assert interval["low"] <= results["metrics"]["auprc_errors"] <= interval["high"]
    # The same interval from (N, K) scores whose top-1 is the same (a binary model, label = 0 when correct).
    probs = np.stack([conf, 1 - conf], axis=1)
    labels = np.where(correct, 0, 1)
    scores = evaluate_predictions(probs, labels, metric_names="auprc-errors", bootstrap=60, seed=1, n_bins=5)
    assert scores["metrics"]["auprc_errors"] == pytest.approx(results["metrics"]["auprc_errors"], abs=1e-12)
    assert scores["bootstrap"]["auprc_errors"] == pytest.approx(interval, abs=1e-12)
