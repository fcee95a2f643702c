"""benchmarks/bench_metrics_memory.py: the peak-memory measurement counts what a call allocates, and only that."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmark_scripts import load_benchmark_script

memory_bench = load_benchmark_script("bench_metrics_memory")
needs_peak_counter = pytest.mark.skipif(not memory_bench.peak_counter_available(),
                                        reason="needs Linux's resettable peak RSS (/proc/self/clear_refs)")


@needs_peak_counter
def test_extra_peak_sees_a_temporary_of_known_size_and_not_the_memory_held_before():
    held = np.ones(20 << 17)  # 20 MiB resident before the call: not counted
    extra, value = memory_bench.extra_peak(lambda: float(np.ones(40 << 17).sum()))  # a 40 MiB temporary
    assert value == 40 << 17
    assert 39 << 20 <= extra <= 44 << 20
    assert held.size


@needs_peak_counter
def test_a_call_that_allocates_nothing_large_measures_near_zero():
    data = np.arange(1 << 20, dtype=np.float64)
    extra, _ = memory_bench.extra_peak(lambda: float(data.sum()))
    assert extra < 2 << 20


@needs_peak_counter
def test_child_measurement_reports_adacal_ece_and_its_value(tmp_path):
    from adacal.metrics import ece_ew

    result = memory_bench.measure_in_this_process("adacal ece-ew", 20_000, 10, "float32", 0, 15)
    logits, labels = memory_bench.make_logits(20_000, 10, 0, np.float32)
    assert result["value"] == pytest.approx(ece_ew(memory_bench.probs_of(logits), labels), abs=1e-12)
    assert result["input_bytes"] == 20_000 * 10 * 4
    # O(N): a few dozen bytes a sample at most, never a copy of the matrix.
    assert 0 < result["extra_peak_bytes"] < 80 * 20_000


@needs_peak_counter
def test_main_writes_every_requested_contender(tmp_path):
    out = tmp_path / "memory.json"
    memory_bench.main(["--n", "5000", "--k", "5", "--dtypes", "float64", "--only", "max pass,adacal ece-em",
                       "--out", str(out)])
    block = json.loads(out.read_text())["by_dtype"]["float64"]
    assert set(block) == {"max pass", "adacal ece-em", "floor_note"}
    assert block["adacal ece-em"]["input_bytes"] == 5000 * 5 * 8


def test_unknown_contender_is_refused(capsys):
    with pytest.raises(SystemExit):
        memory_bench.main(["--only", "adacal ece-xx"])
    assert "unknown contender" in capsys.readouterr().err


speed_bench = load_benchmark_script("bench_metrics")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_read_pass_reads_every_entry(threads):
    """The memory-floor contender of bench_metrics.py sees every entry, whichever thread's chunk holds the largest."""
    rng = np.random.default_rng(threads)
    array = rng.random((1001, 7)).astype(np.float32)
    for row in (0, 500, 1000):
        probe = array.copy()
        probe[row, 6] = 2.0
        assert speed_bench.read_pass(probe, threads) == 2.0
    assert speed_bench.read_pass(array, threads) == float(array.max())


def test_dtype_section_reports_each_ece_against_the_read_pass(tmp_path, capsys):
    out = tmp_path / "bench.json"
    speed_bench.main(["--dtype-only", "--no-peers", "--n", "3000", "--k", "5", "--repeats", "1", "--out", str(out)])
    report = json.loads(out.read_text())
    for block in report["by_dtype"].values():
        assert block["read_pass_s"] > 0
        for name in speed_bench.ECE_NAMES:
            assert block[name]["x_read_pass"] == pytest.approx(block[name]["adacal_s"] / block["read_pass_s"])
    assert "read pass" in capsys.readouterr().out
