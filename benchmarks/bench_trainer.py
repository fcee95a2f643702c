"""What the Trainer costs: its training throughput against a bare PyTorch loop, and AdaFocal's whole-epoch overhead.

    python benchmarks/bench_trainer.py                  # about 1-2 minutes on 2 idle CPU cores
    python benchmarks/bench_trainer.py --device cuda --data-dir DIR   # about a minute on a GPU
    python benchmarks/bench_trainer.py --train-size 2048 --val-size 1000 --batches 8   # bigger CPU epochs (~5 min)

1. Throughput (images/s) of `Trainer.train_epoch` (loss module, NaN checks, running statistics, progress events)
   against a bare loop (forward, F.cross_entropy, backward, SGD step) on the same model (CIFAR ResNet-20), the same
   BatchLoader (tensor-resident data, random crop + flip, normalisation), the same optimiser settings, device and
   batch size 128; channels_last off and on. Trainer and bare epochs alternate (which goes first alternates too) and
   we report medians and the median of the per-round ratios (target >= 0.95).
2. Whole-epoch overhead of AdaFocal over cross-entropy, both with one validation pass per epoch
   (`Trainer.epoch_record`: train, LR step, validation forward, metrics, γ-update and C_train statistics; checkpoint
   writes excluded since they are disk noise and the same for both): 10,000 training / 5,000 validation images on a
   GPU (the CPU quality protocol's epoch), 1,024 / 500 on a CPU (to stay within minutes on 2 busy cores), interleaved
   epochs, medians (target <= 3.5 %, the paper's figure). On a GPU AdaFocal is timed twice: with the fused loss the
   GPU takes (`adacal.losses.adafocal._FusedAdaFocal`) and with the composed formula the CPU computes. Because a few
   per cent are within the run-to-run noise of a busy machine, the AdaFocal-only pieces are also timed directly
   (γ-update, C_train read-out, loss forward+backward vs CE).
3. What a GPU step is bounded by, counted on any device: torch operators a training step runs (bare loop, trainer
   with CE, with AdaFocal on this device's path, and AdaFocal's fused and composed formulas; on a GPU also the CUDA
   kernels launched), and host reads of device values a batch (`Tensor.item`, `bool(t)`, `.tolist()`, ...) with the
   GPU's read interval — on a GPU, the synchronising calls torch's sync debug mode reports. Both should stay flat as
   an epoch grows: the counts of an 8-batch and a 2-batch epoch are compared.

Data: a CIFAR-10 slice from --data-dir (default: the shared data folder beside the checkout) when it holds
cifar10.npz, else random uint8 images (the JSON says which). Writes benchmarks/results/bench_trainer.json (CPU) or
bench_trainer_cuda.json (GPU) atomically, or --out; then prints the headline figures of both files side by side.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import platform
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

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
from adacal.training.loop import CUDA_SYNC_EVERY  # noqa: E402

RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS = {"cpu": RESULTS_DIR / "bench_trainer.json", "cuda": RESULTS_DIR / "bench_trainer_cuda.json"}
SHARED_DATA = ROOT.parent / "shared" / "data"
BATCH = 128  # --batch-size (a CPU smoke run of the whole benchmark takes 16)
THROUGHPUT_TARGET = 0.95
OVERHEAD_TARGET_PCT = 3.5
# Tensor methods that bring a device value to the host (each waits for the GPU when the tensor lives there).
HOST_READS = ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__", "__index__")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load_data(train_size: int, val_size: int, seed: int = 0, data_dir: Path | None = None) -> tuple[Dataset, str]:
    folder = Path(data_dir) if data_dir is not None else SHARED_DATA
    if (folder / "cifar10.npz").is_file():
        dataset = load_dataset("cifar10", data_dir=folder, seed=seed, train_subset=train_size, val_size=val_size,
                               download=False)
        return dataset, f"CIFAR-10 slice from {folder / 'cifar10.npz'} ({train_size} train / {val_size} val)"
    generator = torch.Generator().manual_seed(seed)

    def split(n: int) -> Split:
        return Split(torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=generator),
                     torch.randint(0, 10, (n,), generator=generator))

    dataset = Dataset(
        name="cifar10", kind="image", num_classes=10, classes=[str(i) for i in range(10)], input_shape=(3, 32, 32),
        train=split(train_size), val=split(val_size), test=split(val_size),
        extra={"mean": (0.5, 0.5, 0.5), "std": (0.25, 0.25, 0.25)},
    )
    return dataset, f"random uint8 images (no cifar10.npz in {folder}; {train_size} train / {val_size} val)"


def make_trainer(dataset: Dataset, loss: str, device: torch.device, channels_last: bool, folder: Path,
                 batch_size: int | None = None) -> Trainer:
    """A Trainer on ResNet-20; loss "adafocal-composed" is AdaFocal computed with the CPU's composed formula on any
    device, "adafocal-fused" with the fused one (the GPU's path) on any device."""
    name, _, path = loss.partition("-")
    config = resolve_config(TrainConfig(
        dataset="cifar10", model="resnet20", loss=name, epochs=1000, batch_size=batch_size or BATCH, device=str(device),
        channels_last=channels_last, out=str(folder),
    ))
    torch.manual_seed(0)
    model = build_model("resnet20", num_classes=10, input_shape=(3, 32, 32))
    loss_module = build_loss(name)
    if path:
        loss_module.fused_devices = (device.type,) if path == "fused" else ()
    return Trainer(config, dataset=dataset, model=model, loss=loss_module, model_name="resnet20",
                   model_options={}, device=device, run=RunFolder(folder))


class BareLoop:
    """The loop a user would write by hand, on the same model, data pipeline and optimiser settings."""

    def __init__(self, dataset: Dataset, device: torch.device, channels_last: bool, batch_size: int | None = None,
                 ) -> None:
        torch.manual_seed(0)
        self.model = build_model("resnet20", num_classes=10, input_shape=(3, 32, 32)).to(device)
        if channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        self.loader = BatchLoader(dataset.train, batch_size or BATCH, dataset=dataset, shuffle=True, augment=True,
                                  device=device, channels_last=channels_last)
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


def subset(dataset: Dataset, n: int) -> Dataset:
    return dataclasses.replace(dataset, train=Split(dataset.train.inputs[:n], dataset.train.labels[:n]))


def bench_throughput(
    dataset: Dataset, device: torch.device, rounds: int, batches: int, folder: Path, warm_up: bool
) -> dict:
    n = min(len(dataset.train), batches * BATCH)
    small = subset(dataset, n)
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
              f" ratio {results[key]['ratio']:.3f} (target >= {THROUGHPUT_TARGET})", flush=True)
    return results


