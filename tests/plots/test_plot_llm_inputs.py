"""`plot reliability` on what `evaluate` reads as top-label confidences — a `(confidence, correct)` file, ragged
LLM questions, a folder of lm-evaluation-harness sample files — with and without `--group-by`: each diagram's ECEs
are the numbers `adacal evaluate` prints for the same rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from adacal.cli import app
from adacal.commands import run_evaluate
from adacal.plots import ReliabilityRequest, reliability_inputs

from cli_helpers import one_line_error


sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_llm  # noqa: E402

runner = CliRunner()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("llm-plots")
    rng = np.random.default_rng(2)
    confidence = rng.uniform(0.3, 1.0, 400)
    correct = rng.uniform(size=400) < confidence ** 2
    pairs = root / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"confidence": float(c), "correct": bool(k), "task": "ab"[i % 2]}) + "\n"
                             for i, (c, k) in enumerate(zip(confidence, correct))))
    bench_llm.write_harness_dump(root / "dump", 150, seed=4)
    return root, pairs


def _evaluated(path):
    metrics = run_evaluate(path).report["results"]["metrics"]
    return metrics["ece_em"], metrics["ece_ew"]


def test_a_confidence_file_is_drawn_with_evaluate_s_eces(inputs):
    _, pairs = inputs
    (panel,) = reliability_inputs(ReliabilityRequest([pairs]))
    assert (panel.ece_em, panel.ece_ew) == pytest.approx(_evaluated(pairs), abs=1e-12)
    assert int(panel.stats.counts.sum()) == 400


def test_ragged_questions_are_drawn_on_the_top_answer(inputs):
    root, _ = inputs
    ragged = root / "dump" / f"samples_arc_challenge_{bench_llm.DATE}.jsonl"
    (panel,) = reliability_inputs(ReliabilityRequest([ragged]))
    assert (panel.ece_em, panel.ece_ew) == pytest.approx(_evaluated(ragged), abs=1e-12)


def test_a_folder_of_sample_files_is_one_input_drawn_per_task(inputs):
    root, _ = inputs
    panels = reliability_inputs(ReliabilityRequest([root / "dump"], group_by="task"))
    assert [panel.label for panel in panels] == [f"{task} (n=150)" for task in sorted(t for t, _ in bench_llm.TASKS)]
    (whole,) = reliability_inputs(ReliabilityRequest([root / "dump"]))
    assert int(whole.stats.counts.sum()) == 150 * len(bench_llm.TASKS)


def test_class_scores_and_pairs_side_by_side_and_calibrated_refused(inputs, tmp_path):
    root, pairs = inputs
    fixed = root / "dump" / f"samples_mmlu_anatomy_{bench_llm.DATE}.jsonl"
    panels = reliability_inputs(ReliabilityRequest([fixed, pairs]))
    assert len(panels) == 2
    from adacal.commands import run_calibrate

    run_calibrate(fixed, method="temperature", val_fraction=0.5, save=tmp_path / "t.json")
    result = runner.invoke(app, ["plot", "reliability", str(pairs), "--calibrated", str(tmp_path / "t.json"),
                                 "--out", str(tmp_path / "r.png")])
    one_line_error(result, "--calibrated needs class scores")
    assert not (tmp_path / "r.png").exists()
    result = runner.invoke(app, ["plot", "reliability", str(root / "dump"), "--group-by", "task",
                                 "--out", str(tmp_path / "g.png")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "g.png").stat().st_size > 0
