"""#42 item 5 through the CLI: `evaluate` on a binary input adds the positive-class metrics and names the Brier
convention; `plot reliability --positive` draws class 1's diagram and refuses what is not a binary model's scores in
one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss

from adacal.cli import app

from cli_helpers import one_line_error, runner


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("binary")
    rng = np.random.default_rng(3)
    p1 = rng.random(300)
    labels = (rng.random(300) < p1 ** 1.3).astype(np.int64)
    np.savez(root / "binary.npz", probs=np.column_stack([1.0 - p1, p1]), labels=labels)
    probs = rng.dirichlet(np.ones(4), 200)
    np.savez(root / "four.npz", probs=probs, labels=rng.integers(0, 4, 200))
    with open(root / "pairs.jsonl", "w") as handle:
        for confidence, correct in zip(rng.uniform(0.5, 1.0, 60), rng.integers(0, 2, 60)):
            handle.write(json.dumps({"confidence": float(confidence), "correct": bool(correct)}) + "\n")
    return root, p1, labels


def test_evaluate_binary_reports_positive_class_metrics_and_the_brier_convention(files):
    root, p1, labels = files
    report_path = root / "binary.json"
    result = runner.invoke(app, ["evaluate", str(root / "binary.npz"), "--json", str(report_path), "--force"])
    assert result.exit_code == 0, result.output
    report = json.loads(report_path.read_text())
    metrics, config = report["results"]["metrics"], report["config"]
    assert metrics["brier_positive"] == pytest.approx(brier_score_loss(labels, p1), abs=1e-12)
    assert metrics["brier"] == pytest.approx(2 * metrics["brier_positive"], rel=1e-12)
    assert config["metrics"][-3:] == ["brier-positive", "ece-positive-ew", "ece-positive-em"]
    assert "multi-class sum" in report["results"]["conventions"]["brier"]
    assert "top-label" in report["results"]["conventions"]["ece_em"]
    assert "Brier-Positive" in result.stdout and "ECE-Positive-EM" in result.stdout
    assert "Brier is the multi-class sum" in result.stdout


def test_evaluate_of_more_classes_keeps_its_metrics_and_names_the_convention(files):
    root, _, _ = files
    result = runner.invoke(app, ["evaluate", str(root / "four.npz"), "--json", "-"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert "brier_positive" not in report["results"]["metrics"]
    assert set(report["results"]["conventions"]) == {"brier"}


@pytest.mark.parametrize("metric", ["brier-positive", "ece-positive-ew", "ECE_POSITIVE_EM"])
def test_positive_metrics_of_four_classes_are_a_one_line_error(files, metric):
    root, _, _ = files
    result = runner.invoke(app, ["evaluate", str(root / "four.npz"), "--metrics", metric])
    one_line_error(result, "Expected a binary model's scores", "got 4 classes")


def test_plot_positive_draws_and_refuses_in_one_line(files):
    root, _, _ = files
    out = root / "positive.png"
    result = runner.invoke(app, ["plot", "reliability", str(root / "binary.npz"), "--positive", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"\x89PNG")
    bad = root / "bad.png"
    report = root / "binary-report.json"
    assert runner.invoke(app, ["evaluate", str(root / "binary.npz"), "--json", str(report)]).exit_code == 0
    one_line_error(runner.invoke(app, ["plot", "reliability", str(root / "four.npz"), "--positive", "--out",
                                       str(bad)]), "holds scores of 4 classes", "drop --positive")
    one_line_error(runner.invoke(app, ["plot", "reliability", str(root / "pairs.jsonl"), "--positive", "--out",
                                       str(bad)]), "holds top-label confidences")
    one_line_error(runner.invoke(app, ["plot", "reliability", str(report), "--positive", "--out",
                                       str(bad)]), "needs per-sample predictions")
    assert not bad.exists()


def test_plot_positive_default_file_name(files):
    root, _, _ = files
    result = runner.invoke(app, ["plot", "reliability", str(root / "binary.npz"), "--positive"])
    assert result.exit_code == 0, result.output
    assert (root / "binary-reliability-positive.png").is_file()