def bench_adafocal_overhead(
    dataset: Dataset, device: torch.device, rounds: int, folder: Path, warm_up: bool
) -> dict:
    arms = ("ce", "adafocal") + (("adafocal-composed",) if device.type == "cuda" else ())
    trainers = {loss: make_trainer(dataset, loss, device, False, folder) for loss in arms}
    if warm_up:
        for trainer in trainers.values():
            trainer.epoch_record(1)
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    ratios: dict[str, list[float]] = {arm: [] for arm in arms[1:]}
    for r in range(rounds):
        order = list(arms) if r % 2 == 0 else list(reversed(arms))
        seconds = {}
        for arm in order:
            seconds[arm] = timed(lambda: trainers[arm].epoch_record(r + 2), device)  # noqa: B023
            times[arm].append(seconds[arm])
        for arm in arms[1:]:
            ratios[arm].append(seconds[arm] / seconds["ce"])
    medians = {arm: statistics.median(values) for arm, values in times.items()}

    # The AdaFocal-only pieces, timed directly.
    ada = trainers["adafocal"]
    val_logits, val_labels = ada.predict_split("val")
    on_device = (torch.from_numpy(val_logits).to(device), torch.from_numpy(val_labels).to(device))
    update_s = _median_time(lambda: ada.loss.update(*on_device), 50, device)
    pop_s = _median_time(ada.loss.pop_train_statistics, 200, device)
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
        "ce_epoch_s": medians["ce"],
        "adafocal_epoch_s": medians["adafocal"],
        "overhead_pct_measured": 100 * (statistics.median(ratios["adafocal"]) - 1),
        "ratios": ratios["adafocal"],
        "adafocal_path": "fused" if device.type in ada.loss.fused_devices else "composed",
        "components": {
            "gamma_update_ms": 1e3 * update_s,
            "pop_train_statistics_ms": 1e3 * pop_s,
            "loss_fwd_bwd_ce_ms": 1e3 * loss_s["ce"],
            "loss_fwd_bwd_adafocal_ms": 1e3 * loss_s["adafocal"],
            "batches_per_epoch": n_batches,
            "adafocal_extra_per_epoch_ms": 1e3 * extra,
        },
        "overhead_pct_from_components": 100 * extra / medians["ce"],
        "train_images": len(dataset.train),
        "val_images": len(dataset.val),
    }
    print(f"epoch (train {len(dataset.train)} + val {len(dataset.val)}): CE {medians['ce']:.3f}s, AdaFocal "
          f"{medians['adafocal']:.3f}s ({result['adafocal_path']} loss), overhead measured "
          f"{result['overhead_pct_measured']:+.2f}% (median of interleaved pairs), from components "
          f"{result['overhead_pct_from_components']:.3f}% (target <= {OVERHEAD_TARGET_PCT}%)", flush=True)
    if "adafocal-composed" in arms:
        result["composed"] = {"adafocal_epoch_s": medians["adafocal-composed"],
                              "overhead_pct_measured": 100 * (statistics.median(ratios["adafocal-composed"]) - 1),
                              "ratios": ratios["adafocal-composed"],
                              "loss_fwd_bwd_ms": 1e3 * loss_s["adafocal-composed"]}
        print(f"  AdaFocal with the composed formula (the CPU's): {medians['adafocal-composed']:.3f}s, overhead "
              f"{result['composed']['overhead_pct_measured']:+.2f}%; loss fwd+bwd {1e3 * loss_s['ce']:.3f} ms CE, "
              f"{1e3 * loss_s['adafocal']:.3f} ms fused, {1e3 * loss_s['adafocal-composed']:.3f} ms composed",
              flush=True)
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


