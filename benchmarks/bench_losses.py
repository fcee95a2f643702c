"""What AdaFocal costs: a CPU training step with AdaFocal vs cross-entropy, and the γ-update on its own.

    python benchmarks/bench_losses.py                 # 1-2 minutes (step timing stops after --max-seconds)
    python benchmarks/bench_losses.py --repeats 30 --update-repeats 1000

1. Training step (forward + backward + SGD step) of a CIFAR ResNet-20 (adacal.models' "resnet20" when importable,
   else a minimal local copy), batch 128 of 3x32x32 inputs in channels_last, on the CPU. CE and AdaFocal steps
   take turns in one process with a second CE model as a control (the order rotates every round), so load changes
   hit all alike; we report the median step time of each, the median of the per-round ratios AdaFocal / CE
   (target <= 1.03), and the same ratio for the control, which shows how much of any difference is noise.
2. The loss alone, forward + backward on (128, 10) logits: the extra time of the fastest AdaFocal call over the
   fastest CE call is what AdaFocal adds to a step, a noise-free estimate of the ratio above.
3. AdaFocalLoss.update on 5000 validation samples x 10 classes (the validation forward pass excluded): median
   (target <= 1 ms).

Prints the figures and writes benchmarks/results/bench_losses.json (atomically).
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from adacal.losses import AdaFocalLoss, build_loss  # noqa: E402
from adacal.reports import make_report, write_json  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_losses.json"
NUM_CLASSES = 10


class _Block(nn.Module):
    def __init__(self, in_channels: int, channels: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(inputs)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(inputs))


class _LocalResNet20(nn.Module):
    """He et al. (2016) CIFAR ResNet-20, used only when adacal.models is not importable."""

    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
        in_channels = 16
        for channels, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                layers.append(_Block(in_channels, channels, stride if i == 0 else 1))
                in_channels = channels
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, num_classes)]
        self.body = nn.Sequential(*layers)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.body(inputs)


def build_resnet20() -> tuple[nn.Module, str]:
    try:
        from adacal.models import build_model
    except ImportError:
        return _LocalResNet20(), "local minimal ResNet-20"
    return build_model("resnet20", num_classes=NUM_CLASSES, input_shape=(3, 32, 32)), "adacal.models resnet20"


def prepared_adafocal(generator: torch.Generator) -> AdaFocalLoss:
    """AdaFocal after one update on random validation logits (equal-mass bins, a mix of focal and inverse γ)."""
    loss = build_loss("adafocal")
    val_logits = torch.randn(5000, NUM_CLASSES, generator=generator) * 3
    loss.update(val_logits, torch.randint(0, NUM_CLASSES, (5000,), generator=generator))
    loss.gammas.copy_(torch.linspace(-2.0, 20.0, loss.n_bins, dtype=torch.float64))
    return loss


def training_step(model: nn.Module, loss_fn: nn.Module, inputs: torch.Tensor, labels: torch.Tensor):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def bench_training_steps(args: argparse.Namespace, generator: torch.Generator) -> dict:
    """CE, AdaFocal and a second CE model ("control": same work as CE, so its ratio to CE shows the timing noise)
    take turns, the order rotating every round."""
    base, model_source = build_resnet20()
    base = base.to(memory_format=torch.channels_last).train()
    inputs = torch.randn(args.batch_size, 3, 32, 32, generator=generator).contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, NUM_CLASSES, (args.batch_size,), generator=generator)
    steps = {
        "ce": training_step(copy.deepcopy(base), build_loss("ce"), inputs, labels),
        "adafocal": training_step(copy.deepcopy(base), prepared_adafocal(generator).train(), inputs, labels),
        "control": training_step(copy.deepcopy(base), build_loss("ce"), inputs, labels),
    }
    names = list(steps)
    times: dict[str, list[float]] = {name: [] for name in names}
    started = time.perf_counter()
    for repeat in range(args.warmup + args.repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            seconds = timed(steps[name])
            if repeat >= args.warmup:
                times[name].append(seconds)
        if len(times["ce"]) >= 5 and time.perf_counter() - started > args.max_seconds:
            break  # keep the default run short on a slow or busy machine

    def paired(name: str) -> float:
        return statistics.median(a / c for a, c in zip(times[name], times["ce"]))

    return {
        "model": model_source,
        "batch_size": args.batch_size,
        "rounds_timed": len(times["ce"]),
        "ce_step_ms_median": 1e3 * statistics.median(times["ce"]),
        "adafocal_step_ms_median": 1e3 * statistics.median(times["adafocal"]),
        "control_step_ms_median": 1e3 * statistics.median(times["control"]),
        "ratio_median_of_pairs": paired("adafocal"),
        "ratio_of_medians": statistics.median(times["adafocal"]) / statistics.median(times["ce"]),
        "ratio_of_minimums": min(times["adafocal"]) / min(times["ce"]),
        "control_ratio_median_of_pairs": paired("control"),
        "control_ratio_of_medians": statistics.median(times["control"]) / statistics.median(times["ce"]),
        "step_ms": {name: [1e3 * t for t in values] for name, values in times.items()},
    }


def bench_loss_only(args: argparse.Namespace, generator: torch.Generator) -> dict:
    logits = torch.randn(args.batch_size, NUM_CLASSES, generator=generator) * 3
    labels = torch.randint(0, NUM_CLASSES, (args.batch_size,), generator=generator)
    losses = {"ce": build_loss("ce"), "adafocal": prepared_adafocal(generator).train()}

    def run(loss_fn):
        leaf = logits.clone().requires_grad_(True)
        loss_fn(leaf, labels).backward()

    times: dict[str, list[float]] = {"ce": [], "adafocal": []}
    for repeat in range(20 + args.loss_repeats):
        for name, loss_fn in losses.items():
            seconds = timed(lambda: run(loss_fn))
            if repeat >= 20:
                times[name].append(seconds)
    results = {f"{name}_loss_us_median": 1e6 * statistics.median(values) for name, values in times.items()}
    results.update({f"{name}_loss_us_min": 1e6 * min(values) for name, values in times.items()})
    return results


def bench_update(args: argparse.Namespace, generator: torch.Generator) -> dict:
    n = args.val_size
    val_logits = torch.randn(n, NUM_CLASSES, generator=generator) * 3
    random_labels = torch.randint(0, NUM_CLASSES, (n,), generator=generator)
    val_labels = torch.where(torch.rand(n, generator=generator) < 0.8, val_logits.argmax(1), random_labels)
    loss = build_loss("adafocal")
    for _ in range(20):
        loss.update(val_logits, val_labels)
    times = [timed(lambda: loss.update(val_logits, val_labels)) for _ in range(args.update_repeats)]
    times.sort()
    return {
        "val_size": n,
        "n_bins": loss.n_bins,
        "update_ms_median": 1e3 * statistics.median(times),
        "update_ms_p90": 1e3 * times[int(0.9 * (len(times) - 1))],
        "update_ms_min": 1e3 * times[0],
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="timed rounds (one training step per model each)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed warm-up rounds")
    parser.add_argument(
        "--max-seconds", type=float, default=75.0, help="stop timing training steps after this long (at least 5 rounds)"
    )
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--loss-repeats", type=int, default=300, help="timed loss-only forward+backward calls")
    parser.add_argument("--update-repeats", type=int, default=300, help="timed AdaFocal updates")
    parser.add_argument("--val-size", type=int, default=5000, help="validation samples per update")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON results")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)

    started = time.perf_counter()
    update = bench_update(args, generator)
    print(f"AdaFocal update, {update['val_size']} val samples: median {update['update_ms_median']:.3f} ms "
          f"(p90 {update['update_ms_p90']:.3f}, min {update['update_ms_min']:.3f}; target <= 1 ms)")
    loss_only = bench_loss_only(args, generator)
    print(f"loss forward+backward on ({args.batch_size}, {NUM_CLASSES}) logits: "
          f"CE {loss_only['ce_loss_us_median']:.0f} us, AdaFocal {loss_only['adafocal_loss_us_median']:.0f} us "
          f"(medians; fastest {loss_only['ce_loss_us_min']:.0f} and {loss_only['adafocal_loss_us_min']:.0f} us)")
    steps = bench_training_steps(args, generator)
    print(f"training step, {steps['model']}, batch {steps['batch_size']}, CPU channels_last, "
          f"{torch.get_num_threads()} threads:")
    print(f"  CE {steps['ce_step_ms_median']:.1f} ms, AdaFocal {steps['adafocal_step_ms_median']:.1f} ms (medians of "
          f"{steps['rounds_timed']}); AdaFocal / CE = {steps['ratio_median_of_pairs']:.3f} (median of pairs), "
          f"{steps['ratio_of_medians']:.3f} (ratio of medians); target <= 1.03")
    print(f"  control (CE again) / CE = {steps['control_ratio_median_of_pairs']:.3f} (median of pairs), "
          f"{steps['control_ratio_of_medians']:.3f} (ratio of medians): the timing noise")
    # the fastest calls are the least disturbed by other processes: their difference is what the loss adds
    extra_ms = (loss_only["adafocal_loss_us_min"] - loss_only["ce_loss_us_min"]) / 1e3
    implied_ratio = 1.0 + extra_ms / steps["ce_step_ms_median"]
    print(f"  the loss itself adds {extra_ms:.2f} ms per step: implied AdaFocal / CE = {implied_ratio:.4f}")
    steps["loss_extra_ms"] = extra_ms
    steps["ratio_implied_by_loss_cost"] = implied_ratio
    elapsed = time.perf_counter() - started

    options = {key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()}
    report = make_report(
        "benchmark",
        config={"benchmark": "bench_losses", **options},
        results={
            "environment": {
                "torch": torch.__version__,
                "python": platform.python_version(),
                "machine": platform.machine(),
                "processor": platform.processor(),
                "torch_threads": torch.get_num_threads(),
                "cpu_count": os.cpu_count(),
                "load_average_1min_at_end": os.getloadavg()[0],
            },
            "training_step": steps,
            "loss_only": loss_only,
            "update": update,
            "elapsed_s": elapsed,
        },
    )
    path = write_json(args.output, report)
    print(f"wrote {path} ({elapsed:.0f} s; 1-minute load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    return report


if __name__ == "__main__":
    main()
