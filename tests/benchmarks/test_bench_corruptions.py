"""benchmarks/bench_corruptions.py runs end to end on a few images and writes its report."""

from __future__ import annotations

import json

import numpy as np

from adacal.data import shift_corruptions
from benchmark_scripts import load_benchmark_script

bench = load_benchmark_script("bench_corruptions")


def test_a_tiny_run_times_every_corruption_and_writes_the_report(tmp_path, capsys):
    images = bench.synthetic_images(12)
    np.savez(tmp_path / "cifar10.npz", test_x=images, test_y=np.arange(12) % 10)
    output = tmp_path / "bench.json"
    assert bench.main(["--data-dir", str(tmp_path), "--n", "4", "--output", str(output)]) == 0
    report = json.loads(output.read_text())
    assert report["kind"] == "bench-corruptions" and report["config"]["images"] == 4
    rows = report["results"]["corruptions"]
    assert list(rows) == shift_corruptions()
    for row in rows.values():
        assert len(row["seconds_by_severity"]) == 5 and row["seconds"] > 0 and len(row["ratio_to_baseline"]) == 5
    assert report["results"]["baseline_seconds"] > 0
    printed = capsys.readouterr().out
    assert "zoom_blur" in printed and "total" in printed


def test_without_cifar10_it_uses_synthetic_images_and_says_so(tmp_path):
    output = tmp_path / "bench.json"
    assert bench.main(["--data-dir", str(tmp_path), "--n", "2", "--corruptions", "fog,contrast",
                       "--output", str(output)]) == 0
    report = json.loads(output.read_text())
    assert report["config"]["data"].startswith("synthetic") and list(report["results"]["corruptions"]) == [
        "fog", "contrast"]