# ------------------------------------------------------------------------------------------------ launch counts


def operator_counts(fn: Callable[[], None], device: torch.device) -> dict[str, int]:
    """Top-level torch operators (what eager mode dispatches, one or more kernels each) `fn` runs, and on a GPU the
    CUDA kernels it launches, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn()
        sync(device)
    events = prof.events()
    operators = sum(1 for e in events if e.name.startswith("aten::")
                    and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")))
    counts = {"operators": operators}
    if device.type == "cuda":
        counts["cuda_kernels"] = sum(1 for e in events if str(e.device_type).endswith("CUDA")
                                     and not e.name.startswith(("Memcpy", "Memset")))
    return counts


def count_host_reads(fn: Callable[[], None]) -> int:
    """How often `fn` reads a tensor's value on the host (the `HOST_READS` methods), whatever the device. The labels'
    range check every loss makes on the CPU only (`adacal.losses.base.check_batch`) is not counted: on a GPU it reads
    nothing."""
    import adacal.losses.base as loss_base

    counter = collections.Counter()
    paused = []
    originals = {name: getattr(torch.Tensor, name) for name in HOST_READS}
    check_batch = loss_base.check_batch

    def counting(name: str, original: Callable) -> Callable:
        def method(self, *args, **kwargs):
            if not paused:
                counter[name] += 1
            return original(self, *args, **kwargs)
        return method

    def uncounted_check_batch(*args, **kwargs):
        paused.append(True)
        try:
            return check_batch(*args, **kwargs)
        finally:
            paused.pop()

    try:
        for name, original in originals.items():
            setattr(torch.Tensor, name, counting(name, original))
        loss_base.check_batch = uncounted_check_batch
        fn()
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)
        loss_base.check_batch = check_batch
    return sum(counter.values())


def count_cuda_syncs(fn: Callable[[], None]) -> int:
    """Synchronising CUDA calls `fn` makes, as torch's sync debug mode reports them (one warning each)."""
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    return sum(1 for w in caught if "synchroniz" in str(w.message).lower())


