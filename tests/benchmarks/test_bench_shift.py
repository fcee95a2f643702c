"""benchmarks/bench_shift.py on a tiny CIFAR-shaped run: both arms score the same images, their logits agree, and
the report holds the ratio of the medians it prints."""

from __future__ import annotations

import json
import statistics

import pytest

from benchmark_scripts import load_benchmark_script
from tiny_runs import tiny_cifar_run

bench = load_benchmark_script("bench_shift")


@pytest.mark.slow
def test_both_arms_score_the_same_images_with_the_same_logits(tmp_path, one_torch_thread, capsys):
    data, runs = tmp_path / "data", tmp_path / "runs"
    data.mkdir()
    runs.mkdir()
    with one_torch_thread():
        run_dir, _ = tiny_cifar_run(data, runs)
        out = tmp_path / "bench.json"
        results = bench.main([str(run_dir), "--data-dir", str(data), "--corruption", "contrast", "--severities",
                              "1,3", "--repeats", "2", "--batch-size", "16", "--out", str(out)])
    report = json.loads(out.read_text())["results"]
    # The run's predictions.npz holds its clean test logits: run_shift scores the two shifted sets of its 40 images.
    assert report["sets"] == ["contrast s1", "contrast s3"] and report["images_per_round"] == 80
    assert len(report["images_per_second"]["adacal"]) == len(report["images_per_second"]["bare"]) == 2
    medians = report["median_images_per_second"]
    assert medians["adacal"] == statistics.median(report["images_per_second"]["adacal"])
    assert report["ratio_adacal_over_bare"] == pytest.approx(medians["adacal"] / medians["bare"])
    assert report["logits_agree"] and report["logits_max_abs_difference"] <= bench.LOGITS_TOLERANCE
    assert results["meets_target"] == (report["ratio_adacal_over_bare"] >= 0.9)
    assert "ratio" in capsys.readouterr().out


def test_the_bare_loop_gives_the_models_logits_on_normalised_images(tmp_path, one_torch_thread):
    """The baseline itself against a hand computation: the checkpoint's model on (x / 255 - mean) / std."""
    import torch

    from adacal.data.base import normalization
    from adacal.training.checkpoints import load_checkpoint
    from adacal.training.inference import build_model_from_checkpoint
    from adacal.ood.model import resolve_checkpoint

    data, runs = tmp_path / "data", tmp_path / "runs"
    data.mkdir()
    runs.mkdir()
    with one_torch_thread():
        run_dir, test_x = tiny_cifar_run(data, runs)
        images = torch.from_numpy(test_x[:7].transpose(0, 3, 1, 2).copy())
        seconds, logits = bench.bare_arm(run_dir, {"clean": images}, batch_size=3)
        path, _ = resolve_checkpoint(run_dir)
        model, _ = build_model_from_checkpoint(load_checkpoint(path), path)
        mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in normalization("cifar10"))
        with torch.no_grad():
            expected = model(((images.float() / 255 - mean) / std).float()).numpy()
    assert seconds > 0 and logits["clean"].shape == (7, 10)
    assert abs(logits["clean"] - expected).max() < 1e-4
