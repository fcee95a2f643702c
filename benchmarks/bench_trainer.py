"""What the Trainer costs: its training throughput against a bare PyTorch loop, and AdaFocal's whole-epoch overhead.

    python benchmarks/bench_trainer.py                  # about 1-2 minutes on 2 idle CPU cores, ~1 minute on a GPU
    python benchmarks/bench_trainer.py --train-size 2048 --val-size 1000 --batches 8   # bigger CPU epochs (~5 min)

1. Throughput (images/s) of `Trainer.train_epoch` (loss module, NaN checks, running statistics, progress events)
   against a bare loop (forward, F.cross_entropy, backward, SGD step) on the same model (CIFAR ResNet-20), the same
   BatchLoader (tensor-resident data, random crop + flip, normalisation), the same optimiser settings, device and
   batch size 128; channels_last off and on. Trainer and bare epochs alternate (which goes first alternates too) and
   we report medians and the median of the per-round ratios (target >= 0.95).
2. Whole-epoch overhead of AdaFocal over cross-entropy, both with one validation pass per epoch
   (`Trainer.epoch_record`: train, LR step, validation forward, metrics, γ-update and C_train statistics; checkpoint
   writes excluded since they are disk noise and the same for both): 2048 training / 1000 validation images on a
   GPU, 1024 / 500 on a CPU (to stay within 4 minutes on 2 busy cores), interleaved epochs, medians (target <= 1 %).
   Because 1 % is below the run-to-run noise of a busy machine, the AdaFocal-only pieces are also timed directly
   (γ-update, C_train read-out, loss forward+backward vs CE), giving an estimate that noise does not swamp.

Data: a CIFAR-10 slice from the shared data folder (../shared/data/cifar10.npz beside the checkout) when present,
else random uint8 images (the JSON says which). Writes benchmarks/results/bench_trainer.json atomically.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from adacal.data import BatchLoader, load_dataset  # noqa: E402
from adacal.data.base import Dataset, Split  # noqa: E402
from adacal.losses import build_loss  # noqa: E402
from adacal.models import build_model  # noqa: E402
from adacal.reports import make_report, write_json  # noqa: E402
from adacal.runs import RunFolder  # noqa: E402
from adacal.training import TrainConfig, Trainer, resolve_config  # noqa: E402
from adacal.training.inference import resolve_device  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_trainer.json"
SHARED_CIFAR = ROOT.parent / "shared" / "data" / "cifar10.npz"
BATCH = 128


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load_data(train_size: int, val_size: int, seed: int = 0) -> tuple[Dataset, str]:
    if SHARED_CIFAR.is_file():
        dataset = load_dataset("cifar10", data_dir=SHARED_CIFAR.parent, seed=seed, train_subset=train_size,
                               val_size=val_size, download=False)
        return dataset, f"CIFAR-10 slice from {SHARED_CIFAR} ({train_size} train / {val_size} val)"
    generator = torch.Generator().manual_seed(seed)

    def split(n: int) -> Split:
        return Split(torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=generator),
                     torch.randint(0, 10, (n,), generator=generator))

    dataset = Dataset(
        name="cifar10", kind="image", num_classes=10, classes=[str(i) for i in range(10)], input_shape=(3, 32, 32),
        train=split(train_size), val=split(val_size), test=split(val_size),
        extra={"mean": (0.5, 0.5, 0.5), "std": (0.25, 0.25, 0.25)},
    )
    return dataset, f"random uint8 images (shared CIFAR-10 not found; {train_size} train / {val_size} val)"


def make_trainer(dataset: Dataset, loss: str, device: torch.device, channels_last: bool, folder: Path) -> Trainer:
    config = resolve_config(TrainConfig(
        dataset="cifar10", model="resnet20", loss=loss, epochs=1000, batch_size=BATCH, device=str(device),
        channels_last=channels_last, out=str(folder),
    ))
    torch.manual_seed(0)
    model = build_model("resnet20", num_classes=10, input_shape=(3, 32, 32))
    return Trainer(config, dataset=dataset, model=model, loss=build_loss(loss), model_name="resnet20",
                   model_options={}, device=device, run=RunFolder(folder))


class BareLoop:
    """The loop a user would write by hand, on the same model, data pipeline and optimiser settings."""

    def __init__(self, dataset: Dataset, device: torch.device, channels_last: bool) -> None:
        torch.manual_seed(0)
        self.model = build_model("resnet20", num_classes=10, input_shape=(3, 32, 32)).to(device)
        if channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        self.loader = BatchLoader(dataset.train, BATCH, dataset=dataset, shuffle=True, augment=True, device=device,
                                  channels_last=channels_last)
        self.device = device

    def train_epoch(self, epoch: int) -> None:
        self.loader.set_epoch(epoch)
        self.model.train()
        for inputs, labels in self.loader:
            loss = F.cross_entropy(self.model(inputs), labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()


def timed(fn, device: torch.device) -> float:
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def bench_throughput(
    dataset: Dataset, device: torch.device, rounds: int, batches: int, folder: Path, warm_up: bool
) -> dict:
    train = dataset.train
    n = min(len(train), batches * BATCH)
    small = dataclasses.replace(dataset, train=Split(train.inputs[:n], train.labels[:n]))
    results = {}
    for channels_last in (False, True):
        trainer = make_trainer(small, "ce", device, channels_last, folder)
        bare = BareLoop(small, device, channels_last)
        if warm_up:
            trainer.train_epoch(1)  # allocator, kernels, cudnn autotuning
            bare.train_epoch(1)
        trainer_rates, bare_rates, ratios = [], [], []
        for r in range(rounds):
            epoch = r + 2
            run_trainer = lambda: trainer.train_epoch(epoch)  # noqa: E731
            run_bare = lambda: bare.train_epoch(epoch)  # noqa: E731
            order = [("trainer", run_trainer), ("bare", run_bare)]
            if r % 2:
                order.reverse()
            seconds = {name: timed(fn, device) for name, fn in order}
            trainer_rates.append(n / seconds["trainer"])
            bare_rates.append(n / seconds["bare"])
            ratios.append(trainer_rates[-1] / bare_rates[-1])
        key = "channels_last_on" if channels_last else "channels_last_off"
        results[key] = {
            "trainer_images_per_s": statistics.median(trainer_rates),
            "bare_images_per_s": statistics.median(bare_rates),
            "ratio": statistics.median(ratios),
            "ratios": ratios,
            "images_per_epoch": n,
        }
        print(f"throughput channels_last={'on ' if channels_last else 'off'}: trainer "
              f"{results[key]['trainer_images_per_s']:.1f} img/s, bare {results[key]['bare_images_per_s']:.1f} img/s,"
              f" ratio {results[key]['ratio']:.3f} (target >= 0.95)", flush=True)
    return results


def bench_adafocal_overhead(
    dataset: Dataset, device: torch.device, rounds: int, folder: Path, warm_up: bool
) -> dict:
    trainers = {loss: make_trainer(dataset, loss, device, False, folder) for loss in ("ce", "adafocal")}
    if warm_up:
        for trainer in trainers.values():
            trainer.epoch_record(1)
    times: dict[str, list[float]] = {"ce": [], "adafocal": []}
    ratios = []
    for r in range(rounds):
        order = ["ce", "adafocal"] if r % 2 == 0 else ["adafocal", "ce"]
        seconds = {}
        for loss in order:
            seconds[loss] = timed(lambda: trainers[loss].epoch_record(r + 2), device)  # noqa: B023
            times[loss].append(seconds[loss])
        ratios.append(seconds["adafocal"] / seconds["ce"])
    ce_s, ada_s = statistics.median(times["ce"]), statistics.median(times["adafocal"])

    # The AdaFocal-only pieces, timed directly.
    ada = trainers["adafocal"]
    val_logits, val_labels = ada.predict_split("val")
    update_s = _median_time(lambda: ada.loss.update(torch.from_numpy(val_logits), torch.from_numpy(val_labels)), 50)
    pop_s = _median_time(ada.loss.pop_train_statistics, 200)
    logits = torch.randn(BATCH, 10, device=device, requires_grad=True)
    labels = torch.randint(0, 10, (BATCH,), device=device)
    loss_s = {}
    for name, trainer in trainers.items():
        def step(fn=trainer.loss):
            fn(logits, labels).backward()
            logits.grad = None
        loss_s[name] = _median_time(step, 300, device)
    n_batches = len(ada.train_loader)
    extra = update_s + pop_s + n_batches * (loss_s["adafocal"] - loss_s["ce"])
    result = {
        "ce_epoch_s": ce_s,
        "adafocal_epoch_s": ada_s,
        "overhead_pct_measured": 100 * (statistics.median(ratios) - 1),
        "ratios": ratios,
        "components": {
            "gamma_update_ms": 1e3 * update_s,
            "pop_train_statistics_ms": 1e3 * pop_s,
            "loss_fwd_bwd_ce_ms": 1e3 * loss_s["ce"],
            "loss_fwd_bwd_adafocal_ms": 1e3 * loss_s["adafocal"],
            "batches_per_epoch": n_batches,
            "adafocal_extra_per_epoch_ms": 1e3 * extra,
        },
        "overhead_pct_from_components": 100 * extra / ce_s,
        "train_images": len(dataset.train),
        "val_images": len(dataset.val),
    }
    print(f"epoch (train {len(dataset.train)} + val {len(dataset.val)}): CE {ce_s:.2f}s, AdaFocal {ada_s:.2f}s, "
          f"overhead measured {result['overhead_pct_measured']:+.2f}% (median of interleaved pairs), "
          f"from components {result['overhead_pct_from_components']:.3f}% (target <= 1%)", flush=True)
    return result


def _median_time(fn, repeats: int, device: torch.device | None = None) -> float:
    samples = []
    for _ in range(repeats):
        if device is not None:
            sync(device)
        start = time.perf_counter()
        fn()
        if device is not None:
            sync(device)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per comparison (CPU 5, GPU 7)")
    parser.add_argument("--batches", type=int, default=None, help="batches of 128 per throughput epoch (CPU 3, GPU 40)")
    parser.add_argument("--train-size", type=int, default=None,
                        help="overhead epoch training images (CPU 1024, GPU 2048)")
    parser.add_argument("--val-size", type=int, default=None,
                        help="overhead epoch validation images (CPU 500, GPU 1000)")
    args = parser.parse_args()
    device = resolve_device(args.device)
    on_gpu = device.type == "cuda"
    rounds = args.rounds or (7 if on_gpu else 5)
    batches = args.batches or (40 if on_gpu else 3)
    args.train_size = args.train_size or (2048 if on_gpu else 1024)
    args.val_size = args.val_size or (1000 if on_gpu else 500)
    warm_up = on_gpu  # on a CPU the first round's extra cost is left to the median, to save minutes
    if on_gpu:
        torch.backends.cudnn.benchmark = True
    started = time.perf_counter()
    dataset, data_note = load_data(max(args.train_size, batches * BATCH), args.val_size)
    overhead_data = dataclasses.replace(
        dataset, train=Split(dataset.train.inputs[: args.train_size], dataset.train.labels[: args.train_size])
    )
    print(f"device {device} ({torch.get_num_threads()} CPU threads); data: {data_note}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        throughput = bench_throughput(dataset, device, rounds, batches, Path(tmp), warm_up)
        overhead = bench_adafocal_overhead(overhead_data, device, rounds, Path(tmp), warm_up)
    device_name = torch.cuda.get_device_name(device) if on_gpu else f"{platform.processor() or platform.machine()} CPU"
    report = make_report(
        "benchmark",
        config={"benchmark": "bench_trainer", "device": str(device), "device_name": device_name,
                "cpu_threads": torch.get_num_threads(), "batch_size": BATCH, "model": "resnet20", "rounds": rounds,
                "throughput_batches": batches, "data": data_note, "torch": torch.__version__,
                "python": platform.python_version(), "numpy": np.__version__},
        results={"throughput": throughput, "throughput_target_ratio": 0.95, "adafocal_overhead": overhead,
                 "adafocal_overhead_target_pct": 1.0, "seconds": time.perf_counter() - started},
    )
    write_json(RESULTS, report)
    print(f"wrote {RESULTS} ({time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
