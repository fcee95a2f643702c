"""benchmarks/bench_llm.py at a tiny size: the harness dump it writes is read by adacal with the figures of an
independent json + numpy reading, one row per task, and the over-confidence it builds in is what temperature finds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_llm  # noqa: E402


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "bench_llm.json"
    result = bench_llm.main(["--n", "200", "--per-task", "300", "--repeats", "1", "--no-model", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    return result


def test_adacal_reads_the_dump_as_json_and_numpy_do(result):
    speed = result["speed"]
    assert speed["n_questions"] == 200
    assert speed["adacal_ece_ew"] == pytest.approx(speed["numpy_ece_ew"], abs=1e-12)
    assert speed["adacal_accuracy"] == pytest.approx(speed["numpy_accuracy"], abs=1e-12)
    assert speed["ratio"] > 0


def test_the_folder_is_one_ragged_input_with_a_row_per_task(result):
    folder = result["folder"]
    assert folder["kind"] == "top-label confidences"  # ARC's 3 to 5 options make the folder ragged
    assert sorted(folder["per_task"]) == sorted(task for task, _ in bench_llm.TASKS)
    assert all(row["n"] == 300 for row in folder["per_task"].values())


def test_temperature_finds_the_over_confidence_built_in(result):
    folder = result["folder"]
    assert 1.5 < folder["temperature"] < 2.7
    assert folder["ece_ew_after"] < folder["ece_ew_before"]


def test_the_dump_lines_are_the_harness_layout(tmp_path):
    truth = bench_llm.write_harness_dump(tmp_path, 5, seed=3)
    line = json.loads((tmp_path / f"samples_mmlu_anatomy_{bench_llm.DATE}.jsonl").read_text().splitlines()[0])
    assert set(line["arguments"]) == {"gen_args_0", "gen_args_1", "gen_args_2", "gen_args_3"}
    assert all(isinstance(value, str) for pair in line["filtered_resps"] for value in pair)
    lls = np.array([float(pair[0]) for pair in line["filtered_resps"]])
    assert line["acc"] == float(np.argmax(lls) == int(line["target"]))
    assert int(line["target"]) == truth["mmlu_anatomy"]["labels"][0]


@pytest.mark.slow
def test_a_tiny_language_model_scores_options_and_adacal_reads_its_accuracy(tmp_path):
    pytest.importorskip("transformers", reason="the model section needs transformers (the test extra has it)")
    model = bench_llm.model_section(tmp_path, 6)
    assert model["adacal_accuracy"] == pytest.approx(model["model_accuracy"])
