"""`adacal plot reliability INPUT --group-by KEY`: one diagram per group whose bins and headline ECEs are those of the
group's rows alone (the numbers `evaluate --group-by` reports), at most 12 (the largest groups, noted), and the
refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import one_line_error, runner

from adacal.cli import app
from adacal.commands.evaluate import run_evaluate
from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics
from adacal.plots import ReliabilityRequest, reliability_inputs
from adacal.plots.reliability_groups import MAX_GROUP_PANELS


def _answers(path, groups):
    rng = np.random.default_rng(0)
    lines = []
    for name, count in groups:
        for _ in range(count):
            c = float(rng.uniform(0.3, 1.0))
            lines.append(json.dumps({"subject": name, "confidence": c, "correct": bool(rng.uniform() < c)}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_panels_are_the_groups_rows_alone(tmp_path):
    path = _answers(tmp_path / "a.jsonl", [("math", 40), ("law", 25), ("bio", 7)])
    panels = reliability_inputs(ReliabilityRequest([path], n_bins=10, group_by="subject"))
    assert [panel.label for panel in panels] == ["bio (n=7)", "law (n=25)", "math (n=40)"]
    rows = {row["group"]: row for row in
            run_evaluate(path, n_bins=10, group_by="subject").report["results"]["groups"]["rows"]}
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for panel, name in zip(panels, ("bio", "law", "math")):
        assert panel.ece_em == pytest.approx(rows[name]["metrics"]["ece_em"], abs=1e-15)
        assert panel.ece_ew == pytest.approx(rows[name]["metrics"]["ece_ew"], abs=1e-15)
        conf = [r["confidence"] for r in records if r["subject"] == name]
        hit = [r["correct"] for r in records if r["subject"] == name]
        expected = bin_statistics(conf, hit, n_bins=10)
        assert panel.stats.counts.tolist() == expected.counts.tolist()
        assert np.allclose(panel.stats.accuracy, expected.accuracy, equal_nan=True)


def test_class_scores_panels_match_evaluate(tmp_path):
    rng = np.random.default_rng(4)
    logits = rng.normal(0, 2, size=(90, 3))
    labels = rng.integers(0, 3, size=90)
    np.savez(tmp_path / "p.npz", logits=logits, labels=labels, task=np.repeat(["x", "y", "z"], 30))
    panels = reliability_inputs(ReliabilityRequest([tmp_path / "p.npz"], group_by="task"))
    rows = run_evaluate(tmp_path / "p.npz", group_by="task").report["results"]["groups"]["rows"]
    assert [panel.ece_em for panel in panels] == pytest.approx([row["metrics"]["ece_em"] for row in rows], abs=1e-12)


def test_at_most_twelve_panels_the_largest(tmp_path):
    sizes = [(f"g{i:02d}", 3 + i) for i in range(15)]  # g00 (3 answers) ... g14 (17)
    path = _answers(tmp_path / "a.jsonl", sizes)
    notes: list[str] = []
    panels = reliability_inputs(ReliabilityRequest([path], group_by="subject"), notes_out=notes)
    assert len(panels) == MAX_GROUP_PANELS == 12
    assert [panel.label.split()[0] for panel in panels] == [f"g{i:02d}" for i in range(3, 15)]  # sorted by name
    assert any("15 groups of subject: drew the 12 largest, left out 3" in note for note in notes)


def test_refusals(tmp_path):
    path = _answers(tmp_path / "a.jsonl", [("math", 5), ("law", 5)])
    with pytest.raises(InputError, match="exactly one INPUT with --group-by"):
        reliability_inputs(ReliabilityRequest([path, tmp_path / "a.jsonl.copy"], group_by="subject"))
    with pytest.raises(InputError, match="found none: its group keys are subject"):
        reliability_inputs(ReliabilityRequest([path], group_by="task"))
    with pytest.raises(InputError, match="neither --labels nor --calibrated"):
        reliability_inputs(ReliabilityRequest([path], group_by="subject", labels=["x"]))
    run_evaluate(path, json_path=tmp_path / "r.json")
    with pytest.raises(InputError, match="needs per-sample predictions"):
        reliability_inputs(ReliabilityRequest([tmp_path / "r.json"], group_by="subject"))


def test_cli_draws_the_grid(tmp_path):
    path = _answers(tmp_path / "a.jsonl", [("math", 20), ("law", 20)])
    out = tmp_path / "groups.png"
    result = runner.invoke(app, ["plot", "reliability", str(path), "--group-by", "subject", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and out.stat().st_size > 1000
    one_line_error(runner.invoke(app, ["plot", "reliability", str(path), "--group-by", "topic",
                                       "--out", str(tmp_path / "x.png")]), "--group-by key 'topic'")
