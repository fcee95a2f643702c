"""The CUDA path end to end: training on every spelling of a GPU device, with and without AMP and channels_last,
resuming, and scoring a checkpoint on the GPU and on the CPU. Skipped where torch sees no CUDA device (CI has none);
run it on a GPU machine after touching devices, loaders, AMP or checkpoints. The CPU-side rules behind it (how
--device resolves, what gets pinned) are tested in tests/data/test_data_loader.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.training import TrainConfig, predict_checkpoint, train

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def tiny_cifar(tmp_path_factory):
    """A CIFAR-shaped prepared-array folder: 10 classes of random 32×32 images, 400 train / 100 test."""
    folder = tmp_path_factory.mktemp("cifar")
    rng = np.random.default_rng(0)
    np.savez(folder / "cifar10.npz",
             train_x=rng.integers(0, 256, (400, 32, 32, 3), dtype=np.uint8), train_y=np.arange(400) % 10,
             test_x=rng.integers(0, 256, (100, 32, 32, 3), dtype=np.uint8), test_y=np.arange(100) % 10,
             classes=np.array([f"c{i}" for i in range(10)]))
    return folder


def _config(folder, out, **options) -> TrainConfig:
    settings = dict(dataset="cifar10", model="resnet20", loss="adafocal", data_dir=str(folder), out=str(out),
                    epochs=1, batch_size=32, val_size=64, update_every="4")
    return TrainConfig(**{**settings, **options})


@pytest.mark.parametrize("device", ["auto", "cuda", "cuda:0"])
@pytest.mark.parametrize("amp, channels_last", [(False, False), (True, True)])
def test_training_runs_on_every_spelling_of_the_gpu(tiny_cifar, tmp_path, device, amp, channels_last):
    result = train(_config(tiny_cifar, tmp_path, device=device, amp=amp, channels_last=channels_last))
    assert 0.0 <= result.test_metrics["error"] <= 1.0 and result.gammas is not None


def test_a_gpu_run_resumes_and_its_checkpoint_scores_alike_on_gpu_and_cpu(tiny_cifar, tmp_path):
    first = train(_config(tiny_cifar, tmp_path, device="cuda"))
    resumed = train(_config(tiny_cifar, tmp_path, device="cuda", epochs=2, resume=str(first.run_dir)))
    assert resumed.resumed_from == 1
    checkpoint = resumed.run_dir / "checkpoints" / "last.pt"
    on_gpu = predict_checkpoint(checkpoint, data_dir=tiny_cifar, device="cuda")
    on_cpu = predict_checkpoint(checkpoint, data_dir=tiny_cifar, device="cpu")
    np.testing.assert_array_equal(on_gpu.labels, on_cpu.labels)
    np.testing.assert_allclose(on_gpu.logits, on_cpu.logits, rtol=1e-3, atol=1e-3)
