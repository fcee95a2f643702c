"""Is the data path fast enough? CIFAR BatchLoader images/s vs ResNet-20 training-step images/s, same run, same CPU.

    python benchmarks/bench_data.py [--data-dir DIR] [--device cpu] [--rounds 3] [--threads N]

Loader: BatchLoader(train, 128, augment=True, shuffle=True) — uint8 indexing, vectorised random crop + flip,
float32 normalisation (both memory formats). Training: ResNet-20 forward + backward + SGD step (momentum 0.9,
weight decay 5e-4) on batches of 128, in contiguous and channels_last formats. Reports the ratio loader / training
(target >= 5: the loader then costs at most a sixth of the step time) and writes benchmarks/results/bench_data.json.
Uses /work/shared/data/cifar10.npz (or --data-dir) when present, else random images of the same shape (said so in
the JSON). The machine may be shared: the JSON records the load average next to the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from adacal.data import BatchLoader, Dataset, Split, load_dataset  # noqa: E402
from adacal.errors import AdacalError  # noqa: E402
from adacal.models import build_model  # noqa: E402
from adacal.reports import make_report, write_json  # noqa: E402

BATCH = 128


def cifar_train(data_dir: Path | None, device: str) -> tuple[Dataset, str]:
    candidates = [data_dir] if data_dir else [REPO.parent / "shared" / "data"]
    for candidate in candidates:
        try:
            return load_dataset("cifar10", data_dir=candidate, download=False), str(candidate / "cifar10.npz")
        except AdacalError:
            continue
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.integers(0, 256, (45000, 3, 32, 32), dtype=np.uint8))
    split = Split(images, torch.from_numpy(rng.integers(0, 10, 45000)))
    mean, std = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
    dataset = Dataset("cifar10", "image", 10, [str(i) for i in range(10)], (3, 32, 32), split, split, split,
                      extra={"mean": mean, "std": std, "augment_padding": 4})
    return dataset, "synthetic random uint8 images (cifar10.npz not found)"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class LoaderMeter:
    """Accumulates loader throughput over several short measuring windows."""

    def __init__(self, dataset: Dataset, device: str, channels_last: bool) -> None:
        self.loader = BatchLoader(dataset.train, BATCH, dataset=dataset, shuffle=True, augment=True, device=device,
                                  channels_last=channels_last)
        self.channels_last = channels_last
        self.epoch, self.images, self.batches, self.seconds = 0, 0, 0, 0.0
        next(iter(self.loader))  # warm-up

    def run(self, seconds: float) -> None:
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            self.loader.set_epoch(self.epoch)
            self.epoch += 1
            for inputs, _ in self.loader:
                self.images += inputs.shape[0]
                self.batches += 1
                if time.perf_counter() - start >= seconds:
                    break
        sync(self.loader.device)
        self.seconds += time.perf_counter() - start

    def result(self) -> dict:
        return {"images_per_s": self.images / self.seconds, "batches": self.batches, "seconds": self.seconds,
                "channels_last": self.channels_last}


class TrainMeter:
    """ResNet-20 training steps (forward + backward + SGD) on pre-fetched batches, timed alone."""

    def __init__(self, dataset: Dataset, device: str, channels_last: bool) -> None:
        torch.manual_seed(0)
        self.device = torch.device(device)
        self.channels_last = channels_last
        model = build_model("resnet20", num_classes=10, input_shape=(3, 32, 32)).to(self.device)
        self.model = model.to(memory_format=torch.channels_last) if channels_last else model
        self.model.train()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        loader = BatchLoader(dataset.train, BATCH, dataset=dataset, shuffle=True, augment=True, device=device,
                             channels_last=channels_last)
        self.batches = []
        for batch in loader:
            self.batches.append(batch)
            if len(self.batches) == 4:
                break
        self.steps, self.seconds = 0, 0.0
        self.step()  # warm-up (allocator, oneDNN primitives)
        sync(self.device)

    def step(self) -> None:
        inputs, labels = self.batches[self.steps % len(self.batches)]
        self.optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(self.model(inputs), labels).backward()
        self.optimizer.step()

    def run(self, seconds: float) -> None:
        start = time.perf_counter()
        done = 0
        while done < 1 or time.perf_counter() - start < seconds:
            self.step()
            done += 1
        sync(self.device)
        self.steps += done
        self.seconds += time.perf_counter() - start

    def result(self) -> dict:
        return {"images_per_s": self.steps * BATCH / self.seconds, "steps": self.steps, "seconds": self.seconds,
                "channels_last": self.channels_last}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=3, help="measuring rounds; loader and training alternate")
    parser.add_argument("--loader-seconds", type=float, default=1.5, help="per format per round")
    parser.add_argument("--train-seconds", type=float, default=6.0, help="per format per round")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "bench_data.json")
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    dataset, source = cifar_train(args.data_dir, args.device)
    formats = ("contiguous", "channels_last")
    loader_meters = {fmt: LoaderMeter(dataset, args.device, fmt == "channels_last") for fmt in formats}
    train_meters = {fmt: TrainMeter(dataset, args.device, fmt == "channels_last") for fmt in formats}
    loads = []
    # Alternate short windows so both sides see the same machine load (it may be shared).
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else None)
        for fmt in formats:
            loader_meters[fmt].run(args.loader_seconds)
            train_meters[fmt].run(args.train_seconds)
    loader = {fmt: meter.result() for fmt, meter in loader_meters.items()}
    train = {fmt: meter.result() for fmt, meter in train_meters.items()}
    fastest_train = max(r["images_per_s"] for r in train.values())
    slowest_loader = min(r["images_per_s"] for r in loader.values())
    ratio = slowest_loader / fastest_train
    results = {
        "loader": loader,
        "train_resnet20": train,
        "ratio_loader_to_fastest_train": ratio,
        "target_ratio": 5.0,
        "meets_target": ratio >= 5.0,
        "total_seconds": time.perf_counter() - started,
    }
    config = {
        "device": args.device,
        "batch_size": BATCH,
        "data": source,
        "train_images": len(dataset.train),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "load_average_1m_per_round": loads,
        "platform": platform.platform(),
    }
    write_json(args.output, make_report("bench-data", config=config, results=results))
    for fmt, r in loader.items():
        print(f"loader  ({fmt:>13}): {r['images_per_s']:10.0f} img/s  ({r['batches']} batches)")
    for fmt, r in train.items():
        print(f"resnet20 step ({fmt:>13}): {r['images_per_s']:10.0f} img/s  ({r['steps']} steps)")
    verdict = "meets" if ratio >= 5 else "MISSES"
    print(f"ratio loader / fastest training step: {ratio:.1f}x ({verdict} the 5x target); wrote {args.output}")


if __name__ == "__main__":
    main()
