"""`calibrate`'s test metrics carry AURC and the AUROC of correctness before and after each calibrator: on a binary
model a temperature keeps the ranking of confidences (the top-1 probability is monotone in |margin| / T), so both are
unchanged; with K > 2 it need not (the top-1 probability depends on the other logits too), and a binning calibrator
ties confidences, so AURC moves; the figures are those of the metric functions on the calibrated probabilities."""

import json

import numpy as np
import pytest

from adacal.arrays import softmax
from adacal.calibrators import compare_calibrators
from adacal.calibrators.compare import calibrate_test_metrics
from adacal.cli import app
from adacal.metrics import aurc, auroc_correct, compute_metrics

from cli_helpers import runner


def _split(n=600, k=6, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 1.0
    return scale * logits, labels  # over-confident: a temperature above 1


@pytest.fixture(scope="module")
def comparison():
    val, test = _split(seed=1), _split(seed=2)
    return compare_calibrators(*val, *test, methods=["temperature", "histogram"], folds=3), test


@pytest.fixture(scope="module")
def binary():
    val, test = _split(k=2, seed=1, scale=4.0), _split(k=2, seed=2, scale=4.0)
    return compare_calibrators(*val, *test, methods=["temperature"]), test


def test_temperature_keeps_aurc_and_auroc_correct_of_a_binary_model(binary):
    result, (logits, labels) = binary
    entry = result.results["calibrators"]["temperature"]
    assert entry["params"]["temperature"] > 1.2  # a real rescaling, not the identity
    for key in ("aurc", "auroc_correct"):
        assert entry["test_post"][key] == pytest.approx(entry["test_pre"][key], abs=1e-12)
    assert entry["test_post"]["ece_em"] != pytest.approx(entry["test_pre"]["ece_em"], abs=1e-4)  # while ECE moves
    # the figures are the metric functions' own, on the scores and on the calibrated probabilities
    assert entry["test_pre"]["aurc"] == pytest.approx(aurc(logits, labels), abs=1e-15)
    assert entry["test_pre"]["auroc_correct"] == pytest.approx(auroc_correct(logits, labels), abs=1e-15)
    probs = result.fitted["temperature"].transform(logits)
    assert entry["test_post"]["aurc"] == pytest.approx(aurc(probs, labels), abs=1e-15)


def test_temperature_may_reorder_confidences_of_three_classes(comparison):
    """By hand: at T = 1 row A = (2, 0, 0) is more confident than B = (3, 2.5, -10) (0.787 vs 0.622), at T = 4 less
    (0.452 vs 0.521); A right and B wrong, AURC goes from (0 + 1/2) / 2 to (1 + 1/2) / 2."""
    logits, labels = np.array([[2.0, 0.0, 0.0], [3.0, 2.5, -10.0]]), np.array([0, 1])
    assert aurc(logits, labels) == pytest.approx(0.25)
    assert aurc(softmax(logits / 4.0), labels) == pytest.approx(0.75)
    result, (test_logits, test_labels) = comparison  # so calibrate reports what T did to the ranking, not a copy
    entry = result.results["calibrators"]["temperature"]
    probs = result.fitted["temperature"].transform(test_logits)
    assert entry["test_post"]["aurc"] == pytest.approx(aurc(probs, test_labels), abs=1e-15)
    assert entry["test_post"]["error"] == entry["test_pre"]["error"]  # the argmax is kept


def test_binning_changes_the_ranking(comparison):
    result, (logits, labels) = comparison
    entry = result.results["calibrators"]["histogram"]
    probs = result.fitted["histogram"].transform(logits)
    assert entry["test_post"]["aurc"] == pytest.approx(aurc(probs, labels), abs=1e-15)
    assert entry["test_post"]["auroc_correct"] == pytest.approx(auroc_correct(probs, labels), abs=1e-15)
    assert entry["test_post"]["aurc"] != pytest.approx(entry["test_pre"]["aurc"], abs=1e-6)


def test_default_metrics_first_and_unchanged():
    logits, labels = _split(n=200, seed=3)
    metrics = calibrate_test_metrics(logits, labels, n_bins=15)
    plain = compute_metrics(logits, labels, n_bins=15)
    assert list(metrics)[:len(plain)] == list(plain) and list(metrics)[len(plain):] == ["aurc", "auroc_correct"]
    assert all(metrics[key] == plain[key] for key in plain)


def test_auroc_correct_left_out_when_every_answer_is_right():
    probs = softmax(np.array([[3.0, 0.0], [0.0, 2.0], [1.0, 0.0]]))
    metrics = calibrate_test_metrics(probs, [0, 1, 0], n_bins=15)
    assert metrics["aurc"] == 0.0 and "auroc_correct" not in metrics


def test_in_the_calibrate_json(tmp_path):
    (val_logits, val_labels), (test_logits, test_labels) = _split(n=300, k=2, seed=4), _split(n=300, k=2, seed=5)
    np.savez(tmp_path / "split.npz", val_logits=val_logits, val_labels=val_labels, test_logits=test_logits,
             test_labels=test_labels)
    result = runner.invoke(app, ["calibrate", str(tmp_path / "split.npz"), "--method", "temperature", "--json",
                                 str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    entry = json.loads((tmp_path / "c.json").read_text())["results"]["calibrators"]["temperature"]
    assert entry["test_pre"]["aurc"] == pytest.approx(aurc(test_logits, test_labels), abs=1e-12)
    assert entry["test_post"]["auroc_correct"] == pytest.approx(entry["test_pre"]["auroc_correct"], abs=1e-12)  # binary
    assert entry["test_post"]["aurc"] == pytest.approx(entry["test_pre"]["aurc"], abs=1e-12)