def bench_launches(dataset: Dataset, device: torch.device, folder: Path) -> dict:
    """Operators per step (launch-bound GPUs pay per operator) and host reads per batch, from the difference between a
    long and a short epoch (what is paid once an epoch cancels out). Batches of 16 on a CPU, to save time: the counts
    do not depend on the batch size."""
    short, long = (2, 8) if device.type == "cuda" else (1, 3)
    batch = BATCH if device.type == "cuda" else min(BATCH, 16)
    per_step: dict[str, Any] = {}
    for arm in ("bare", "ce", "adafocal", "adafocal-fused", "adafocal-composed"):
        counts = {}
        for batches in (short, long):
            data = subset(dataset, batches * batch)
            runner = (BareLoop(data, device, False, batch) if arm == "bare"
                      else make_trainer(data, arm, device, False, folder, batch))
            runner.train_epoch(1)
            counts[batches] = operator_counts(lambda: runner.train_epoch(2), device)  # noqa: B023
        per_step[arm] = {key: (counts[long][key] - counts[short][key]) / (long - short) for key in counts[long]}
    reads = {}
    for batches in (short, long):
        trainer = make_trainer(subset(dataset, batches * batch), "adafocal", device, False, folder, batch)
        trainer.read_every = CUDA_SYNC_EVERY
        trainer.train_epoch(1)
        run = lambda: trainer.train_epoch(2)  # noqa: E731
        reads[batches] = count_cuda_syncs(run) if device.type == "cuda" else count_host_reads(run)
    result = {
        "per_step": per_step,
        "extra_operators_per_step": {arm: per_step[arm]["operators"] - per_step[base]["operators"]
                                     for arm, base in (("ce", "bare"), ("adafocal", "ce"),
                                                       ("adafocal-fused", "ce"), ("adafocal-composed", "ce"))},
        "host_reads": {"what": "synchronising CUDA calls (sync debug mode)" if device.type == "cuda" else
                       "Tensor host reads (item, tolist, bool, float, ...)",
                       "per_epoch_short": reads[short], "per_epoch_long": reads[long],
                       "per_batch": (reads[long] - reads[short]) / (long - short), "read_every": CUDA_SYNC_EVERY},
    }
    extra = result["extra_operators_per_step"]
    kernels = ""
    if device.type == "cuda":
        kernels = "; CUDA kernels a step: " + ", ".join(f"{arm} {v['cuda_kernels']:.0f}" for arm, v in per_step.items())
    print(f"operators a step: bare {per_step['bare']['operators']:.0f}, trainer CE +{extra['ce']:.0f}, AdaFocal over "
          f"CE +{extra['adafocal']:.0f} (this device's path; fused +{extra['adafocal-fused']:.0f}, composed "
          f"+{extra['adafocal-composed']:.0f}){kernels}", flush=True)
    print(f"{result['host_reads']['what']} per batch with the GPU's read interval: "
          f"{result['host_reads']['per_batch']:.2f} ({reads[short]} in a {short}-batch epoch, {reads[long]} in a "
          f"{long}-batch one)", flush=True)
    return result


# ------------------------------------------------------------------------------------------------ report


