"""The trainer's GPU-speed path, checked on every device there is (the CPU always; CUDA where torch sees one — the GPU
slice runs this file with test_cuda_path.py):

- no step reads a device value on the host: host reads (CUDA: synchronising calls) do not grow with the epoch;
- a NaN loss is still refused, naming its batch, whatever the read interval (on CUDA: reads that do not wait);
- the epoch's augmentation parameters, drawn at once and copied once, give the batches per-batch draws gave;
- AdaFocal's fused loss (the CUDA path) equals the composed formula (the CPU path): values, gradients, C_train.

That the CPU path's results stay bit for bit what they were is checked by the determinism and resume tests beside
this file (tests/training/test_train_loop.py, test_resume_*.py).
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from adacal.data import BatchLoader
from adacal.data.base import Dataset, Split
from adacal.losses import AdaFocalLoss
from adacal.losses.adafocal import _FusedAdaFocal
from adacal.models import build_model
from adacal.runs import RunFolder
from adacal.training import TrainConfig, Trainer, resolve_config
from adacal.training.loop import NonFiniteLossError

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                  reason="needs a CUDA device"))]
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_trainer.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_trainer", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_images(n: int, seed: int = 0) -> Dataset:
    generator = torch.Generator().manual_seed(seed)

    def split(count: int) -> Split:
        return Split(torch.randint(0, 256, (count, 3, 8, 8), dtype=torch.uint8, generator=generator),
                     torch.randint(0, 10, (count,), generator=generator))

    return Dataset(name="cifar10", kind="image", num_classes=10, classes=[str(i) for i in range(10)],
                   input_shape=(3, 8, 8), train=split(n), val=split(32), test=split(32),
                   extra={"mean": (0.5, 0.5, 0.5), "std": (0.25, 0.25, 0.25)})


def make_trainer(dataset: Dataset, folder: Path, device: str, loss: nn.Module | None = None,
                 name: str = "adafocal") -> Trainer:
    config = resolve_config(TrainConfig(dataset="cifar10", model="resnet20", loss=name, epochs=10, batch_size=8,
                                        device=device, out=str(folder)))
    torch.manual_seed(0)
    model = build_model("resnet20", num_classes=10, input_shape=(3, 8, 8))
    loss = loss if loss is not None else (AdaFocalLoss() if name == "adafocal" else nn.CrossEntropyLoss())
    return Trainer(config, dataset=dataset, model=model, loss=loss, model_name="resnet20", model_options={},
                   device=torch.device(device if device == "cpu" else "cuda", None if device == "cpu" else 0),
                   run=RunFolder(folder))


# ------------------------------------------------------------------------------------------------ host reads


def _reads(device: str, run) -> int:
    bench = _bench()
    return bench.count_cuda_syncs(run) if device == "cuda" else bench.count_host_reads(run)


@pytest.mark.parametrize("device", DEVICES)
def test_no_training_step_reads_a_device_value_on_the_host(device, tmp_path):
    """With the GPU's read interval longer than the epoch, a 6-batch epoch reads as often as a 2-batch one: the
    reads are the epoch's fixed few (its end), none per step — a per-step `.item()` would add 4."""
    counts = {}
    for batches in (2, 6):
        trainer = make_trainer(tiny_images(8 * batches), tmp_path / str(batches), device)
        trainer.read_every = 1000
        trainer.train_epoch(1)
        counts[batches] = _reads(device, lambda: trainer.train_epoch(2))  # noqa: B023
    assert counts[6] == counts[2], counts


def test_the_host_read_counter_sees_a_read_sneaking_into_the_step(tmp_path):
    """The check above would fail if a step read a value: here the loss reads its own value every batch."""

    class Reading(nn.CrossEntropyLoss):
        def forward(self, logits, labels):
            value = super().forward(logits, labels)
            value.item()
            return value

    counts = {}
    for batches in (2, 6):
        trainer = make_trainer(tiny_images(8 * batches), tmp_path / str(batches), "cpu", loss=Reading(), name="ce")
        trainer.read_every = 1000
        trainer.train_epoch(1)
        counts[batches] = _reads("cpu", lambda: trainer.train_epoch(2))  # noqa: B023
    assert counts[6] - counts[2] == 4


# ------------------------------------------------------------------------------------------------ NaN checks


class NaNAtBatch(nn.Module):
    """Cross-entropy, except NaN at its `batch`-th call (counted on the host: no device read)."""

    def __init__(self, batch: int) -> None:
        super().__init__()
        self.batch, self.calls = batch, 0

    def forward(self, logits, labels):
        self.calls += 1
        value = F.cross_entropy(logits, labels)
        return value * float("nan") if self.calls == self.batch else value


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("read_every", [1, 4, 1000])
def test_a_nan_loss_is_refused_naming_its_batch_whatever_the_read_interval(device, read_every, tmp_path):
    trainer = make_trainer(tiny_images(80), tmp_path, device, loss=NaNAtBatch(5), name="ce")
    trainer.read_every = read_every
    with pytest.raises(NonFiniteLossError, match=r"became NaN at epoch 1, batch 5 "):
        trainer.train_epoch(1)


@pytest.mark.parametrize("read_every", [1, 3, 1000])
def test_the_read_interval_does_not_change_what_an_epoch_reports(read_every, tmp_path):
    reference = make_trainer(tiny_images(56), tmp_path / "reference", "cpu").train_epoch(1)["train"]
    trainer = make_trainer(tiny_images(56), tmp_path / "other", "cpu")
    trainer.read_every = read_every
    assert trainer.train_epoch(1)["train"] == reference


# ------------------------------------------------------------------------------------------------ augmentation


