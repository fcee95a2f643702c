"""Speed of adacal's ECE metrics: against one `probs.max(axis=1)` pass (float32 and float64), torchmetrics and netcal,
the published `uncertainty-calibration` package and sklearn's binning.

    python benchmarks/bench_metrics.py                 # N = 10^6, K = 100 (a few minutes on 2 busy cores)
    python benchmarks/bench_metrics.py --n 200000 --k 10 --repeats 5

Everything runs in one process on the same arrays; each figure is the median of --repeats timed calls.
0. Per dtype (float32, float64), probabilities (N, K): every adacal ECE (ew, em, debias, sweep-ew, sweep-em; input
   validation and probability detection included) as a multiple of one `probs.max(axis=1)` pass over the same array
   (target ≤ 3×) and of one read of every entry on the scan's threads (a flat max: the memory floor, so a metric's
   "x read" says how much of its time is more than reading its input), and against the fastest of torchmetrics' \
`multiclass_calibration_error` and netcal's `ECE` (target:
   adacal ≥ 3× faster; both are equal-width top-label ECEs, compared with adacal's ece-ew). Logits of the same dtype
   (a block-wise softmax is needed) are timed too. torchmetrics / netcal are optional (`pip install .[bench]`); a
   missing one is skipped with a message.
1. End to end from probabilities (N, K) — what a user calls: adacal's ece_ew / ece_em / ece_debias / sweeps
   (input validation and probability detection included) vs the package's get_ece, get_ece_em and
   lower_bound_scaling_ce(p=2, debias=True, mode="top-label"). The package is timed at --ref-n (default 10^5) and,
   unless --no-ref-full, at N as well; ratios are reported at both sizes, never extrapolated.
2. The binning core from top-1 confidences and hits (N,): adacal's kernels vs the package on the same 1-D arrays
   (its binary path), and binning alone: adacal's bin_statistics vs sklearn.calibration.calibration_curve.
3. ECE_SWEEP scaling: time per sample from 10^4 to 10^6 (N log N would grow by log(N) only).
4. Calibration tests and the CORP decomposition on top-1 arrays (N,) (`--tests-only` runs this section alone):
   Spiegelhalter (one pass), KS and Kuiper (one sort, shared), each beside one ECE-EM (also one sort); the ECE
   consistency-resampling test's cost per resample (--test-resamples of them; O(N) each: a uniform draw per sample
   and one segmented sum); CORP of BRIER-TOP (one sort and one PAV).
5. A binary model's metrics and selective prediction, end to end from (N, 2) probabilities (`--binary-only` runs this
   section alone): brier-positive (no sort), ece-positive-ew (no sort) and ece-positive-em (one sort, of P(class 1))
   beside the top-label ece-ew / ece-em of the same array and scikit-learn's brier_score_loss and calibration_curve;
   then aurc, e-aurc, augrc, risk@80, coverage@5, auroc-correct and auprc-errors (each one sort of the confidences)
   and all of them in one compute_metrics call (the sort shared).

Results are written (atomically) to benchmarks/results/bench_metrics.json.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from adacal import __version__  # noqa: E402
from adacal.metrics import (  # noqa: E402
    bin_statistics,
    calibration_error,
    compute_metrics,
    ece_debias,
    ece_em,
    ece_ew,
    ece_sweep_em,
    ece_sweep_ew,
    prepare_predictions,
    sweep_bins,
)
from adacal.reports import write_json  # noqa: E402

ECE_NAMES = ["ece-ew", "ece-em", "ece-debias", "ece-sweep-ew", "ece-sweep-em"]


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


_SETTLE_S = 0.2


def interleaved_times(fns: dict[str, Callable[[], Any]], repeats: int) -> tuple[dict[str, float], dict[str, Any]]:
    """Median seconds per function, timing each once per round over `repeats` rounds (plus one untimed warm-up).

    Each round starts one function later than the previous one (so no function always follows the same neighbour),
    and a short pause follows each call (so that threads a peer leaves spinning, e.g. OpenMP's, go idle first).
    Garbage is collected before each call and the collector is off during it.
    """
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    values: dict[str, Any] = {}
    for name in names:
        values[name] = fns[name]()
    for round_ in range(repeats):
        for i in range(len(names)):
            name = names[(round_ + i) % len(names)]
            gc.collect()
            time.sleep(_SETTLE_S)
            gc.disable()  # as timeit does: a collection of the peers' garbage must not land in whichever call is next
            try:
                start = time.perf_counter()
                fns[name]()
                times[name].append(time.perf_counter() - start)
            finally:
                gc.enable()
    return {name: statistics.median(seconds) for name, seconds in times.items()}, values


SINGLE_THREAD = "ece-ew, adacal on 1 thread"
READ_PASS = "read pass"


def read_pass(array: np.ndarray, threads: int) -> float:
    """Read every entry of a C-contiguous array once, on `threads` threads (numpy's flat max: SIMD and GIL-free),
    the memory-bound floor of any exact metric over it: a multiple of this says how much of a metric's time is
    compute rather than reading the input."""
    chunks = np.array_split(array, threads)
    if threads == 1:
        return float(chunks[0].max())
    from adacal.metrics.rows import _executor

    # The scan's own pool, so neither side pays for starting threads.
    return float(max(_executor().map(np.max, chunks)))


def single_threaded(fn: Callable[[], Any], variable: str) -> Any:
    """fn() with adacal's row scan held to one thread (the environment variable restored after)."""
    saved = os.environ.get(variable)
    os.environ[variable] = "1"
    try:
        return fn()
    finally:
        if saved is None:
            del os.environ[variable]
        else:
            os.environ[variable] = saved


def make_probs(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """An over-confident classifier: ~70 % accurate, softmax of sharpened logits (float64 probabilities)."""
    probs, labels = make_logits(n, k, seed, np.float64)
    probs -= probs.max(axis=1, keepdims=True)
    np.exp(probs, out=probs)
    probs /= probs.sum(axis=1, keepdims=True)
    return probs, labels


def make_logits(n: int, k: int, seed: int, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """Logits of the over-confident classifier of make_probs, in `dtype`."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=n)
    logits = rng.standard_normal((n, k), dtype=np.float32)
    hit = rng.random(n) < 0.7
    logits[np.flatnonzero(hit), labels[hit]] += 3.0
    logits *= 2.0
    return logits.astype(dtype, copy=False), labels


def probs_of(logits: np.ndarray) -> np.ndarray:
    """Softmax in place, in the logits' dtype (what a float32 model outputs)."""
    probs = logits.copy()
    probs -= probs.max(axis=1, keepdims=True)
    np.exp(probs, out=probs)
    probs /= probs.sum(axis=1, keepdims=True)
    return probs


def peer_ece(n_bins: int) -> dict[str, Callable[[np.ndarray, np.ndarray], float]]:
    """Equal-width top-label ECE of the optional peers that are installed (a message for each one missing)."""
    peers: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {}
    try:
        import torch
        from torchmetrics.functional.classification import multiclass_calibration_error

        def torchmetrics_ece(p: np.ndarray, y: np.ndarray) -> float:
            return float(multiclass_calibration_error(
                torch.from_numpy(p), torch.from_numpy(y), num_classes=p.shape[1], n_bins=n_bins, norm="l1"
            ))

        peers["torchmetrics"] = torchmetrics_ece
    except ImportError:
        print("torchmetrics is not installed: skipping it (pip install torchmetrics, or .[bench]).")
    try:
        from netcal.metrics import ECE

        def netcal_ece(p: np.ndarray, y: np.ndarray) -> float:
            return float(ECE(bins=n_bins).measure(p, y))

        peers["netcal"] = netcal_ece
    except ImportError:
        print("netcal is not installed: skipping it (pip install netcal, or .[bench]).")
    return peers


def top_label(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-1 confidences and hits of an over-confident model (accuracy = confidence ** 1.5)."""
    rng = np.random.default_rng(seed)
    conf = 0.1 + 0.9 * rng.beta(5.0, 1.5, size=n)
    correct = (rng.random(n) < conf**1.5).astype(np.float64)
    return conf, correct


def calibration_tests_section(args: Any) -> dict[str, Any]:
    """4. The calibration tests and CORP on top-1 arrays of N samples (seconds, medians of --repeats)."""
    from adacal.metrics.calibration_tests import run_calibration_tests
    from adacal.metrics.confidences import prepare_confidences
    from adacal.metrics.decomposition import top_label_decomposition

    conf, correct = top_label(args.n, args.seed)
    print(f"\nCalibration tests and CORP on top-1 arrays, N = {args.n:,}   (seconds; fresh inputs: sorts included)")

    def fresh(fn: Callable[[Any], Any]) -> Callable[[], Any]:
        return lambda: fn(prepare_confidences(conf, correct))  # nothing cached between repeats

    timed = {
        "validation alone (in every row)": fresh(lambda pred: None),
        "ece-em (one sort, the reference)": fresh(lambda pred: calibration_error(
            pred.top_label_statistics("equal-mass", 15))),
        "spiegelhalter": fresh(lambda pred: run_calibration_tests(pred, "spiegelhalter")),
        "ks + kuiper (one shared sort)": fresh(lambda pred: run_calibration_tests(pred, ["ks", "kuiper"])),
        "corp brier-top (sort + PAV)": fresh(lambda pred: top_label_decomposition(pred, "brier")),
    }
    out: dict[str, Any] = {"n": args.n}
    for name, fn in timed.items():
        seconds, _ = median_time(fn, args.repeats)
        out[name] = {"seconds": seconds}
        print(f"  {name:34s} {seconds:9.3f}")
    resamples = args.test_resamples
    pred = prepare_confidences(conf, correct)
    _ = pred.sorted_confidences  # the sort outside the timing: what is left is the resamples' cost
    for binning in ("ece-em", "ece-ew"):
        seconds, _ = median_time(lambda: run_calibration_tests(pred, binning, n_resamples=resamples), args.repeats)
        per = seconds / resamples
        out[f"{binning} resampling test"] = {"seconds": seconds, "resamples": resamples, "seconds_per_resample": per,
                                             "ns_per_sample_per_resample": 1e9 * per / args.n}
        print(f"  {binning + ' resampling, per resample':34s} {per:9.4f}   ({1e9 * per / args.n:.1f} ns per sample "
              f"per resample; {resamples} resamples)")
    return out


BINARY_NAMES = ["ece-ew", "ece-em", "brier", "brier-positive", "ece-positive-ew", "ece-positive-em"]
SELECTIVE_NAMES = ["aurc", "e-aurc", "augrc", "risk@80", "coverage@5", "auroc-correct", "auprc-errors"]


def binary_section(args: Any) -> dict[str, Any]:
    """5. A binary model's positive-class metrics and the selective-prediction metrics, end to end from (N, 2)
    probabilities (seconds, medians of --repeats; each call validates its input, nothing cached between calls)."""
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss

    from adacal.metrics import METRICS

    rng = np.random.default_rng(args.seed)
    p1 = rng.beta(2.0, 2.0, args.n)
    labels = (rng.random(args.n) < p1 ** 1.2).astype(np.int64)
    probs = np.column_stack([1.0 - p1, p1])
    print(f"\nBinary and selective-prediction metrics, N = {args.n:,}, K = 2   (seconds; end to end, validation "
          "included; x = multiple of ece-em, one sort)")
    out: dict[str, Any] = {"n": args.n}
    t_em, _ = median_time(lambda: ece_em(probs, labels), args.repeats)
    for name in BINARY_NAMES + SELECTIVE_NAMES:
        metric = METRICS.get(name) if "@" not in name else None
        if metric is None:  # risk@80, coverage@5: parameterised, through compute_metrics
            def metric(p: Any, y: Any, name: str = name) -> float:
                return compute_metrics(p, y, names=name)[name.replace("@", "_at_")]
        seconds, value = median_time(lambda: metric(probs, labels), args.repeats)
        out[name] = {"seconds": seconds, "value": value, "x_ece_em": seconds / t_em}
        print(f"  {name:34s} {seconds:9.3f} {seconds / t_em:8.2f}x ece-em")
    t_all, _ = median_time(lambda: compute_metrics(probs, labels, names=SELECTIVE_NAMES), args.repeats)
    out["compute_metrics(all selective)"] = {"seconds": t_all, "x_ece_em": t_all / t_em}
    print(f"  {'compute_metrics(all selective)':34s} {t_all:9.3f} {t_all / t_em:8.2f}x ece-em   (one shared sort)")
    t_sk, v_sk = median_time(lambda: brier_score_loss(labels, p1), args.repeats)
    out["sklearn brier_score_loss"] = {"seconds": t_sk, "abs_diff_vs_brier_positive":
                                       abs(float(v_sk) - out["brier-positive"]["value"])}
    print(f"  {'sklearn brier_score_loss':34s} {t_sk:9.3f}   (|diff| vs brier-positive "
          f"{out['sklearn brier_score_loss']['abs_diff_vs_brier_positive']:.1e})")
    for strategy in ("uniform", "quantile"):
        t_curve, _ = median_time(lambda: calibration_curve(labels, p1, n_bins=15, strategy=strategy), args.repeats)
        out[f"sklearn calibration_curve({strategy})"] = {"seconds": t_curve}
        print(f"  {'sklearn calibration_curve(' + strategy + ')':34s} {t_curve:9.3f}   (bins only, no ECE)")
    return out


def row(name: str, ours: float, ref: float | None) -> str:
    ratio = f"{ref / ours:8.1f}x" if ref is not None else "        -"
    ref_text = f"{ref:9.3f}" if ref is not None else "        -"
    return f"  {name:34s} {ours:9.3f} {ref_text} {ratio}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="samples for the main comparison")
    parser.add_argument("--k", type=int, default=100, help="classes")
    parser.add_argument("--ref-n", type=int, default=100_000, help="samples for the reference-package comparison")
    parser.add_argument("--no-ref-full", action="store_true", help="do not time the reference package at --n")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sweep-n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-peers", action="store_true", help="do not time torchmetrics and netcal")
    parser.add_argument("--dtype-only", action="store_true", help="run section 0 only (the dtype / peer comparison)")
    parser.add_argument("--tests-only", action="store_true", help="run section 4 only (calibration tests, CORP)")
    parser.add_argument("--test-resamples", type=int, default=100, help="resamples timed in section 4")
    parser.add_argument("--binary-only", action="store_true",
                        help="run section 5 only (binary positive-class and selective-prediction metrics)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_metrics.json")
    args = parser.parse_args(argv)

    import calibration  # the `uncertainty-calibration` package
    from sklearn.calibration import calibration_curve

    reference = {
        "ece-ew": lambda p, y: calibration.get_ece(p, y, num_bins=15),
        "ece-em": lambda p, y: calibration.get_ece_em(p, y, num_bins=15),
        "ece-debias": lambda p, y: calibration.lower_bound_scaling_ce(
            p, y, p=2, debias=True, num_bins=15, mode="top-label"
        ),
    }
    ours = {
        "ece-ew": ece_ew,
        "ece-em": ece_em,
        "ece-debias": ece_debias,
        "ece-sweep-ew": ece_sweep_ew,
        "ece-sweep-em": ece_sweep_em,
    }
    results: dict[str, Any] = {
        "config": {"n": args.n, "k": args.k, "ref_n": args.ref_n, "repeats": args.repeats, "seed": args.seed,
                   "sweep_n": args.sweep_n},
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "processor": platform.machine(),
                    "adacal": __version__},
        "units": "seconds (median of repeats); ratio = reference / adacal",
    }
    results["machine"]["cpus"] = os.cpu_count()
    results["machine"]["load_average_at_start"] = list(os.getloadavg())
    try:
        import torch

        results["machine"]["torch_threads"] = torch.get_num_threads()  # torchmetrics runs on this many threads
    except ImportError:
        pass
    from adacal.metrics.rows import THREADS_VARIABLE, scan_threads

    results["machine"]["adacal_scan_threads"] = scan_threads()  # adacal's row scan runs on this many threads
    started = time.perf_counter()
    if args.binary_only:
        results["binary_and_selective"] = binary_section(args)
        results["total_seconds"] = time.perf_counter() - started
        write_json(args.out.with_name("bench_binary_selective.json"), results)
        print(f"\nTotal {results['total_seconds']:.0f} s. Wrote {args.out.with_name('bench_binary_selective.json')}")
        return results
    if args.tests_only:
        results["calibration_tests"] = calibration_tests_section(args)
        results["total_seconds"] = time.perf_counter() - started
        write_json(args.out.with_name("bench_calibration_tests.json"), results)
        print(f"\nTotal {results['total_seconds']:.0f} s. Wrote {args.out.with_name('bench_calibration_tests.json')}")
        return results

    # ------------------------------------------------------------------------- 0. per dtype, against a max pass
    peers = {} if args.no_peers else peer_ece(15)
    by_dtype: dict[str, Any] = {}
    for dtype in (np.float32, np.float64):
        name_of_dtype = np.dtype(dtype).name
        logits, labels = make_logits(args.n, args.k, args.seed, dtype)
        probs = probs_of(logits)
        print(f"\n{name_of_dtype} probabilities, N = {args.n:,}, K = {args.k}   (seconds; x = multiple of one max "
              "pass)")
        # Round-robin: every repeat times the max pass, each adacal ECE and each peer once, in turn, so that a change
        # in the machine's load during the run weighs on all of them alike (a loaded, shared machine drifts).
        contenders: dict[str, Callable[[], Any]] = {"max": lambda: probs.max(axis=1),
                                                   READ_PASS: lambda: read_pass(probs, scan_threads())}
        contenders.update({name: (lambda fn=fn: fn(probs, labels)) for name, fn in ours.items()})
        contenders.update({peer: (lambda fn=fn: fn(probs, labels)) for peer, fn in peers.items()})
        contenders[SINGLE_THREAD] = lambda: single_threaded(lambda: ece_ew(probs, labels), THREADS_VARIABLE)
        times, values = interleaved_times(contenders, args.repeats)
        t_max = times["max"]
        t_read = times[READ_PASS]
        block: dict[str, Any] = {"max_pass_s": t_max, "read_pass_s": t_read, "read_pass_threads": scan_threads()}
        print(f"  {'probs.max(axis=1)':34s} {t_max:9.3f}")
        print(f"  {'read pass (' + str(scan_threads()) + ' threads, flat max)':34s} {t_read:9.3f} "
              f"{t_read / t_max:8.2f}x max   (the memory floor)")
        for name in ours:
            t_ours, v_ours = times[name], values[name]
            block[name] = {"adacal_s": t_ours, "value": v_ours, "x_max_pass": t_ours / t_max,
                           "x_read_pass": t_ours / t_read}
            print(f"  {name:34s} {t_ours:9.3f} {t_ours / t_max:8.2f}x max {t_ours / t_read:6.2f}x read")
        peer_times = {}
        for peer in peers:
            t_peer, v_peer = times[peer], values[peer]
            peer_times[peer] = t_peer
            block[peer] = {"ece_s": t_peer, "value": v_peer, "x_read_pass": t_peer / t_read,
                           "abs_diff_vs_adacal_ece_ew": abs(v_peer - block["ece-ew"]["value"])}
            print(f"  {peer + ' ECE (equal-width)':34s} {t_peer:9.3f} {t_peer / t_max:8.2f}x max "
                  f"{t_peer / t_read:6.2f}x read")
        if peer_times:
            fastest = min(peer_times, key=peer_times.get)
            block["fastest_peer"] = fastest
            for name in ours:
                block[name]["speedup_vs_fastest_peer"] = peer_times[fastest] / block[name]["adacal_s"]
            print(f"  speed-up of adacal over the fastest peer ({fastest}): "
                  + ", ".join(f"{name} {block[name]['speedup_vs_fastest_peer']:.1f}x" for name in ours))
        within = all(block[name]["x_max_pass"] <= 3.0 for name in ours) and all(
            block[name].get("speedup_vs_fastest_peer", math.inf) >= 3.0 for name in ours
        )
        block["targets_met"] = within
        print(f"  targets (every ECE <= 3x max pass and >= 3x faster than the fastest peer): "
              f"{'met' if within else 'NOT met'}")
        t_single = times[SINGLE_THREAD]
        block[SINGLE_THREAD] = {"adacal_s": t_single, "x_max_pass": t_single / t_max,
                                "speedup_vs_fastest_peer": (peer_times[block["fastest_peer"]] / t_single
                                                            if peer_times else None)}
        print(f"  {SINGLE_THREAD:34s} {t_single:9.3f} {t_single / t_max:8.2f}x max   (not a target: "
              f"the other figures use {results['machine']['adacal_scan_threads']} scan thread(s), "
              f"torchmetrics {results['machine'].get('torch_threads', '?')})")
        # Freed here, before the logits timing; not `del`: the timed lambdas above still name it (ruff F821).
        probs = None
        t_logits, _ = median_time(lambda: ece_ew(logits, labels), args.repeats)
        block["ece-ew from logits"] = {"adacal_s": t_logits, "x_max_pass": t_logits / t_max}
        print(f"  {'ece-ew from logits (softmax)':34s} {t_logits:9.3f} {t_logits / t_max:8.2f}x max")
        by_dtype[name_of_dtype] = block
        logits = labels = None
    results["by_dtype"] = by_dtype
    results["machine"]["load_average_after_dtype_section"] = list(os.getloadavg())
    if args.dtype_only:
        results["total_seconds"] = time.perf_counter() - started
        write_json(args.out, results)
        print(f"\nTotal {results['total_seconds']:.0f} s. Wrote {args.out}")
        return results

    # ------------------------------------------------------------------------------------------ 1. end to end
    sizes = [args.ref_n] + ([args.n] if args.n != args.ref_n else [])
    end_to_end: dict[str, Any] = {}
    for n in sizes:
        probs, labels = make_probs(n, args.k, args.seed)
        timed_ref = n == args.ref_n or not args.no_ref_full
        print(f"\nEnd to end from probabilities, N = {n:,}, K = {args.k}   (seconds; ratio = package / adacal)")
        print(f"  {'metric':34s} {'adacal':>9s} {'package':>9s} {'ratio':>9s}")
        block: dict[str, Any] = {}
        for name, fn in ours.items():
            t_ours, v_ours = median_time(lambda: fn(probs, labels), args.repeats)
            entry: dict[str, Any] = {"adacal_s": t_ours, "value": v_ours}
            if name in reference and timed_ref:
                t_ref, v_ref = median_time(lambda: reference[name](probs, labels), args.repeats)
                entry.update(package_s=t_ref, ratio=t_ref / t_ours, package_value=float(v_ref),
                             abs_diff=abs(float(v_ref) - v_ours))
            block[name] = entry
            print(row(name, t_ours, entry.get("package_s")))
        t_all, _ = median_time(lambda: compute_metrics(probs, labels, names=ECE_NAMES), args.repeats)
        block["compute_metrics(all five ECEs)"] = {"adacal_s": t_all}
        print(row("compute_metrics(all five ECEs)", t_all, None))
        t_prep, _ = median_time(lambda: prepare_predictions(probs, labels).confidences, args.repeats)
        block["validation + top-1 (shared)"] = {"adacal_s": t_prep}
        print(row("  of which validation + top-1", t_prep, None))
        end_to_end[str(n)] = block
        probs = labels = None
    results["end_to_end"] = end_to_end

    # ---------------------------------------------------------------------------- 2. core: from top-1 arrays
    conf, correct = top_label(args.n, args.seed)
    hits = correct.astype(np.int64)
    print(f"\nCore from top-1 confidences and hits, N = {args.n:,}")
    print(f"  {'metric':34s} {'adacal':>9s} {'package':>9s} {'ratio':>9s}")
    core: dict[str, Any] = {}

    def core_ece(binning: str, debias: bool) -> float:
        stats = bin_statistics(conf, correct, n_bins=15, binning=binning)
        return calibration_error(stats, "l2", debias=True) if debias else calibration_error(stats)

    for name, binning, debias in (("ece-ew", "equal-width", False), ("ece-em", "equal-mass", False),
                                  ("ece-debias", "equal-mass", True)):
        t_ours, v_ours = median_time(lambda: core_ece(binning, debias), args.repeats)
        t_ref, v_ref = median_time(lambda: reference[name](conf, hits), args.repeats)
        core[name] = {"adacal_s": t_ours, "package_s": t_ref, "ratio": t_ref / t_ours,
                      "abs_diff": abs(float(v_ref) - v_ours)}
        print(row(name, t_ours, t_ref))
    for strategy, binning in (("uniform", "equal-width"), ("quantile", "equal-mass")):
        t_ours, _ = median_time(lambda: bin_statistics(conf, correct, n_bins=15, binning=binning), args.repeats)
        t_sk, _ = median_time(lambda: calibration_curve(hits, conf, n_bins=15, strategy=strategy), args.repeats)
        key = f"binning {binning} vs sklearn calibration_curve({strategy})"
        core[key] = {"adacal_s": t_ours, "sklearn_s": t_sk, "ratio": t_sk / t_ours}
        print(row(f"bins {binning} (vs sklearn)", t_ours, t_sk))
    results["core"] = core

    # ----------------------------------------------------------------------------------------- 3. sweep scaling
    print("\nECE_SWEEP scaling on top-1 arrays (over-confident model)")
    print(f"  {'N':>10s} {'binning':12s} {'bins':>6s} {'seconds':>9s} {'us/sample':>10s} {'ns/(N log2 N)':>14s}")
    sweep: list[dict[str, Any]] = []
    for n in args.sweep_n:
        c, h = top_label(n, args.seed + 1)
        for binning in ("equal-mass", "equal-width"):
            def run() -> float:
                b = sweep_bins(c, h, binning=binning)
                return calibration_error(bin_statistics(c, h, n_bins=b, binning=binning))

            seconds, _ = median_time(run, args.repeats)
            b = sweep_bins(c, h, binning=binning)
            entry = {"n": n, "binning": binning, "bins": b, "seconds": seconds, "us_per_sample": 1e6 * seconds / n,
                     "ns_per_n_log2_n": 1e9 * seconds / (n * math.log2(n))}
            sweep.append(entry)
            print(f"  {n:10,d} {binning:12s} {b:6d} {seconds:9.4f} {entry['us_per_sample']:10.3f} "
                  f"{entry['ns_per_n_log2_n']:14.3f}")
    results["sweep_scaling"] = sweep
    results["calibration_tests"] = calibration_tests_section(args)
    results["binary_and_selective"] = binary_section(args)
    results["total_seconds"] = time.perf_counter() - started
    write_json(args.out, results)
    print(f"\nTotal {results['total_seconds']:.0f} s. Wrote {args.out}")
    return results


if __name__ == "__main__":
    main()