def headline(path: Path) -> dict[str, Any] | None:
    """The figures `print_both` shows, from a result file (None when there is none)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    config, results = data.get("config", {}), data.get("results", {})
    throughput = results.get("throughput", {})
    overhead = results.get("adafocal_overhead", {})
    return {"device": config.get("device_name") or config.get("device"), "created": data.get("created"),
            "ratio_off": (throughput.get("channels_last_off") or {}).get("ratio"),
            "ratio_on": (throughput.get("channels_last_on") or {}).get("ratio"),
            "overhead_pct": overhead.get("overhead_pct_measured"),
            "overhead_components_pct": overhead.get("overhead_pct_from_components"),
            "epoch": f"{overhead.get('train_images')} + {overhead.get('val_images')}"}


def print_both(paths: dict[str, Path]) -> None:
    print(f"\n{'':10} {'device':>24} {'trainer/bare off':>17} {'on':>6} {'AdaFocal vs CE':>15} {'(parts)':>8}  epoch")
    for kind, path in paths.items():
        figures = headline(path)
        if figures is None:
            print(f"{kind:10} {'(not measured: ' + path.name + ')':>24}")
            continue

        def show(value: Any, form: str) -> str:
            return "–" if value is None else format(value, form)

        print(f"{kind:10} {str(figures['device'])[:24]:>24} {show(figures['ratio_off'], '.3f'):>17} "
              f"{show(figures['ratio_on'], '.3f'):>6} {show(figures['overhead_pct'], '+.2f') + ' %':>15} "
              f"{show(figures['overhead_components_pct'], '.2f'):>8}  {figures['epoch']}")


def main(argv: list[str] | None = None) -> int:
    global BATCH
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per comparison (CPU 5, GPU 7)")
    parser.add_argument("--batches", type=int, default=None, help="batches of 128 per throughput epoch (CPU 3, GPU 40)")
    parser.add_argument("--train-size", type=int, default=None,
                        help="overhead epoch training images (CPU 1024, GPU 10000)")
    parser.add_argument("--val-size", type=int, default=None,
                        help="overhead epoch validation images (CPU 500, GPU 5000)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder holding cifar10.npz (default: the shared data folder beside the checkout)")
    parser.add_argument("--out", type=Path, default=None,
                        help="result JSON (default benchmarks/results/bench_trainer.json, or bench_trainer_cuda.json "
                             "on a GPU)")
    parser.add_argument("--batch-size", type=int, default=128, help="training batch size (128)")
    parser.add_argument("--skip", default="",
                        help="comma-separated sections to leave out: throughput, overhead, launches")
    args = parser.parse_args(argv)
    BATCH = args.batch_size
    device = resolve_device(args.device)
    on_gpu = device.type == "cuda"
    skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    rounds = args.rounds or (7 if on_gpu else 5)
    batches = args.batches or (40 if on_gpu else 3)
    train_size = args.train_size or (10000 if on_gpu else 1024)
    val_size = args.val_size or (5000 if on_gpu else 500)
    warm_up = on_gpu  # on a CPU the first round's extra cost is left to the median, to save minutes
    if on_gpu:
        torch.backends.cudnn.benchmark = True
    started = time.perf_counter()
    dataset, data_note = load_data(max(train_size, batches * BATCH), val_size, data_dir=args.data_dir)
    print(f"device {device} ({torch.get_num_threads()} CPU threads); data: {data_note}", flush=True)
    results: dict[str, Any] = {"throughput_target_ratio": THROUGHPUT_TARGET,
                               "adafocal_overhead_target_pct": OVERHEAD_TARGET_PCT}
    sections = {
        "throughput": lambda folder: bench_throughput(dataset, device, rounds, batches, folder, warm_up),
        "adafocal_overhead": lambda folder: bench_adafocal_overhead(subset(dataset, train_size), device, rounds,
                                                                    folder, warm_up),
        "launches": lambda folder: bench_launches(dataset, device, folder),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for key, section in sections.items():
            if key.removeprefix("adafocal_") in skip:
                continue
            try:
                results[key] = section(Path(tmp))
            except Exception as error:  # one section's failure (a profiler a machine lacks) keeps the others
                results[key] = {"error": f"{type(error).__name__}: {error}"}
                print(f"{key}: failed ({type(error).__name__}: {error})", flush=True)
    device_name = torch.cuda.get_device_name(device) if on_gpu else f"{platform.processor() or platform.machine()} CPU"
    results["seconds"] = time.perf_counter() - started
    report = make_report(
        "benchmark",
        config={"benchmark": "bench_trainer", "device": str(device), "device_name": device_name,
                "cpu_threads": torch.get_num_threads(), "batch_size": BATCH, "model": "resnet20", "rounds": rounds,
                "throughput_batches": batches, "data": data_note, "torch": torch.__version__,
                "python": platform.python_version(), "numpy": np.__version__,
                "skipped": sorted(skip)},
        results=results,
    )
    out = args.out or RESULTS["cuda" if on_gpu else "cpu"]
    write_json(out, report)
    print(f"wrote {out} ({time.perf_counter() - started:.0f}s)")
    with contextlib.suppress(Exception):
        print_both({"CPU": RESULTS["cpu"], "GPU": out if on_gpu else RESULTS["cuda"]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
