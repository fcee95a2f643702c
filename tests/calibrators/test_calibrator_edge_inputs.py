"""Calibrators and `adacal calibrate` on inputs found wrong by probing: float16 probabilities and one score per sample
in compare_calibrators, a negative seed, a flat NLL, a K too large for memory, tampered saved values, truncated
probabilities, and a binary model's decision scores that all fall in [0, 1]."""

import copy
import json

import numpy as np
import pytest
import torch

from adacal.commands.calibrate import run_calibrate
from adacal.calibrators import Calibrator, build_calibrator, compare_calibrators
from adacal.cli import app
from adacal.cli.calibrate import _cell
from adacal.errors import InputError

from cli_helpers import one_line_error, runner


def _softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def split():
    rng = np.random.default_rng(3)
    logits = rng.normal(0.0, 2.0, size=(90, 4))
    labels = rng.integers(0, 4, 90)
    return logits[:60], labels[:60], logits[60:], labels[60:]


# ----- compare_calibrators reads its inputs as Calibrator.fit does ---------------------------------------------------
def test_compare_takes_float16_probabilities_as_probabilities(split):
    val_logits, val_labels, test_logits, test_labels = split
    val_p16 = torch.softmax(torch.tensor(val_logits), dim=1).half()
    test_p16 = torch.softmax(torch.tensor(test_logits), dim=1).half()
    entry = compare_calibrators(val_p16, val_labels, test_p16, test_labels, methods=["temperature"]).results[
        "calibrators"]["temperature"]
    # Reference: the NLL of the float16 probabilities themselves (renormalised), not of their softmax.
    probs = test_p16.double().numpy()
    probs /= probs.sum(axis=1, keepdims=True)
    reference = -np.mean(np.log(probs[np.arange(len(test_labels)), test_labels]))
    assert entry["test_pre"]["nll"] == pytest.approx(reference, rel=1e-9)
    assert entry["calibrator"]["fitted_on"] == "probs"


def test_compare_takes_one_score_per_sample_like_fit(split):
    val_logits, _, test_logits, _ = split
    rng = np.random.default_rng(4)
    val_scores, test_scores = val_logits[:, 0] * 2, test_logits[:, 0] * 2
    val_labels = (rng.random(val_scores.size) < 1 / (1 + np.exp(-val_scores))).astype(int)
    test_labels = (rng.random(test_scores.size) < 1 / (1 + np.exp(-test_scores))).astype(int)
    one = compare_calibrators(val_scores, val_labels, test_scores, test_labels, methods=["temperature"])
    columns = compare_calibrators(np.stack([np.zeros_like(val_scores), val_scores], axis=1), val_labels,
                                  np.stack([np.zeros_like(test_scores), test_scores], axis=1), test_labels,
                                  methods=["temperature"])
    assert one.results["calibrators"]["temperature"]["params"] == columns.results["calibrators"]["temperature"][
        "params"]
    assert one.results["calibrators"]["temperature"]["test_post"] == columns.results["calibrators"]["temperature"][
        "test_post"]


# ----- the seed of the folds ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [-1, 1.5, None, True])
def test_compare_refuses_a_seed_numpy_cannot_take(split, seed):
    with pytest.raises(InputError, match="Expected seed to be an integer >= 0"):
        compare_calibrators(*split, methods=["temperature", "ets"], seed=seed)


def test_run_calibrate_and_cli_refuse_a_negative_seed_before_reading(tmp_path, split):
    missing = tmp_path / "absent.npz"  # never read: the seed is checked first
    with pytest.raises(InputError, match="--seed"):
        run_calibrate(missing, method="all", seed=-1)
    path = tmp_path / "preds.npz"
    val_logits, val_labels, test_logits, test_labels = split
    np.savez(path, val_logits=val_logits, val_labels=val_labels, test_logits=test_logits, test_labels=test_labels)
    result = runner.invoke(app, ["calibrate", str(path), "--method", "all", "--seed", "-1"])
    one_line_error(result, "--seed", "-1")


# ----- temperature scaling on a flat NLL ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["temperature", "ets"])
def test_constant_logits_give_t_one_not_a_bound(name):
    labels = np.random.default_rng(5).integers(0, 4, 30)
    fitted = build_calibrator(name).fit(np.zeros((30, 4)), labels)
    assert fitted.temperature_ == 1.0 and fitted.at_bound_ is False
    np.testing.assert_array_equal(fitted.transform(np.zeros((3, 4))), np.full((3, 4), 0.25))


def test_nll_temperature_never_worse_than_one_and_keeps_argmax():
    rng = np.random.default_rng(6)
    for scale in (1e-8, 1e-2, 1.0, 30.0, 1e4):
        logits = rng.normal(size=(25, 3)) * scale
        labels = rng.integers(0, 3, 25)
        fitted = build_calibrator("temperature").fit(logits, labels)
        probs = fitted.transform(logits)
        nll = lambda p: -np.mean(np.log(np.maximum(p[np.arange(25), labels], 1e-300)))  # noqa: E731
        assert fitted.temperature_ > 0
        assert nll(probs) <= nll(_softmax(logits)) + 1e-12
        np.testing.assert_array_equal(probs.argmax(axis=1), logits.argmax(axis=1))


