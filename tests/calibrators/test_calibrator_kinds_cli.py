"""The commands pass the file reader's kind of scores on to the calibrators (`scores_kind=`) instead of letting them
decide again: `calibrate` fits on what the reader read, `evaluate --calibrator` applies a saved calibrator to logits or
probabilities as the file holds them, and the figures match the same arrays given to the Python API."""

import json

import numpy as np
import pytest

from adacal.calibrators import build_calibrator, compare_calibrators, load_calibrator
from adacal.cli import app
from adacal.metrics import compute_metrics

from calibration_problems import make_problem
from cli_helpers import one_line_error, runner


def _softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kinds")
    logits, labels = make_problem(n=900, k=5, sigma=3.0, true_temperature=2.0, seed=31)
    val, test = slice(0, 600), slice(600, 900)
    np.savez(folder / "logits.npz", val_logits=logits[val], val_labels=labels[val], test_logits=logits[test],
             test_labels=labels[test])
    probs = _softmax(logits)
    np.savez(folder / "probs.npz", val_probs=probs[val], val_labels=labels[val], test_probs=probs[test],
             test_labels=labels[test])
    return folder, logits[val], labels[val], logits[test], labels[test]


def _evaluate(path, calibrator, out):
    result = runner.invoke(app, ["evaluate", str(path), "--calibrator", str(calibrator), "--json", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())["results"]["metrics"]


def test_a_calibrator_fitted_on_probabilities_applies_to_a_logits_file_as_to_a_probabilities_file(files, tmp_path):
    folder, _, _, test_logits, test_labels = files
    saved = tmp_path / "temperature.json"
    result = runner.invoke(app, ["calibrate", str(folder / "probs.npz"), "--save", str(saved), "--json",
                                 str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    calibrator = load_calibrator(saved)
    assert calibrator.fitted_on_ == "probs"
    # The reference: softmax(z / T), computed here from the logits and the saved T.
    expected = compute_metrics(_softmax(test_logits / calibrator.temperature_), test_labels)
    on_probs = _evaluate(folder / "probs.npz", saved, tmp_path / "p.json")
    on_logits = _evaluate(folder / "logits.npz", saved, tmp_path / "l.json")
    for key, value in expected.items():
        assert on_probs[key] == pytest.approx(value, abs=1e-9), key
        assert on_logits[key] == pytest.approx(value, abs=1e-9), key


def test_calibrate_on_a_file_gives_the_figures_of_the_api_on_its_arrays(files, tmp_path):
    folder, val_logits, val_labels, test_logits, test_labels = files
    out = tmp_path / "c.json"
    result = runner.invoke(app, ["calibrate", str(folder / "logits.npz"), "--method", "ets", "--json", str(out)])
    assert result.exit_code == 0, result.output
    from_file = json.loads(out.read_text())["results"]["calibrators"]["ets"]
    from_api = compare_calibrators(val_logits, val_labels, test_logits, test_labels, methods=["ets"]).results[
        "calibrators"]["ets"]
    assert from_file["calibrator"]["fitted_on"] == from_api["calibrator"]["fitted_on"] == "logits"
    assert from_file["test_post"] == pytest.approx(from_api["test_post"], abs=1e-12)
    direct = build_calibrator("ets").fit(val_logits, val_labels).transform(test_logits)
    # every default metric, then the selective ones calibrate adds (AURC, AUROC of correctness)
    names = (*compute_metrics(direct, test_labels), "aurc", "auroc-correct")
    assert from_api["test_post"] == pytest.approx(compute_metrics(direct, test_labels, names=names), abs=1e-12)


def test_class_wise_weights_fitted_on_probabilities_refuse_a_logits_file_in_one_line(files, tmp_path):
    folder = files[0]
    saved = tmp_path / "vector.json"
    result = runner.invoke(app, ["calibrate", str(folder / "probs.npz"), "--method", "vector-scaling", "--save",
                                 str(saved), "--json", str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["evaluate", str(folder / "logits.npz"), "--calibrator", str(saved)])
    one_line_error(result, "fitted on probabilities, got logits", str(saved))


def test_compare_takes_each_splits_kind_as_told(files):
    _, val_logits, val_labels, test_logits, test_labels = files
    told = compare_calibrators(_softmax(val_logits), val_labels, test_logits, test_labels, methods=["temperature"],
                               scores_kind="probs", test_scores_kind="logits")
    alike = compare_calibrators(val_logits, val_labels, test_logits, test_labels, methods=["temperature"])
    entry, reference = told.results["calibrators"]["temperature"], alike.results["calibrators"]["temperature"]
    assert entry["calibrator"]["fitted_on"] == "probs"
    assert entry["params"]["temperature"] == pytest.approx(reference["params"]["temperature"], rel=1e-6)
    assert entry["test_post"] == pytest.approx(reference["test_post"], abs=1e-7)
