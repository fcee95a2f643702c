"""Is `adacal shift`'s inference as fast as a bare loop? Images/s of `run_shift` end to end against a bare
`model.eval()` + `torch.inference_mode()` loop over the same sets, same model, same process.

    python benchmarks/bench_shift.py RUN [--data-dir DIR] [--corruption gaussian_noise] [--severities 1,2,3,4,5]
                                         [--repeats 3] [--threads N] [--limit N] [--quick]

RUN is a run folder (or checkpoint) of an image model, e.g. a CIFAR-10 ResNet-20 of benchmarks/quality_cifar10.py.
The sets are what `run_shift` sends through its model: the validation images when it has to fit the temperature
on them (no calibrate.json, no predictions.npz of this checkpoint), the clean test images when no predictions.npz
holds their logits, and the corruption at each severity (generated into a cache folder of this benchmark's before
anything is timed): a run folder `adacal train` finished scores the shifted sets only.

- adacal: `run_shift(RUN, corruptions=C, severities=S, write=False, keep_logits=True)`, wall time from the call to its
  return: the checkpoint read, each cached set read and checked, the model on every image of every set, the metrics.
- bare: what a user writes by hand, the same sets already in memory as uint8 NCHW tensors (copied from the images
  `run_shift` scored): for each batch of the same size,
  `x.float().div(255)`, per-channel normalisation, the run's memory format, `model(x)`; logits concatenated.
  Wall time of the loop only (reading the sets is not counted: the bare loop gets them for free).

Both arms score the same images (the images `run_shift` sent through its model, counted), alternating over
`--repeats` rounds; the figure is the ratio of the medians of images/s (adacal / bare; target >= 0.9), with the
logits of both arms compared (they must agree to float32 rounding). Writes benchmarks/results/bench_shift.json
(--out), with the machine's load average beside the figures: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from adacal.reports import make_report, write_json  # noqa: E402

TARGET = 0.9
LOGITS_TOLERANCE = 1e-4  # the same float32 convolutions in the same order; allowed only for the batching's rounding


def _load() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


class CountingPredict:
    """Wraps `CheckpointModel.predict` to count the images `run_shift` sends through its model, set by set, and with
    `capture` to keep a copy of each set's uint8 images (the bare loop then scores exactly those)."""

    def __init__(self, capture: bool = False) -> None:
        from adacal.training import inference

        self.inference = inference
        self.original = inference.CheckpointModel.predict
        self.sizes: list[int] = []
        self.images: list[torch.Tensor] = []
        self.capture = capture

    def __enter__(self) -> CountingPredict:
        original, sizes, images, capture = self.original, self.sizes, self.images, self.capture

        def counting(model: Any, split: Any, **kwargs: Any) -> Any:
            sizes.append(len(split))
            if capture:
                images.append(split.inputs.clone())
            return original(model, split, **kwargs)

        self.inference.CheckpointModel.predict = counting
        return self

    def __exit__(self, *exc: Any) -> None:
        self.inference.CheckpointModel.predict = self.original


def adacal_arm(run: Path, args: argparse.Namespace, cache: Path,
               capture: bool = False) -> tuple[float, Any, CountingPredict]:
    """(seconds, ShiftRun, the counter: the sizes, and with `capture` the images, of the sets its model scored)."""
    from adacal.commands.shift import run_shift

    with CountingPredict(capture) as counter:
        started = time.perf_counter()
        result = run_shift(run, corruptions=args.corruption, severities=args.severities, data_dir=args.data_dir,
                           cache_dir=cache, download=False, device="cpu", batch_size=args.batch_size,
                           limit=args.limit, seed=0, write=False, keep_logits=True)
        seconds = time.perf_counter() - started
    return seconds, result, counter


def scored_names(result: Any, n_scored: int) -> list[str]:
    """The names of the sets `run_shift`'s model scored, in its order: the validation images first when it fitted
    the temperature on them, the clean test images when no predictions.npz held their logits, then every shifted
    set (those always)."""
    shifted = [name for name in result.logits if name != "clean"]
    before = n_scored - len(shifted)
    if before < 0 or before > 2:
        raise SystemExit(f"Error: run_shift scored {n_scored} sets for {len(shifted)} shifted ones; expected the "
                         "shifted sets, after at most the validation and clean test images.")
    return (["validation", "clean"] if before == 2 else ["clean"] if before == 1 else []) + shifted