# ----- matrix-shaped maps and memory ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["matrix-scaling", "dirichlet"])
def test_full_maps_refuse_a_fit_that_cannot_fit_in_memory(monkeypatch, name):
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(1 << 20))
    rng = np.random.default_rng(7)
    logits, labels = rng.normal(size=(20, 100)), rng.integers(0, 100, 20)
    with pytest.raises(InputError, match=r"fit in memory, got 100: fitting .* \(10,100 parameters\)"):
        build_calibrator(name).fit(logits, labels)
    build_calibrator("vector-scaling").fit(logits, labels)  # 200 parameters: fits


# ----- tampered saved calibrators ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, key", [("histogram", "edges"), ("isotonic", "thresholds"), ("spline", "scores")])
def test_saved_confidence_grid_outside_unit_interval_is_refused(split, name, key):
    data = json.loads(json.dumps(build_calibrator(name).fit(split[0], split[1]).to_dict()))
    tampered = copy.deepcopy(data)
    tampered["params"][key] = [value * 1e6 for value in data["params"][key]]
    with pytest.raises(InputError, match=rf"'{key}' must lie in \[0, 1\]"):
        Calibrator.from_dict(tampered)
    restored = Calibrator.from_dict(data)  # the untampered dict still loads, with the same outputs bit for bit
    np.testing.assert_array_equal(restored.transform(split[2]), build_calibrator(name).fit(split[0], split[1])
                                  .transform(split[2]))


def test_saved_ets_weight_above_one_is_refused(split):
    data = build_calibrator("ets").fit(split[0], split[1]).to_dict()
    with pytest.raises(InputError, match="'weights' must be 3 non-negative numbers summing to 1"):
        Calibrator.from_dict({**data, "params": {**data["params"], "weights": [1e308, 1e308, 1e308]}})


# ----- probabilities that do not sum to 1 ----------------------------------------------------------------------------
@pytest.mark.parametrize("factor, what", [(0.97, "rows sum to 0.97"), (100.0, "percentages")])
def test_truncated_probabilities_or_percentages_are_refused(split, factor, what):
    probs = _softmax(split[0]) * factor
    with pytest.raises(InputError, match=what):
        build_calibrator("temperature").fit(probs, split[1])
    fitted = build_calibrator("temperature").fit(split[0], split[1])
    # Fitted on logits, it reads rows as logits; a whole batch of such rows is none (a refusal, not a re-reading).
    with pytest.raises(InputError, match="fitted on logits, but 60 of 60 rows lie in "
                                         + (r"\[0, 1\] and sum to nearly 1" if factor < 1 else r"\[0, 100\]")):
        fitted.transform(probs)


# ----- a binary model's decision scores ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["temperature", "ets", "vector-scaling", "isotonic"])
def test_decision_scores_in_unit_interval_stay_logits_for_a_calibrator_fitted_on_logits(name):
    rng = np.random.default_rng(8)
    scores = rng.normal(0.0, 3.0, size=200)
    labels = (rng.random(200) < 1 / (1 + np.exp(-scores))).astype(int)
    fitted = build_calibrator(name).fit(scores, labels)
    batch = np.array([0.3, 0.8])  # decision scores that happen to lie in [0, 1]
    np.testing.assert_array_equal(fitted.transform(batch), fitted.transform(np.stack([np.zeros(2), batch], axis=1)))


def test_decision_scores_hand_worked_temperature():
    # Temperature T applied to the logit s of a binary model: P(positive) = sigmoid(s / T).
    fitted = Calibrator.from_dict({"method": "temperature", "format_version": 1, "options": {},
                                   "params": {"temperature": 2.0}, "num_classes": 2, "fitted_on": "logits"})
    probs = fitted.transform(np.array([0.3, 0.8]))
    np.testing.assert_allclose(probs[:, 1], 1 / (1 + np.exp(-np.array([0.15, 0.4]))), rtol=1e-12)
    # Fitted on probabilities, the same numbers are probabilities: p^(1/T) renormalised.
    fitted.fitted_on_ = "probabilities"
    p = np.array([0.3, 0.8])
    expected = np.sqrt(p) / (np.sqrt(p) + np.sqrt(1 - p))
    np.testing.assert_allclose(fitted.transform(p)[:, 1], expected, rtol=1e-12)


# ----- the table ------------------------------------------------------------------------------------------------------
def test_table_cell_of_a_huge_nll_is_short():
    assert _cell({"nll": 8.678e305}, "nll", 1.0) == "8.68e+305"
    assert _cell({"nll": 1.2345}, "nll", 1.0) == "1.234"
    assert _cell({"ece_em": 0.1234}, "ece_em", 100.0) == "12.34"
