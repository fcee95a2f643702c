"""Peak memory of adacal's metrics: how much a call needs beyond its input, against torchmetrics and netcal.

    python benchmarks/bench_metrics_memory.py                  # N = 10^6, K = 100, float32 and float64 (~2 minutes)
    python benchmarks/bench_metrics_memory.py --n 200000 --k 10

Each figure comes from a fresh process that builds the same (N, K) array (bench_metrics' over-confident classifier),
calls the metric once on a few rows (imports, lazy set-up), returns the C heap's free pages to the kernel
(glibc's malloc_trim: memory freed while the input was built would otherwise be reused unseen), resets the kernel's
peak-RSS counter
(`/proc/self/clear_refs`, Linux), calls the metric once on the whole array and reads the new peak (VmHWM): the
extra peak is that minus the resident size just before the call. So it counts everything the call touches —
numpy, torch and C allocations alike — and nothing the input itself holds. The floor for a top-label ECE is
O(N): one top-1 confidence and one hit per sample (the input is (N, K)). Contenders:

  max pass           `probs.max(axis=1)`: an N-sized float result, for scale
  adacal ece-*       ece_ew, ece_em, ece_debias, ece_sweep_ew, ece_sweep_em from probabilities
  adacal ece-ew (logits)   the same from logits of the same dtype (a block-wise softmax)
  adacal all metrics compute_metrics: every metric evaluate reports, from one validation
  adacal meter       CalibrationMeter fed in batches of 10,000 rows, then compute()
  torchmetrics, netcal     their equal-width top-label ECE (optional: `pip install ".[bench]"`)

Results are written (atomically) to benchmarks/results/bench_metrics_memory.json.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (ROOT, HERE):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_metrics import make_logits, peer_ece, probs_of  # noqa: E402

MIB = 1 << 20
WARM_UP_ROWS = 1000
METER_BATCH = 10_000
CONTENDERS = ("max pass", "adacal ece-ew", "adacal ece-em", "adacal ece-debias", "adacal ece-sweep-ew",
              "adacal ece-sweep-em", "adacal ece-ew (logits)", "adacal all metrics", "adacal meter",
              "torchmetrics", "netcal")


def _proc_status(field: str) -> int:
    """A `/proc/self/status` size field (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field} line")


def peak_counter_available() -> bool:
    """Whether this kernel lets a process reset and read its own peak resident size (Linux ≥ 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
        _proc_status("VmHWM")
        return True
    except (OSError, RuntimeError):
        return False


def _release_free_heap() -> None:
    """Hand the C heap's free pages back to the kernel (glibc's malloc_trim), so that a call reusing memory freed
    while the input was built counts it: otherwise whichever contender allocates less than was freed looks free."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def extra_peak(call: Callable[[], Any]) -> tuple[int, Any]:
    """(bytes the peak resident size rose above the resident size just before the call, the call's value)."""
    gc.collect()
    _release_free_heap()
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")  # peak := current
    before = _proc_status("VmRSS")
    value = call()
    return max(0, _proc_status("VmHWM") - before), value


def _contender(name: str, n_bins: int) -> Callable[[np.ndarray, np.ndarray], Any] | None:
    """The function of (scores, labels) that `name` times; None for a peer that is not installed."""
    from adacal import metrics

    ours = {"adacal ece-ew": metrics.ece_ew, "adacal ece-em": metrics.ece_em, "adacal ece-debias": metrics.ece_debias,
            "adacal ece-sweep-ew": metrics.ece_sweep_ew, "adacal ece-sweep-em": metrics.ece_sweep_em,
            "adacal ece-ew (logits)": metrics.ece_ew}
    if name in ours:
        return lambda scores, labels: float(ours[name](scores, labels, n_bins=n_bins))
    if name == "max pass":
        return lambda scores, labels: float(scores.max(axis=1)[0])
    if name == "adacal all metrics":
        return lambda scores, labels: metrics.compute_metrics(scores, labels, n_bins=n_bins)["ece_ew"]
    if name == "adacal meter":
        def meter(scores: np.ndarray, labels: np.ndarray) -> float:
            state = metrics.CalibrationMeter(n_bins=n_bins)
            for start in range(0, len(labels), METER_BATCH):
                state.update(scores[start:start + METER_BATCH], labels[start:start + METER_BATCH])
            return state.compute()["ece_ew"]
        return meter
    return peer_ece(n_bins).get(name)


