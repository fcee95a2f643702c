"""adacal.interpretation.read end to end: scores without labels for an OOD set, and every format read through the
CLI to the same metrics, with what was assumed said on stderr and in the report."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.evaluation import evaluate_predictions
from adacal.interpretation import load_scores

from reading_fixtures import LABELS, LOGITS, N, RNG, csv_text


def test_ood_scores_need_no_labels(tmp_path):
    np.save(tmp_path / "o.npy", LOGITS)
    np.testing.assert_allclose(load_scores(tmp_path / "o.npy"), LOGITS)


# ---------------------------------------------------------------------------------------------------- through the CLI


def _cli(*argv, cwd=None):
    from typer.testing import CliRunner

    from adacal.cli import app

    return CliRunner().invoke(app, [str(a) for a in argv])


def test_evaluate_reads_every_format_to_the_same_metrics(tmp_path):
    """The same outputs as .npz, .pt pair, .npy + labels, .csv: identical metrics in every report."""
    np.savez(tmp_path / "ref.npz", logits=LOGITS, labels=LABELS)
    torch.save((torch.tensor(LOGITS), torch.tensor(LABELS)), tmp_path / "pair.pt")
    np.save(tmp_path / "x.npy", LOGITS)
    np.save(tmp_path / "x_labels.npy", LABELS)
    rows = [[*map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    (tmp_path / "t.csv").write_text(csv_text(rows, ["a", "b", "c", "d", "y"]))
    np.savez(tmp_path / "named.npz", out=LOGITS, gt=LABELS)
    metrics = []
    for name, extra in (("ref.npz", []), ("pair.pt", []), ("x.npy", []), ("t.csv", []),
                        ("named.npz", ["--logits-key", "out", "--labels-key", "gt"])):
        result = _cli("evaluate", tmp_path / name, "--json", tmp_path / f"{name}.json", "-q", *extra)
        assert result.exit_code == 0, result.output
        report = json.loads((tmp_path / f"{name}.json").read_text())
        metrics.append(report["results"]["metrics"])
    for other in metrics[1:]:
        assert other == pytest.approx(metrics[0], rel=1e-6)
    assert report["config"]["source"]["logits_key"] == "out"


def test_binary_assumption_is_said_on_stderr_and_in_the_report(tmp_path):
    p = RNG.uniform(size=N)
    np.savez(tmp_path / "b.npz", probs=p, labels=RNG.integers(0, 2, N))
    result = _cli("evaluate", tmp_path / "b.npz", "--json", tmp_path / "b.json")
    assert result.exit_code == 0, result.output
    assumed = [line for line in result.stderr.splitlines() if line.startswith("Note: ") and "read " not in line[:11]]
    assert len(assumed) == 1 and "positive-class probabilities" in assumed[0]
    assert result.stderr.count("Note: read ") == 1  # and how the file was read
    assumed = json.loads((tmp_path / "b.json").read_text())["config"]["source"]["assumed"]
    assert "positive-class probabilities" in assumed[0]


def test_calibrate_with_val_file_and_ood_with_other_keys(tmp_path):
    np.savez(tmp_path / "val.npz", probabilities=softmax(LOGITS[:20].astype(np.float64)), targets=LABELS[:20])
    np.savez(tmp_path / "test.npz", probabilities=softmax(LOGITS[20:].astype(np.float64)), targets=LABELS[20:])
    result = _cli("calibrate", tmp_path / "test.npz", "--val", tmp_path / "val.npz", "--method", "histogram",
                  "--json", tmp_path / "c.json", "-q")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "c.json").read_text())
    assert report["config"]["val"] == str(tmp_path / "val.npz")
    np.save(tmp_path / "ood.npy", LOGITS[:10] * 0.1)
    result = _cli("ood", "--in-preds", tmp_path / "test.npz", "--out-preds", tmp_path / "ood.npy", "--json",
                  tmp_path / "o.json", "-q")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "o.json").read_text())["results"]["out"]["n"] == 10


def test_renormalize_through_the_cli(tmp_path):
    rounded = np.round(softmax(LOGITS.astype(np.float64)), 2)
    np.savez(tmp_path / "r.npz", probs=rounded, labels=LABELS)
    assert _cli("evaluate", tmp_path / "r.npz", "-q").exit_code == 2
    result = _cli("evaluate", tmp_path / "r.npz", "--renormalize", "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    expected = evaluate_predictions(rounded / rounded.sum(axis=1, keepdims=True), LABELS)["metrics"]
    assert report["results"]["metrics"] == pytest.approx(expected)
    assert report["config"]["source"]["renormalize"] is True and "renormalised" in result.stderr
