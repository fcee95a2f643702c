"""`adacal calibrate` on top-label (confidence, correct) files and `--val-fraction`, through the app: calibration
improves a synthetic over-confident model whose truth is known (P(right | c) = c²), a saved map applied by `evaluate
--calibrator` gives the in-process figures, per-group figures against a hand computation, the split of score
matrices, and every refusal in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from adacal.cli import app
from cli_helpers import one_line_error

runner = CliRunner()
RNG = np.random.default_rng(41)
N = 3000
CONF = RNG.uniform(0.25, 1.0, N)
CORRECT = RNG.random(N) < CONF ** 2  # over-confident: the true P(right | c) is c²
TASK = np.where(RNG.random(N) < 0.4, "law", "math")


def _jsonl(path, conf=CONF, correct=CORRECT, task=TASK):
    path.write_text("".join(json.dumps({"confidence": float(c), "correct": bool(k), "task": str(t)}) + "\n"
                            for c, k, t in zip(conf, correct, task)))
    return path


def _invoke(*args):
    result = runner.invoke(app, ["calibrate", *map(str, args), "--json", "-"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _ece_ew(conf, correct, n_bins=15):
    """Equal-width top-label ECE by a plain loop: bin i holds (i/n, (i+1)/n], the first also 0."""
    total = 0.0
    for i in range(n_bins):
        low, high = i / n_bins, (i + 1) / n_bins
        inside = (conf > low) & (conf <= high) | ((conf == 0) & (i == 0))
        if inside.any():
            total += inside.sum() / conf.size * abs(conf[inside].mean() - correct[inside].mean())
    return total


def test_calibrate_improves_an_over_confident_model_on_held_out_rows(tmp_path):
    report = _invoke(_jsonl(tmp_path / "answers.jsonl"), "--val-fraction", "0.5", "--method", "all", "--seed", "3")
    results = report["results"]
    assert results["assumed_input"] == "confidences"
    assert results["split"] == {"source": "--val-fraction", "val_fraction": 0.5, "seed": 3,
                                "stratified_by": "correctness", "n_val": N // 2, "n_test": N // 2}
    assert report["config"]["val_fraction"] == 0.5 and report["config"]["seed"] == 3
    best = results["calibrators"][results["best"]]
    assert results["best"] != "uncalibrated" and "CV NLL" in results["selection"]["reason"]
    before, after = best["test_pre"], best["test_post"]
    assert before["ece_em"] > 0.12  # E[c - c²] over U(0.25, 1) is 0.156
    for key in ("ece_em", "ece_ew", "nll_correct", "brier_top"):
        assert after[key] < before[key], key
    assert after["ece_em"] < 0.05
    assert after["accuracy"] == before["accuracy"] == pytest.approx(1 - before["error"])
    for key in ("mce", "ece_debias", "auroc_correct", "auprc_errors"):
        assert key in after and key in before
    # The true probabilities' own test ECE (noise only) is the floor the calibrated one comes near.
    truth = _invoke(_jsonl(tmp_path / "truth.jsonl", conf=CONF ** 2), "--val-fraction", "0.5", "--seed", "3",
                    "--method", "uncalibrated")
    assert after["ece_em"] < truth["results"]["calibrators"]["uncalibrated"]["test_pre"]["ece_em"] + 0.03


def test_the_split_is_reproducible_and_stratified_by_correctness(tmp_path):
    path = _jsonl(tmp_path / "answers.jsonl")
    first = _invoke(path, "--val-fraction", "0.3", "--seed", "5", "--method", "isotonic")
    again = _invoke(path, "--val-fraction", "0.3", "--seed", "5", "--method", "isotonic")
    other = _invoke(path, "--val-fraction", "0.3", "--seed", "6", "--method", "isotonic")
    assert first["results"]["calibrators"] == again["results"]["calibrators"]
    assert first["results"]["calibrators"] != other["results"]["calibrators"]
    from adacal.calibrators.holdout import holdout_split

    val, test = holdout_split(CORRECT, 0.3, seed=5)
    assert first["results"]["split"]["n_val"] == val.size == round(0.3 * N)
    accuracy = CORRECT.mean()
    assert abs(CORRECT[val].mean() - accuracy) < 1 / val.size and abs(CORRECT[test].mean() - accuracy) < 1 / test.size
    assert first["results"]["calibrators"]["isotonic"]["test_pre"]["accuracy"] == pytest.approx(CORRECT[test].mean())


@pytest.mark.parametrize("method", ["platt", "isotonic", "histogram"])
def test_a_saved_map_applied_by_evaluate_gives_the_in_process_figures(tmp_path, method):
    val = _jsonl(tmp_path / "val.jsonl", conf=CONF[:1000], correct=CORRECT[:1000], task=TASK[:1000])
    test = _jsonl(tmp_path / "test.jsonl", conf=CONF[1000:], correct=CORRECT[1000:], task=TASK[1000:])
    report = _invoke(test, "--val", val, "--method", method, "--save", tmp_path / "map.json")
    assert report["results"]["split"] == {"source": "--val", "n_val": 1000, "n_test": N - 1000}
    result = runner.invoke(app, ["evaluate", str(test), "--calibrator", str(tmp_path / "map.json"), "--json", "-"])
    assert result.exit_code == 0, result.output
    evaluated = json.loads(result.stdout)
    post = report["results"]["calibrators"][method]["test_post"]
    for key, value in evaluated["results"]["metrics"].items():
        assert post[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    assert evaluated["config"]["calibrator"] == str(tmp_path / "map.json")
    from adacal.calibrators.confidence_maps import build_confidence_map

    by_hand = build_confidence_map(method).fit(CONF[:1000], CORRECT[:1000]).transform(CONF[1000:])
    assert post["ece_ew"] == pytest.approx(_ece_ew(by_hand, CORRECT[1000:]), abs=1e-12)


def test_per_group_before_and_after_against_a_hand_computation(tmp_path):
    val = _jsonl(tmp_path / "val.jsonl", conf=CONF[:1500], correct=CORRECT[:1500], task=TASK[:1500])
    test = _jsonl(tmp_path / "test.jsonl", conf=CONF[1500:], correct=CORRECT[1500:], task=TASK[1500:])
    report = _invoke(test, "--val", val, "--method", "isotonic", "--group-by", "task", "--save",
                     tmp_path / "iso.json")
    groups = report["results"]["groups"]
    assert groups["key"] == "task" and report["config"]["group_by"] == "task"
    from adacal.calibrators.confidence_maps import load_confidence_map

    fitted = load_confidence_map(tmp_path / "iso.json")
    conf, correct, task = CONF[1500:], CORRECT[1500:], TASK[1500:]
    for stage, values in (("before", conf), ("after", fitted.transform(conf))):
        rows = {row["group"]: row for row in groups[stage]["rows"]}
        assert sorted(rows) == ["law", "math"]
        for name, row in rows.items():
            mine = task == name
            assert row["n_samples"] == int(mine.sum())
            assert row["accuracy"] == pytest.approx(correct[mine].mean())
            assert row["metrics"]["ece_ew"] == pytest.approx(_ece_ew(values[mine], correct[mine]), abs=1e-12)
        assert groups[stage]["overall"]["metrics"]["ece_ew"] == pytest.approx(_ece_ew(values, correct), abs=1e-12)
    assert groups["after"]["overall"]["metrics"]["ece_em"] < groups["before"]["overall"]["metrics"]["ece_em"]
    table = runner.invoke(app, ["calibrate", str(test), "--val", str(val), "--method", "isotonic", "--group-by",
                                "task"])
    assert table.exit_code == 0, table.output
    assert "Per task on test" in table.output and "law" in table.output and "NLL-C" in table.output


def test_val_fraction_on_score_matrices_equals_fitting_on_the_same_rows_by_hand(tmp_path):
    from adacal.calibrators.holdout import holdout_split

    logits = RNG.normal(size=(600, 4)) * 3.0
    labels = np.where(RNG.random(600) < 0.6, logits.argmax(axis=1), RNG.integers(0, 4, 600))
    np.savez(tmp_path / "scores.npz", logits=logits, labels=labels)
    report = _invoke(tmp_path / "scores.npz", "--val-fraction", "0.25", "--seed", "2")
    split = report["results"]["split"]
    assert split == {"source": "--val-fraction", "val_fraction": 0.25, "seed": 2, "stratified_by": "label",
                     "n_val": 150, "n_test": 450}
    val, test = holdout_split(labels, 0.25, seed=2)
    np.savez(tmp_path / "val.npz", logits=logits[val], labels=labels[val])
    np.savez(tmp_path / "test.npz", logits=logits[test], labels=labels[test])
    by_hand = _invoke(tmp_path / "test.npz", "--val", tmp_path / "val.npz")
    assert (report["results"]["calibrators"]["temperature"]["params"]
            == by_hand["results"]["calibrators"]["temperature"]["params"])
    assert (report["results"]["calibrators"]["temperature"]["test_post"]
            == by_hand["results"]["calibrators"]["temperature"]["test_post"])


@pytest.mark.slow
def test_refusals_in_one_line(tmp_path):
    pairs = _jsonl(tmp_path / "answers.jsonl", conf=CONF[:200], correct=CORRECT[:200], task=TASK[:200])
    np.savez(tmp_path / "split.npz", val_confidence=CONF[:100], val_correct=CORRECT[:100],
             test_confidence=CONF[100:200], test_correct=CORRECT[100:200])
    np.savez(tmp_path / "scores.npz", logits=RNG.normal(size=(100, 3)), labels=RNG.integers(0, 3, 100))
    np.savez(tmp_path / "scores_split.npz", val_logits=RNG.normal(size=(50, 3)), val_labels=RNG.integers(0, 3, 50),
             test_logits=RNG.normal(size=(50, 3)), test_labels=RNG.integers(0, 3, 50))

    def refused(*args, fragments):
        return one_line_error(runner.invoke(app, ["calibrate", *map(str, args)]), *fragments)

    refused(pairs, fragments=("--val-fraction F", "--val FILE"))  # one set of rows, no split named
    refused(pairs, "--val", pairs, "--val-fraction", "0.5", fragments=("at most one of --val and --val-fraction",))
    refused(pairs, "--val-fraction", "1.5", fragments=("between 0 and 1",))
    refused(tmp_path / "split.npz", "--val-fraction", "0.5", fragments=("its own val_ and test_ splits",))
    refused(tmp_path / "scores_split.npz", "--val-fraction", "0.5", fragments=("its own val_ and test_ splits",))
    refused(tmp_path, "--val-fraction", "0.5", fragments=("not a run folder",))
    refused(pairs, "--val-fraction", "0.5", "--method", "temperature", fragments=("a calibrator of class scores",))
    refused(pairs, "--val-fraction", "0.5", "--method", "platt", "--objective", "ece-em",
            fragments=("--objective",))
    refused(pairs, "--val-fraction", "0.5", "--method", "all", "--select-metric", "aurc",
            fragments=("--select-metric nll, brier, ece-em or ece-ew",))
    refused(pairs, "--val-fraction", "0.5", "--group-by", "subject", fragments=("subject", "task"))
    refused(tmp_path / "scores.npz", "--val-fraction", "0.5", "--group-by", "task", fragments=("task",))
    refused(tmp_path / "scores.npz", "--val", pairs, fragments=("holds top-label confidences", "one kind"))
    refused(pairs, "--val", tmp_path / "scores.npz", fragments=("holds class scores", "one kind"))
    refused(pairs, "--val-fraction", "0.5", "--method", "bogus", fragments=("bogus",))
    # Calibrator files of one kind applied to the other.
    _invoke(pairs, "--val-fraction", "0.5", "--save", tmp_path / "map.json")
    _invoke(tmp_path / "scores.npz", "--val-fraction", "0.5", "--save", tmp_path / "temp.json")
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "scores.npz"), "--calibrator",
                                       str(tmp_path / "map.json")]), "a confidence map", "holds class scores")
    one_line_error(runner.invoke(app, ["evaluate", str(pairs), "--calibrator", str(tmp_path / "temp.json")]),
                   "holds top-label confidences", "confidence map")


def test_per_group_before_and_after_on_score_matrices(tmp_path):
    """--group-by on class scores (a file's own splits): each group's ECE-EW of the softmax before and of the
    temperature-scaled probabilities after, by the plain loop."""
    logits = RNG.normal(size=(800, 3)) * 3.0
    labels = np.where(RNG.random(800) < 0.5, logits.argmax(axis=1), RNG.integers(0, 3, 800))
    task = np.where(RNG.random(800) < 0.5, "a", "b")
    np.savez(tmp_path / "split.npz", val_logits=logits[:400], val_labels=labels[:400], test_logits=logits[400:],
             test_labels=labels[400:], test_task=task[400:])
    report = _invoke(tmp_path / "split.npz", "--group-by", "task")
    temperature = report["results"]["calibrators"]["temperature"]["params"]["temperature"]
    groups = report["results"]["groups"]
    test, names, truth = logits[400:], task[400:], labels[400:]
    for stage, scaled in (("before", test), ("after", test / temperature)):
        probs = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        conf, hits = probs.max(axis=1), (probs.argmax(axis=1) == truth).astype(float)
        for row in groups[stage]["rows"]:
            mine = names == row["group"]
            assert row["n_samples"] == int(mine.sum())
            assert row["metrics"]["ece_ew"] == pytest.approx(_ece_ew(conf[mine], hits[mine]), abs=1e-9)
    assert groups["after"]["overall"]["metrics"]["nll"] < groups["before"]["overall"]["metrics"]["nll"]