def bare_arm(run: Path, sets: dict[str, torch.Tensor], batch_size: int) -> tuple[float, dict[str, np.ndarray]]:
    """A bare eval loop over the in-memory sets: (seconds, logits per set)."""
    from adacal.data.base import normalization
    from adacal.training.checkpoints import load_checkpoint
    from adacal.training.inference import build_model_from_checkpoint, checkpoint_data_options
    from adacal.ood.model import resolve_checkpoint

    path, _ = resolve_checkpoint(run)
    checkpoint = load_checkpoint(path)
    channels_last = bool(checkpoint_data_options(checkpoint, path)["channels_last"])
    started = time.perf_counter()
    model, dataset = build_model_from_checkpoint(checkpoint, path)
    model.eval()
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    mean, std = normalization(dataset)
    mean_t = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
    out: dict[str, np.ndarray] = {}
    with torch.inference_mode():
        for name, images in sets.items():
            parts = []
            for start in range(0, len(images), batch_size):
                x = images[start:start + batch_size].float().div_(255).sub_(mean_t).div_(std_t)
                parts.append(model(x.contiguous(memory_format=memory_format)))
            out[name] = torch.cat(parts).numpy()
    return time.perf_counter() - started, out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run folder or checkpoint of an image model")
    parser.add_argument("--data-dir", default=None, help="the data folder of the run's dataset")
    parser.add_argument("--corruption", default="gaussian_noise")
    parser.add_argument("--severities", default="1,2,3,4,5")
    parser.add_argument("--repeats", type=int, default=3, help="alternating rounds of both arms (default 3)")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--limit", type=int, default=None, help="score a seeded random N of the test images")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--quick", action="store_true", help="one round, --limit 500 unless given: a smoke run")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "bench_shift.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats = 1
        args.limit = args.limit or 500
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="bench-shift-") as tmp:
        cache = Path(tmp)
        print(f"adacal shift vs a bare eval loop: {args.run}, {args.corruption} s{args.severities}, "
              f"{torch.get_num_threads()} torch threads", flush=True)
        started = time.perf_counter()
        # The first call generates and caches the sets (not a timed round) and keeps a copy of what it scored.
        seconds, warm, counter = adacal_arm(args.run, args, cache, capture=True)
        scored = scored_names(warm, len(counter.sizes))
        sets = dict(zip(scored, counter.images))
        n_images = sum(counter.sizes)
        print(f"  sets generated and cached in {time.perf_counter() - started:.1f} s; run_shift scores "
              f"{', '.join(scored)} ({n_images:,} images)", flush=True)
        compared = [name for name in scored if name in warm.logits]
        ours, bare, loads = [], [], []
        differences: list[float] = []
        for round_index in range(args.repeats):
            for arm in (("adacal", "bare") if round_index % 2 == 0 else ("bare", "adacal")):
                loads.append(_load())
                if arm == "adacal":
                    seconds, result, _ = adacal_arm(args.run, args, cache)
                    ours.append(n_images / seconds)
                    kept = result.logits
                else:
                    seconds, logits = bare_arm(args.run, sets, args.batch_size)
                    bare.append(n_images / seconds)
                    bare_logits = logits
                print(f"  round {round_index + 1}/{args.repeats} {arm:6s} {seconds:7.2f} s  "
                      f"{n_images / seconds:8.0f} img/s", flush=True)
            differences.append(max(float(np.abs(kept[name] - bare_logits[name]).max()) for name in compared))
    ratio = statistics.median(ours) / statistics.median(bare)
    agree = max(differences) <= LOGITS_TOLERANCE
    print(f"\nimages/s: adacal {statistics.median(ours):.0f}, bare {statistics.median(bare):.0f} (medians of "
          f"{args.repeats}); ratio {ratio:.3f} (target >= {TARGET}); logits max |diff| {max(differences):.2e}"
          f"{'' if agree else ' — DIFFER'}")
    results = {
        "run": str(args.run), "corruption": args.corruption, "severities": args.severities, "limit": args.limit,
        "sets": scored, "logits_compared_on": compared, "images_per_round": n_images,
        "batch_size": args.batch_size, "repeats": args.repeats,
        "images_per_second": {"adacal": ours, "bare": bare},
        "median_images_per_second": {"adacal": statistics.median(ours), "bare": statistics.median(bare)},
        "ratio_adacal_over_bare": ratio, "target": TARGET, "meets_target": ratio >= TARGET,
        "logits_max_abs_difference": max(differences), "logits_agree": agree,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch": torch.__version__,
                    "torch_threads": torch.get_num_threads(), "load_average_1m": loads + [_load()]},
    }
    config = {key: (str(value) if isinstance(value, Path) else value) for key, value in vars(args).items()}
    write_json(args.out, make_report("bench_shift", config=config, results=results))
    print(f"Wrote {args.out}")
    if not agree:
        raise SystemExit("Error: run_shift's logits differ from the bare loop's.")
    return results


if __name__ == "__main__":
    main()