def measure_in_this_process(name: str, n: int, k: int, dtype: str, seed: int, n_bins: int) -> dict[str, Any]:
    """Build the input, warm `name` up on a few rows, and measure one call on all of them."""
    fn = _contender(name, n_bins)
    if fn is None:
        return {"skipped": f"{name} is not installed (pip install '.[bench]')"}
    logits, labels = make_logits(n, k, seed, np.dtype(dtype))
    scores = logits if name.endswith("(logits)") else probs_of(logits)
    del logits
    fn(np.ascontiguousarray(scores[:WARM_UP_ROWS]), labels[:WARM_UP_ROWS])
    extra, value = extra_peak(lambda: fn(scores, labels))
    return {"extra_peak_bytes": extra, "input_bytes": int(scores.nbytes), "value": float(value)}


def measure(name: str, n: int, k: int, dtype: str, seed: int, n_bins: int) -> dict[str, Any]:
    """`measure_in_this_process` in a fresh Python process (so one contender's freed memory is no other's)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--n", str(n), "--k", str(k),
               "--dtypes", dtype, "--seed", str(seed), "--n-bins", str(n_bins)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="samples")
    parser.add_argument("--k", type=int, default=100, help="classes")
    parser.add_argument("--dtypes", default="float32,float64", help="comma-separated input dtypes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-bins", type=int, default=15)
    parser.add_argument("--only", default=None, help="comma-separated contenders (default: all)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_metrics_memory.json")
    args = parser.parse_args(argv)
    if args.child is not None:
        result = measure_in_this_process(args.child, args.n, args.k, args.dtypes, args.seed, args.n_bins)
        print(json.dumps(result))
        return result
    if not peak_counter_available():
        print("This system cannot reset a process's peak resident size (/proc/self/clear_refs, Linux): nothing "
              "measured.")
        return {}
    names = CONTENDERS if args.only is None else tuple(name.strip() for name in args.only.split(","))
    unknown = sorted(set(names) - set(CONTENDERS))
    if unknown:
        parser.error(f"unknown contender(s) {', '.join(unknown)}; choose from {', '.join(CONTENDERS)}")
    started = time.perf_counter()
    results: dict[str, Any] = {
        "config": {"n": args.n, "k": args.k, "seed": args.seed, "n_bins": args.n_bins},
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "processor": platform.machine()},
        "units": "extra peak resident bytes of one call above the resident size before it (fresh process each)",
        "by_dtype": {},
    }
    for dtype in args.dtypes.split(","):
        print(f"\n{dtype} scores, N = {args.n:,}, K = {args.k}: extra peak memory of one call")
        print(f"  {'':24s} {'MiB':>9s} {'% of input':>11s} {'bytes/sample':>13s}")
        block: dict[str, Any] = {}
        for name in names:
            entry = measure(name, args.n, args.k, dtype, args.seed, args.n_bins)
            block[name] = entry
            if "extra_peak_bytes" in entry:
                extra = entry["extra_peak_bytes"]
                print(f"  {name:24s} {extra / MIB:9.1f} {100 * extra / entry['input_bytes']:10.1f}% "
                      f"{extra / args.n:13.1f}")
            else:
                print(f"  {name:24s} {entry.get('skipped') or entry.get('failed')}")
        block["floor_note"] = ("a top-label ECE needs O(N): adacal keeps each sample's argmax (int64), top-1 "
                               "probability (float64) and a sort key (int64), 24 bytes a sample")
        results["by_dtype"][dtype] = block
    results["total_seconds"] = time.perf_counter() - started
    from adacal.reports import write_json

    write_json(args.out, results)
    print(f"\nTotal {results['total_seconds']:.0f} s. Wrote {args.out}")
    return results


if __name__ == "__main__":
    main()
