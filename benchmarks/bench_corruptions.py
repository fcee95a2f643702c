"""How long does adacal's corruption suite take? Every generated corruption x 5 severities on CIFAR-10 test images.

    python benchmarks/bench_corruptions.py [--data-dir DIR] [--n 10000] [--corruptions fog,zoom_blur] [--seed 0]

Times each corruption at each severity on the first N test images of DIR/cifar10.npz (default ../shared/data from the
repository, all 10,000 images), one call per severity as `load_shifted_set` makes it (the whole set at once; the
generators work in chunks). Prints a table — seconds for the five severities, images/s, and each severity's time as a
multiple of a baseline measured in the same run: one `np.rint(images.astype(np.float32))` pass over the same images,
the cheapest thing a float corruption does — and writes benchmarks/results/bench_corruptions.json. Without the file it
uses smooth synthetic images of the same shape (said so in the JSON). The machine may be shared: the JSON records the
load average beside the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from adacal.data.corruptions import CORRUPTIONS, check_corruption, shift_corruptions  # noqa: E402
from adacal.reports import make_report, write_json  # noqa: E402

SEVERITIES = (1, 2, 3, 4, 5)


def synthetic_images(n: int, seed: int = 0) -> np.ndarray:
    """(n, 32, 32, 3) uint8 smooth random fields (a 1/f^2 spectrum, like photographs), when CIFAR-10 is not there."""
    rng = np.random.default_rng(seed)
    frequency = np.hypot(*np.meshgrid(np.fft.fftfreq(32), np.fft.fftfreq(32), indexing="ij"))
    frequency[0, 0] = 1.0
    spectrum = (rng.standard_normal((n, 3, 32, 32)) + 1j * rng.standard_normal((n, 3, 32, 32))) / frequency**2
    spectrum[:, :, 0, 0] = 0
    values = np.fft.ifft2(spectrum).real
    values /= values.std(axis=(2, 3), keepdims=True)
    return np.clip(np.rint(120 + 40 * values), 0, 255).astype(np.uint8).transpose(0, 2, 3, 1).copy()


def cifar_test_images(data_dir: Path | None, n: int | None) -> tuple[np.ndarray, str]:
    """The first n CIFAR-10 test images (uint8 NHWC) and where they came from."""
    folder = data_dir if data_dir is not None else REPO.parent / "shared" / "data"
    path = folder / "cifar10.npz"
    if path.is_file():
        with np.load(path) as archive:
            images = archive["test_x"]
        return np.ascontiguousarray(images[:n] if n else images), str(path)
    return synthetic_images(n or 10_000), f"synthetic smooth uint8 images ({path} not found)"


def baseline_seconds(images: np.ndarray, repeats: int = 5) -> float:
    """The median time of one `np.rint(images.astype(np.float32))` pass."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.rint(images.astype(np.float32))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_corruption(name: str, images: np.ndarray, seed: int) -> list[float]:
    generator = CORRUPTIONS.get(name)
    times = []
    for severity in SEVERITIES:
        start = time.perf_counter()
        generator(images, severity=severity, seed=seed, layout="nhwc")
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="folder with cifar10.npz (default ../shared/data)")
    parser.add_argument("--n", type=int, default=None, help="use the first N test images (default: all)")
    parser.add_argument("--corruptions", default="all", help="comma-separated names (default: every generated one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "bench_corruptions.json")
    args = parser.parse_args(argv)

    names = shift_corruptions() if args.corruptions == "all" else [
        check_corruption(name, generated=True) for name in args.corruptions.split(",")]
    images, source = cifar_test_images(args.data_dir, args.n)
    started = time.perf_counter()
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    np.rint(images[:64].astype(np.float32))  # warm-up
    baseline = baseline_seconds(images)
    rows = {}
    for name in names:
        times = time_corruption(name, images, args.seed)
        total = sum(times)
        rows[name] = {
            "seconds_by_severity": times,
            "seconds": total,
            "images_per_s": len(images) * len(SEVERITIES) / total if total > 0 else None,
            "ratio_to_baseline": [t / baseline for t in times] if baseline > 0 else None,
        }
        print(f"{name:18s} {total:7.2f} s  {rows[name]['images_per_s']:9.0f} img/s   per severity "
              + " ".join(f"{t:5.2f}" for t in times), flush=True)
    total = sum(row["seconds"] for row in rows.values())
    results = {
        "corruptions": rows,
        "total_seconds": total,
        "baseline_seconds": baseline,
        "baseline": "one np.rint(images.astype(np.float32)) pass over the same images (median of 5)",
        "total_ratio_to_baseline": total / baseline if baseline > 0 else None,
        "wall_seconds": time.perf_counter() - started,
    }
    config = {
        "images": int(len(images)),
        "image_shape": list(images.shape[1:]),
        "data": source,
        "seed": args.seed,
        "severities": list(SEVERITIES),
        "numpy": np.__version__,
        "cpu_count": os.cpu_count(),
        "load_average_1m": [load_before, os.getloadavg()[0] if hasattr(os, "getloadavg") else None],
        "platform": platform.platform(),
    }
    write_json(args.output, make_report("bench-corruptions", config=config, results=results))
    print(f"{'total':18s} {total:7.2f} s  {len(images) * len(SEVERITIES) * len(rows) / total:9.0f} img/s   "
          f"({len(rows)} corruptions x {len(SEVERITIES)} severities x {len(images):,} images; baseline pass "
          f"{baseline * 1000:.1f} ms, total = {total / baseline:.0f} baseline passes); wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
