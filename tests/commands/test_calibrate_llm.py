"""`adacal calibrate` on LLM evaluation outputs (docs/inputs.md §10): a ragged harness file or a folder of them is
calibrated as top-label confidences (confidence maps), a file of K options per question as class scores (temperature
on the option log-likelihoods), on a seeded split of one input (`--val-fraction`), per task with `--group-by`. The
dump is over-confident by construction (log-likelihoods twice calibrated latent scores: benchmarks/bench_llm.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from adacal.cli import app
from adacal.commands import run_calibrate
from adacal.sources import ReadOptions

from cli_helpers import one_line_error

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_llm  # noqa: E402

runner = CliRunner()


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llm") / "dump"
    truth = bench_llm.write_harness_dump(folder, 600, seed=5)
    return folder, truth


def _file(folder, task):
    return folder / f"samples_{task}_{bench_llm.DATE}.jsonl"


def test_ragged_questions_are_calibrated_as_top_label_confidences(dump):
    folder, truth = dump
    run = run_calibrate(_file(folder, "arc_challenge"), val_fraction=0.5, seed=0)
    platt = run.results["calibrators"]["platt"]
    assert run.n_val + run.n_test == len(truth["arc_challenge"]["labels"])
    assert platt["test_post"]["ece_em"] < platt["test_pre"]["ece_em"]  # over-confident by construction
    assert platt["test_post"]["error"] == platt["test_pre"]["error"]  # a confidence map keeps every answer
    # Before calibration the test figures are those of the softmax of each question's own options, by hand.
    probs = [np.exp(z * bench_llm.OVERCONFIDENCE - (z * bench_llm.OVERCONFIDENCE).max())
             for z in truth["arc_challenge"]["latent"]]
    accuracy = np.mean([np.argmax(p) == y for p, y in zip(probs, truth["arc_challenge"]["labels"])])
    assert abs((1 - platt["test_pre"]["error"]) - accuracy) < 0.08  # the test half of the same questions


def test_a_folder_of_tasks_is_one_input_with_a_table_per_task(dump, tmp_path):
    folder, truth = dump
    out = tmp_path / "c.json"
    result = runner.invoke(app, ["calibrate", str(folder), "--val-fraction", "0.5", "--group-by", "task",
                                 "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["input"]["sha256"].startswith("files-sha256:")
    before = {row["group"]: row for row in report["results"]["groups"]["before"]["rows"]}
    assert sorted(before) == sorted(truth)
    assert sum(row["n_samples"] for row in before.values()) == report["results"]["split"]["n_test"]


def test_k_options_per_question_are_class_scores_and_temperature_finds_the_overconfidence(dump):
    folder, _ = dump
    run = run_calibrate(_file(folder, "mmlu_anatomy"), method="temperature", val_fraction=0.5, seed=0)
    temperature = run.results["calibrators"]["temperature"]["params"]["temperature"]
    assert 1.5 < temperature < 2.7  # the dump's log-likelihoods are twice the calibrated scores


def test_llm_options_reach_calibrate_and_are_refused_for_other_files(dump, tmp_path):
    folder, _ = dump
    normalised = run_calibrate(_file(folder, "mmlu_anatomy"), method="temperature", val_fraction=0.5, seed=0,
                               options=ReadOptions(length_normalize=True))
    plain = run_calibrate(_file(folder, "mmlu_anatomy"), method="temperature", val_fraction=0.5, seed=0)
    assert normalised.results["calibrators"]["temperature"]["test_pre"] != \
        plain.results["calibrators"]["temperature"]["test_pre"]
    np.savez(tmp_path / "p.npz", logits=np.zeros((20, 3)), labels=np.arange(20) % 3)
    result = runner.invoke(app, ["calibrate", str(tmp_path / "p.npz"), "--val-fraction", "0.5",
                                 "--length-normalize"])
    one_line_error(result, "--length-normalize only with LLM evaluation outputs")