@pytest.mark.parametrize("device", DEVICES)
def test_an_epochs_augmentation_drawn_at_once_gives_the_batches_of_per_batch_draws(device):
    data = tiny_images(45)
    loader = BatchLoader(data.train, 8, dataset=data, shuffle=True, augment=True, device=device, seed=3)
    loader.set_epoch(2)
    batches = [x.cpu() for x, _ in loader]
    reference = BatchLoader(data.train, 8, dataset=data, shuffle=True, augment=True, device="cpu", seed=3)
    reference.set_epoch(2)
    generator = reference.augmentation_generator()
    order = reference.indices()
    for b, batch in enumerate(batches):
        raw = data.train.inputs[order[b * 8 : (b + 1) * 8]]
        expected = reference.prepare(raw, generator)  # the per-batch draw: top, left, flips of this batch
        assert torch.equal(batch, expected) if device == "cpu" else torch.allclose(batch, expected, atol=1e-6)
    # resuming after batch 3 gives the tail of the same epoch
    tail = [x.cpu() for x, _ in loader.iterate(3)]
    assert all(torch.equal(a, b) for a, b in zip(tail, batches[3:])) and len(tail) == len(batches) - 3


# ------------------------------------------------------------------------------------------------ fused AdaFocal


def _pair(device: str, dtype: torch.dtype) -> tuple[AdaFocalLoss, AdaFocalLoss]:
    composed, fused = AdaFocalLoss(n_bins=5).to(device), AdaFocalLoss(n_bins=5).to(device)
    composed.fused_devices, fused.fused_devices = (), (torch.device(device).type,)
    gammas = torch.tensor([1.5, 0.0, -0.2, 0.2, -2.0], dtype=torch.float64)
    for loss in (composed, fused):
        loss.gammas.copy_(gammas)
        loss.bin_edges.copy_(torch.tensor([0.0, 0.3, 0.6, 0.8, 0.95, 1.0], dtype=torch.float64))
    return composed, fused


def _logits(dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(256, 10, generator=generator, dtype=torch.float64) * 4
    logits[0, 0], logits[1, 0], logits[2, 0], logits[3, 0] = 60.0, -60.0, 200.0, 25.0  # p → 1, p → 0, 1 − p = 0
    labels = torch.randint(0, 10, (256,), generator=generator)
    labels[:4] = 0
    return logits.to(device=device, dtype=dtype), labels.to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_the_fused_adafocal_loss_equals_the_composed_formula(device, dtype, tolerance):
    composed, fused = _pair(device, dtype)
    logits, labels = _logits(dtype, device)
    values, grads = [], []
    for loss in (composed, fused):
        inputs = logits.clone().requires_grad_()
        value = loss(inputs, labels)
        value.backward()
        values.append(value.detach())
        grads.append(inputs.grad)
    assert torch.isfinite(grads[1]).all()
    torch.testing.assert_close(values[1], values[0], rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(grads[1], grads[0], rtol=tolerance, atol=tolerance / 100)
    # C_train: the same samples in the same bins, the same confidences summed
    assert torch.equal(fused.train_count, composed.train_count)
    torch.testing.assert_close(fused.train_confidence_sum, composed.train_confidence_sum, rtol=1e-12, atol=1e-12)


def test_the_fused_gradient_passes_gradcheck():
    generator = torch.Generator().manual_seed(1)
    logits = (torch.randn(8, 4, generator=generator, dtype=torch.float64) * 3).requires_grad_()
    labels = torch.randint(0, 4, (8,), generator=generator)
    edges = torch.tensor([0.2, 0.5, 0.8], dtype=torch.float64)
    table = torch.tensor([[1.5, 0.0], [0.0, 0.0], [0.0, 0.2], [3.0, 0.0]], dtype=torch.float64)
    minus_ones = torch.full((8, 1), -1.0, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda z: _FusedAdaFocal.apply(z, labels, edges, table, minus_ones)[0], (logits,))


def test_the_fused_path_follows_every_change_of_gamma():
    """Its (a, b) table is rebuilt after an update, a loaded state and a move, never read stale."""
    loss = AdaFocalLoss(n_bins=2)
    loss.fused_devices = ("cpu",)
    logits, labels = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 3.0]]), torch.tensor([0, 1, 0])
    reference = AdaFocalLoss(n_bins=2)
    reference.fused_devices = ()

    def agree() -> bool:
        return torch.allclose(loss(logits, labels), reference(logits, labels), rtol=1e-6)

    assert agree()
    for other in (loss, reference):
        other.update(logits, labels)
    assert agree()
    state = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in loss.state_dict().items()}
    state["gammas"] = torch.tensor([-1.0, 4.0], dtype=torch.float64)
    loss.load_state_dict(state)
    reference.load_state_dict(state)
    assert agree()
    loss.to(torch.float32)  # buffers replaced by a move or a cast: the table follows the new tensor
    loss.to(torch.float64)
    assert agree()


def test_cuda_takes_the_fused_path_and_the_cpu_the_composed_one():
    assert AdaFocalLoss.fused_devices == ("cuda",)


def test_the_gpu_speed_figures_count_what_they_claim(tmp_path):
    """bench_trainer.py's launch counts: the fused loss runs fewer operators than the composed one."""
    bench = _bench()
    data = tiny_images(24)
    counts = {}
    for arm in ("adafocal-fused", "adafocal-composed"):
        trainer = bench.make_trainer(data, arm, torch.device("cpu"), False, tmp_path / arm, batch_size=8)
        trainer.train_epoch(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            counts[arm] = bench.operator_counts(lambda: trainer.train_epoch(2),  # noqa: B023
                                                torch.device("cpu"))["operators"]
    assert counts["adafocal-fused"] < counts["adafocal-composed"]
