"""Calibration under dataset shift on CIFAR-10: does AdaFocal stay better calibrated than temperature-scaled CE?

    python benchmarks/shift_cifar10.py --train --commit    # the grid; trains missing runs, resumes where it stopped
    python benchmarks/shift_cifar10.py                     # score the finished runs there are, train nothing
    python benchmarks/shift_cifar10.py --summary-only      # rebuild the summary and figure from the result files
    python benchmarks/shift_cifar10.py --quick             # smoke test: 2 corruptions x 2 severities, 500 images

The runs are the CIFAR-10 quality protocol's (`benchmarks/quality_cifar10.py`: ResNet-20, a seeded 10,000-image
training subset, 30 epochs, the full 10,000-image test set), seeds 0, 1, 2 of CE, FLSD-53, AdaFocal and AdaFocal
`--gamma-init 0 --lam 3`, from their folders under --out (`cifar10-resnet20-<loss>-s<seed>/`). With --train a
missing run is trained first by the quality script (same folders, so either script's training serves both).

Each finished run is scored by `adacal shift` (`adacal.commands.shift.run_shift`): every corruption adacal generates
(Hendrycks & Dietterich's definitions, docs/corruptions.md) at severities 1-5, plus the clean test set, before and
after the run's temperature (fitted on its clean validation logits, ECE-EM grid 0.1..10, as the paper fits T). One
small result file per run (benchmarks/results/shift_runs/cifar10/<loss>-seed<k>.json) is written — and with
--commit committed — as soon as the run is scored, so the grid resumes across sessions. The summary (per loss and
severity: the mean over corruptions of each metric, then mean ± std over seeds; AdaFocal minus temperature-scaled CE
per seed) goes to benchmarks/results/shift_cifar10.json, the figure to benchmarks/results/plots/shift_cifar10_*.png.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import quality_common as qc  # noqa: I001  (sets sys.path to the checkout)

DATASET = "cifar10"
LOSSES = ("ce", "flsd-53", "adafocal", "adafocal-g0-lam3")
RESULT_SCHEMA = "adacal-shift-run/1"
RUNS_DIR = qc.RESULTS_DIR / "shift_runs" / DATASET
SUMMARY = qc.RESULTS_DIR / "shift_cifar10.json"
# The quality protocol's options a run must have been trained with to count (config.json of the run folder).
PROTOCOL = {"dataset": "cifar10", "model": "resnet20", "epochs": 30, "train_subset": 10000, "val_size": 5000,
            "test_subset": None, "batch_size": 128, "select": "last"}
COMPARED = ("ece_em", "ece_ew", "ece_debias", "nll", "error")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--losses", default=",".join(LOSSES), help="comma-separated quality-protocol loss names")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", default="/tmp/quality_runs",
                        help="the quality runs' folders (quality_cifar10.py --out)")
    parser.add_argument("--data-dir", default=str(qc.SHARED_DATA))
    parser.add_argument("--cache-dir", default=None, help="cache of generated corruption sets (default: adacal's)")
    parser.add_argument("--corruptions", default="all")
    parser.add_argument("--severities", default="1-5")
    parser.add_argument("--limit", type=int, default=None, help="score a seeded random N of the test images")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2, help="torch threads while scoring")
    parser.add_argument("--train", action="store_true", help="train missing runs (quality_cifar10.py, --jobs 1)")
    parser.add_argument("--commit", action="store_true", help="git add + commit each result file once written")
    parser.add_argument("--runs-dir", default=str(RUNS_DIR))
    parser.add_argument("--results", default=str(SUMMARY))
    parser.add_argument("--plots", default=str(qc.PLOTS_DIR))
    parser.add_argument("--summary-only", action="store_true", help="score nothing: rebuild summary and figure")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test on the finished runs: gaussian_noise and fog at severities 1 and 5, 500 "
                             "images; everything written under <out>_quick")
    return parser


def shift_key(args: argparse.Namespace) -> str:
    """What a result depends on besides the run: the suite, the severities, the image subset, adacal's suite."""
    from adacal.commands.shift import parse_corruptions, parse_severities

    spec = {"corruptions": parse_corruptions(args.corruptions), "severities": parse_severities(args.severities),
            "limit": args.limit, "seed": 0, "temperature": "fitted on clean validation, ECE-EM grid"}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def finished_run(out: Path, loss: str, seed: int) -> Path | None:
    """The newest finished run folder of `loss` and `seed` under `out` trained with the quality protocol."""
    folder = out / f"{DATASET}-resnet20-{loss}-s{seed}"
    if not folder.is_dir():
        return None
    spec_loss, spec_options = qc.LOSS_SPECS[loss]
    for run in sorted((p for p in folder.iterdir() if p.is_dir()), reverse=True):
        if not ((run / "evaluate.json").is_file() and (run / "predictions.npz").is_file()):
            continue
        try:
            config = json.loads((run / "config.json").read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        same = all(config.get(key) == value for key, value in PROTOCOL.items()) and config.get("seed") == seed
        options = config.get("loss_options") or {}
        if same and config.get("loss") == spec_loss and all(options.get(k) == v for k, v in spec_options.items()):
            return run
    return None


def train(args: argparse.Namespace, loss: str, seed: int) -> None:
    """Train the quality run of `loss` and `seed` (the quality script resumes a run cut short)."""
    scratch = Path(args.out) / "quality-results"
    command = [sys.executable, str(Path(__file__).with_name("quality_cifar10.py")), "--losses", loss, "--seeds",
               str(seed), "--arms", "mean", "--out", args.out, "--data-dir", args.data_dir, "--runs-dir",
               str(scratch), "--no-summary", "--device", args.device]
    print(f"  [{loss} s{seed}] training: {' '.join(command)}", flush=True)
    subprocess.run(command, check=True)


def score(args: argparse.Namespace, run: Path, loss: str, seed: int, key: str) -> dict[str, Any]:
    import torch

    from adacal.commands.shift import run_shift

    torch.set_num_threads(args.threads)
    started = time.perf_counter()

    def progress(done: int, total: int, what: str) -> None:
        if done < total:
            print(f"  [{loss} s{seed}] {done + 1}/{total} {what}", flush=True)

    shifted = run_shift(run, corruptions=args.corruptions, severities=args.severities, data_dir=args.data_dir,
                        cache_dir=args.cache_dir, download=False, device=args.device, limit=args.limit,
                        fit_temperature=True, json_path=run / f"shift-benchmark-{key}.json", force=True,
                        progress=progress)
    from adacal.reports import utc_now

    return {"schema": RESULT_SCHEMA, "key": key, "dataset": DATASET, "loss": loss, "seed": seed, "run_dir": str(run),
            "created": utc_now(), "results": shifted.results,
            "config": {k: v for k, v in shifted.config.items() if k not in ("model", "checkpoint", "run")},
            "timing": {"scoring_seconds": round(time.perf_counter() - started, 1)},
            "machine": qc.machine_info(args.device)}


def read_entry(path: Path, key: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(entry, dict) and entry.get("schema") == RESULT_SCHEMA and entry.get("key") == key
    return entry if ok else None


def corruption_means(results: dict[str, Any], stage: str, metric: str) -> dict[int, float]:
    """Severity (0: clean) → the mean over corruptions of `metric` at `stage`."""
    means = {0: results["clean"][stage][metric]}
    for severity, block in results["by_severity"].items():
        if block.get(stage) is not None:
            means[int(severity)] = block[stage][metric]["mean"]
    return means


def summarise(entries: list[dict[str, Any]], losses: list[str]) -> dict[str, Any]:
    """Per loss, stage and metric: severity → mean ± std over seeds of the corruption mean; and per severity the
    paired differences of each AdaFocal variant (as trained, and after T) from temperature-scaled CE, seed by seed."""
    table: dict[str, Any] = {}
    for loss in losses:
        runs = [e for e in entries if e["loss"] == loss]
        if not runs:
            continue
        block: dict[str, Any] = {"seeds": sorted(e["seed"] for e in runs),
                                 "temperature": qc.mean_std([e["results"]["temperature"] for e in runs])}
        for stage in ("pre", "post"):
            for metric in COMPARED:
                per_seed = [corruption_means(e["results"], stage, metric) for e in runs]
                severities = sorted(set.intersection(*(set(m) for m in per_seed)))
                block[f"{metric}_{stage}"] = {str(s): qc.mean_std([m[s] for m in per_seed]) for s in severities}
        table[loss] = block
    paired: dict[str, Any] = {}
    ce = {e["seed"]: e for e in entries if e["loss"] == "ce"}
    for loss in losses:
        if not loss.startswith("adafocal"):
            continue
        for stage in ("pre", "post"):
            diffs: dict[str, list[float]] = {}
            for entry in (e for e in entries if e["loss"] == loss and e["seed"] in ce):
                ours = corruption_means(entry["results"], stage, "ece_em")
                theirs = corruption_means(ce[entry["seed"]]["results"], "post", "ece_em")
                for severity in sorted(set(ours) & set(theirs)):
                    diffs.setdefault(str(severity), []).append(ours[severity] - theirs[severity])
            paired[f"{loss}_{stage}_minus_ce_post"] = {s: {**qc.mean_std(d), "values": d} for s, d in diffs.items()}
    return {"per_loss": table, "ece_em_paired_with_ce_post_t": paired}


def percent_cell(stat: dict[str, Any] | None, *, signed: bool = False) -> str:
    """A mean ± std of fractions as percent (or points) with two decimals; "–" where there is no mean."""
    if not stat or stat["mean"] is None:
        return "–"
    spread = "" if stat["std"] is None else f" ± {100 * stat['std']:.2f}"
    return f"{100 * stat['mean']:{'+' if signed else ''}.2f}{spread}"


def print_table(summary: dict[str, Any], metric: str = "ece_em", stages: tuple[str, ...] = ("pre", "post")) -> None:
    """`metric` (%) per severity: each loss as trained and after T, mean ± std over seeds."""
    per_loss = summary["per_loss"]
    severities = sorted({int(s) for block in per_loss.values() for s in block[f"{metric}_pre"]})
    header = ["loss", "T", *("clean" if s == 0 else f"s{s}" for s in severities)]
    rows = []
    for loss, block in per_loss.items():
        for stage in stages:
            cells = [percent_cell(block[f"{metric}_{stage}"].get(str(s))) for s in severities]
            name = qc.DISPLAY.get(loss, loss) + ("" if stage == "pre" else " + T")
            count = len(block["seeds"])
            seeds = f" ({count} seed{'s' if count != 1 else ''})" if stage == stages[0] else ""
            temperature = block["temperature"]["mean"] if stage == "post" else None
            rows.append([name + seeds, "" if temperature is None else f"{temperature:.2f}", *cells])
    title = {"ece_em": "ECE-EM", "error": "Error"}.get(metric, metric)
    print(f"{title} (%) under shift: mean over corruptions, then mean ± std over seeds")
    print(qc.markdown_table(header, rows))


def print_paired_table(summary: dict[str, Any]) -> None:
    """Each AdaFocal variant (as trained, and after T) minus the same seed's temperature-scaled CE, in points of
    ECE-EM per severity: mean ± std of the paired differences (negative: the variant is better calibrated)."""
    paired = summary["ece_em_paired_with_ce_post_t"]
    severities = sorted({int(s) for block in paired.values() for s in block})
    if not severities:
        return
    rows = []
    for name, block in paired.items():
        if not block:  # no seed of this variant has its CE run yet
            continue
        loss, stage = name.removesuffix("_minus_ce_post").rsplit("_", 1)
        label = qc.DISPLAY.get(loss, loss) + (" as trained" if stage == "pre" else " + T") + " − CE + T"
        cells = [percent_cell(block.get(str(s)), signed=True) for s in severities]
        rows.append([label, str(max(stat["n"] for stat in block.values())), *cells])
    print("ECE-EM minus the same seed's temperature-scaled CE (points; mean ± std of the paired differences)")
    print(qc.markdown_table(["points of ECE-EM", "seeds", *("clean" if s == 0 else f"s{s}" for s in severities)],
                            rows))


def draw(entries: list[dict[str, Any]], losses: list[str], folder: Path, slug: str) -> list[Path]:
    from adacal.plots.shift import ShiftGroup, shift_figure
    from adacal.plots.style import save_figure

    # Display names in the legend; the losses adacal names keep their colours, variants take spare ones.
    groups = [ShiftGroup(label=qc.DISPLAY.get(loss, loss), results=[e["results"] for e in entries if e["loss"] == loss],
                         loss=loss if loss in ("ce", "flsd-53", "adafocal") else None) for loss in losses]
    groups = [g for g in groups if g.results]
    if not groups:
        return []
    written = []
    for metric in ("ece_em", "nll"):
        figure = shift_figure(groups, metric=metric, title="CIFAR-10, ResNet-20 (quality protocol), seeds pooled")
        written.append(save_figure(figure, folder / f"{slug}_{metric}.png", dpi=110, kind="shift"))
    return written


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.corruptions, args.severities, args.limit = "gaussian_noise,fog", "1,5", 500
        args.runs_dir = str(Path(args.out.rstrip("/") + "_quick") / "shift_runs")
        args.results = str(Path(args.out.rstrip("/") + "_quick") / "shift_cifar10_quick.json")
        args.plots = str(Path(args.out.rstrip("/") + "_quick") / "plots")
    losses = qc.parse_losses(args.losses)
    seeds = qc.parse_ints(args.seeds, "--seeds")
    key = shift_key(args)
    runs_dir = Path(args.runs_dir)
    entries, missing = [], []
    for seed in seeds:
        for loss in losses:
            path = runs_dir / f"{loss}-seed{seed}.json"
            entry = read_entry(path, key)
            if entry is not None:
                entries.append(entry)
                continue
            if args.summary_only:
                continue
            run = finished_run(Path(args.out), loss, seed)
            if run is None and args.train:
                train(args, loss, seed)
                run = finished_run(Path(args.out), loss, seed)
            if run is None:
                missing.append(f"{loss} s{seed}")
                continue
            print(f"[{loss} s{seed}] scoring {run}", flush=True)
            entry = score(args, run, loss, seed, key)
            qc.write_result(path, entry)
            entries.append(entry)
            means = corruption_means(entry["results"], "pre", "ece_em")
            post = corruption_means(entry["results"], "post", "ece_em")
            print(f"[{loss} s{seed}] ECE-EM % clean {100 * means[0]:.2f}→{100 * post[0]:.2f} (T="
                  f"{entry['results']['temperature']:.2f}), severity 5 {100 * means.get(5, float('nan')):.2f}→"
                  f"{100 * post.get(5, float('nan')):.2f}; {entry['timing']['scoring_seconds']} s", flush=True)
            if args.commit:
                qc.commit_file(path, f"Shift result: {DATASET} {loss} seed {seed} (key {key})")
    if missing:
        print(f"Not scored (no finished run under {args.out}; --train trains them): {', '.join(missing)}")
    if not entries:
        print("No result files yet.")
        return 0
    summary = summarise(entries, losses)
    print_table(summary)
    print_table(summary, "error", stages=("pre",))  # T never changes the argmax
    print_paired_table(summary)
    from adacal.reports import utc_now, write_json

    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    write_json(args.results, {"kind": "benchmark-shift-cifar10", "created": utc_now(), "key": key,
                              "runs": [{"loss": e["loss"], "seed": e["seed"],
                                        "result": f"{e['loss']}-seed{e['seed']}.json"} for e in entries],
                              "missing": missing, **summary})
    for path in draw(entries, losses, Path(args.plots), "shift_cifar10" + ("_quick" if args.quick else "")):
        print(f"Wrote {path}")
    print(f"Wrote {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
