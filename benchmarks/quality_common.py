"""Shared pieces of the calibration-quality benchmarks (quality_cifar10.py, quality_20newsgroups.py).

- `LOSS_SPECS`: the compared losses by benchmark name ("focal-3" = focal with γ = 3, "ls-0.05" = label smoothing 0.05).
- `train_or_reuse`: one training run per (loss, seed) through `adacal.training.train`, each in its own folder
  `<out>/<tag>-<loss>-s<seed>/<run>`; a finished run with the same options is reused instead of retrained (so the
  analysis can be re-run without training again; `--fresh` turns that off).
- `analyse_run`: test metrics before and after temperature scaling (T on the paper's grid 0.1..10 minimising
  validation ECE-EM, fitted on the run's own validation logits from predictions.npz), train fit, AdaFocal's last
  per-bin state (E_val = C_val − A_val, γ).
- `summarise` / `print_table`: mean ± std over seeds, a text table in % with the paper's figures beside it.

Metrics in the JSON are fractions (keys say so); tables show %.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

import adacal  # noqa: E402

SHARED_DATA = ROOT.parent / "shared" / "data"
RESULTS_DIR = ROOT / "benchmarks" / "results"
PLOTS_DIR = RESULTS_DIR / "plots"

# benchmark name -> (adacal loss name, loss options)
LOSS_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "ce": ("ce", {}),
    "focal-3": ("focal", {"gamma": 3.0}),
    "flsd-53": ("flsd-53", {}),
    "adafocal": ("adafocal", {}),
    "brier": ("brier", {}),
    "ls-0.05": ("label-smoothing", {"alpha": 0.05}),
    "mmce": ("mmce", {}),
}
DISPLAY = {"ce": "CE", "focal-3": "FL-3", "flsd-53": "FLSD-53", "adafocal": "AdaFocal", "brier": "Brier",
           "ls-0.05": "LS-0.05", "mmce": "MMCE"}
METRICS = ("error", "nll", "ece_em", "ece_ew", "ece_debias", "ece_sweep_em", "ece_sweep_ew", "mce", "classwise_ece")
# AdaFocal γ-dynamics figure: five of the 15 bins, low to high confidence, to keep the PNG small (the JSON and the
# printed per-bin table have every bin; `adacal plot gamma RUN` draws all of them).
GAMMA_PLOT_BINS = (0, 4, 7, 10, 14)
# Options that must match for a finished run to be reused.
REUSE_KEYS = ("dataset", "model", "loss", "loss_options", "epochs", "batch_size", "lr", "milestones", "lr_decay",
              "momentum", "weight_decay", "optimizer", "seed", "train_subset", "val_size", "test_subset", "select",
              "update_every", "model_options")


def parse_losses(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in LOSS_SPECS:
            raise SystemExit(f"Error: unknown loss '{name}' (choices: {', '.join(LOSS_SPECS)}).")
    return names


def parse_ints(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(f"Error: expected {what} as comma-separated integers, got {text!r}.") from None
    if not values:
        raise SystemExit(f"Error: expected at least one value for {what}.")
    return values


def machine_info() -> dict[str, Any]:
    import torch

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "adacal": adacal.__version__,
        "load_average_at_start": None if load is None else [round(v, 2) for v in load],
    }


# ------------------------------------------------------------------------------------------------ training


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def _finished_run(folder: Path, wanted: dict[str, Any]) -> Path | None:
    """The newest finished run under `folder` whose options match `wanted` (REUSE_KEYS), else None."""
    if not folder.is_dir():
        return None
    for run in sorted((p for p in folder.iterdir() if p.is_dir()), reverse=True):
        if not ((run / "evaluate.json").is_file() and (run / "predictions.npz").is_file()):
            continue
        try:
            config = json.loads((run / "config.json").read_text())["config"]
        except (OSError, ValueError, KeyError):
            continue
        if all(_plain(config.get(k)) == _plain(wanted.get(k)) for k in REUSE_KEYS if k in wanted):
            return run
    return None


class EpochPrinter:
    """A progress listener printing one line per epoch (with AdaFocal's γ range) and the epoch time."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.epoch_seconds: list[float] = []

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event != "epoch_end":
            return
        record, seconds = info["record"], float(info["seconds"])
        self.epoch_seconds.append(seconds)
        train, val = record["train"], record["val"]
        line = (f"  [{self.label}] epoch {info['epoch']:>3}/{info['epochs']}  {seconds:5.1f}s  lr {record['lr']:.4g}  "
                f"train loss {train['loss']:.4f} acc {100 * train['accuracy']:5.1f}%  "
                f"val err {100 * val['error']:5.2f}% ECE-EM {100 * val['ece_em']:5.2f}%")
        updates = (record.get("adafocal") or {}).get("updates") or []
        if updates:
            gammas = updates[-1]["gammas"]
            line += f"  γ [{min(gammas):+.2f}, {max(gammas):+.2f}]"
        print(line, flush=True)


def train_or_reuse(config: Any, *, folder: Path, label: str, reuse: bool) -> tuple[Path, dict[str, Any]]:
    """Train `config` (a TrainConfig) into `folder`, or reuse a finished run there with the same options.

    Returns (run folder, timing dict)."""
    from adacal.training import resolve_config, train

    resolved = resolve_config(config)
    wanted = resolved.to_dict()
    if reuse:
        found = _finished_run(folder, wanted)
        if found is not None:
            seconds = _recorded_seconds(found)
            print(f"  [{label}] reusing finished run {found}", flush=True)
            return found, {"reused": True, **seconds}
    folder.mkdir(parents=True, exist_ok=True)
    config.out = str(folder)
    printer = EpochPrinter(label)
    started = time.perf_counter()
    result = train(config, progress=printer)
    wall = time.perf_counter() - started
    timing = {
        "reused": False,
        "train_wall_seconds": round(wall, 2),
        "train_loop_seconds": round(float(result.seconds), 2),
        "epoch_seconds_median": round(statistics.median(printer.epoch_seconds), 2) if printer.epoch_seconds else None,
        "epoch_seconds": [round(s, 2) for s in printer.epoch_seconds],
    }
    (Path(result.run_dir) / "benchmark_timing.json").write_text(json.dumps(timing))
    return Path(result.run_dir), timing


def _recorded_seconds(run: Path) -> dict[str, Any]:
    path = run / "benchmark_timing.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            data.pop("reused", None)
            return data
        except ValueError:
            pass
    return {}


# ------------------------------------------------------------------------------------------------ analysis


def read_history(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines() if line.strip()]


def analyse_run(run: Path) -> dict[str, Any]:
    """Test metrics pre/post temperature scaling (T fitted on the run's validation logits, paper's ECE-EM grid)."""
    from adacal.calibrators import build_calibrator
    from adacal.metrics import compute_metrics
    from adacal.predictions import load_split_predictions

    preds = load_split_predictions(run / "predictions.npz")
    val, test = preds["val"], preds["test"]
    calibrator = build_calibrator("temperature", objective="ece-em").fit(val.logits, val.labels)
    temperature = float(calibrator.temperature_)
    pre = compute_metrics(test.logits, test.labels)
    post = compute_metrics(calibrator.transform(test.logits), test.labels)
    val_pre = compute_metrics(val.logits, val.labels, names=["error", "ece_em"])
    history = read_history(run)
    last = history[-1]
    out: dict[str, Any] = {
        "run_dir": str(run),
        "n_val": int(val.labels.shape[0]),
        "n_test": int(test.labels.shape[0]),
        "temperature": temperature,
        "test_pre": {k: float(pre[k]) for k in METRICS if k in pre},
        "test_post": {k: float(post[k]) for k in METRICS if k in post},
        "val_pre": {k: float(v) for k, v in val_pre.items()},
        "final_train": {"loss": float(last["train"]["loss"]), "accuracy": float(last["train"]["accuracy"])},
        "mean_test_confidence_pre": float(_softmax(test.logits).max(axis=1).mean()),
        "curve": [
            {"epoch": int(r["epoch"]), "train_accuracy": float(r["train"]["accuracy"]),
             "val_error": float(r["val"]["error"]), "val_ece_em": float(r["val"]["ece_em"])}
            for r in history
        ],
    }
    updates = [u for r in history for u in ((r.get("adafocal") or {}).get("updates") or [])]
    if updates:
        final = updates[-1]
        conf, acc = np.asarray(final["val_confidence"], float), np.asarray(final["val_accuracy"], float)
        out["adafocal_final_bins"] = {
            "edges": [float(e) for e in final["edges"]],
            "gammas_after_update": [float(g) for g in final["gammas"]],
            "val_confidence": conf.tolist(),
            "val_accuracy": acc.tolist(),
            "e_val": (conf - acc).tolist(),
            "counts": [int(c) for c in final["counts"]],
        }
        out["adafocal_gamma_trace"] = [
            {"epoch": int(r["epoch"]), "gammas": [float(g) for g in r["adafocal"]["updates"][-1]["gammas"]]}
            for r in history if (r.get("adafocal") or {}).get("updates")
        ]
    return out


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------------------------------------ summaries


def _mean_std(values: list[float]) -> dict[str, Any]:
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return {"mean": None, "std": None, "n": 0}
    std = statistics.stdev(values) if len(values) > 1 else None
    return {"mean": statistics.fmean(values), "std": std, "n": len(values)}


def flat_figures(run: dict[str, Any]) -> dict[str, float | None]:
    """The per-run figures the tables show (fractions, T as is)."""
    figures: dict[str, float | None] = {}
    for phase in ("pre", "post"):
        for key in ("error", "ece_em", "ece_ew", "ece_debias", "ece_sweep_em", "nll"):
            figures[f"{key}_{phase}"] = run[f"test_{phase}"].get(key)
    figures["temperature"] = run["temperature"]
    ood = run.get("ood")
    if ood:
        figures["ood_auroc_pre"] = ood["entropy"]["pre"]["auroc"]
        figures["ood_auroc_post"] = ood["entropy"]["post"]["auroc"] if ood["entropy"]["post"] else None
    return figures


def summarise(runs: list[dict[str, Any]], losses: list[str]) -> dict[str, dict[str, Any]]:
    summary: dict[str, dict[str, Any]] = {}
    for loss in losses:
        chosen = [flat_figures(r) for r in runs if r["loss"] == loss]
        if not chosen:
            continue
        keys = chosen[0].keys()
        summary[loss] = {k: _mean_std([c[k] for c in chosen]) for k in keys}
    return summary


def _cell(stat: dict[str, Any] | None, scale: float = 100.0, digits: int = 2) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    text = f"{scale * stat['mean']:.{digits}f}"
    if stat.get("std") is not None:
        text += f" ± {scale * stat['std']:.{digits}f}"
    return text


def table_rows(summary: dict[str, dict[str, Any]], *, with_ood: bool) -> tuple[list[str], list[list[str]]]:
    header = ["loss", "error", "ECE-EM", "ECE-EW", "ECE-debias", "ECE-sweep-EM", "T", "ECE-EM post-T", "ECE-EW post-T",
              "ECE-debias post-T", "ECE-sweep-EM post-T"]
    if with_ood:
        header += ["OOD AUROC", "OOD AUROC post-T"]
    rows = []
    for loss, s in summary.items():
        row = [DISPLAY.get(loss, loss), _cell(s["error_pre"]), _cell(s["ece_em_pre"]), _cell(s["ece_ew_pre"]),
               _cell(s["ece_debias_pre"]), _cell(s["ece_sweep_em_pre"]), _cell(s["temperature"], 1.0, 1),
               _cell(s["ece_em_post"]), _cell(s["ece_ew_post"]), _cell(s["ece_debias_post"]),
               _cell(s["ece_sweep_em_post"])]
        if with_ood:
            row += [_cell(s.get("ood_auroc_pre")), _cell(s.get("ood_auroc_post"))]
        rows.append(row)
    return header, rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join("{:>%d}" % w for w in widths)
    return "\n".join([fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows])


def per_bin_table(bins: dict[str, Any]) -> str:
    """AdaFocal's last update per validation bin: edges, C_val, A_val, E_val (%), γ after the update."""
    header = ["bin", "lower", "upper", "n", "C_val %", "A_val %", "E_val %", "γ"]
    rows = []
    edges = bins["edges"]
    for i, (c, a, e, g, n) in enumerate(zip(bins["val_confidence"], bins["val_accuracy"], bins["e_val"],
                                            bins["gammas_after_update"], bins["counts"])):
        rows.append([str(i), f"{edges[i]:.3f}", f"{edges[i + 1]:.3f}", str(n), f"{100 * c:.1f}", f"{100 * a:.1f}",
                     f"{100 * e:+.1f}", f"{g:+.2f}"])
    return text_table(header, rows)


# ------------------------------------------------------------------------------------------------ the paper's figures
# Ghosh, Schaaf & Gormley, NeurIPS 2022 (paper/adafocal.tex): means over 5 seeds, in %. ECE-EM post-T uses T fitted on
# validation ECE-EM (Table "adaptive ECE"); ECE-debias / ECE-sweep-EM post-T use T fitted on validation ECE-EW (their
# appendix tables); OOD is CIFAR-10 → CIFAR-10-C Gaussian 5 with ResNet-110 (no ResNet-50 entry), post-T with T on ECE-EW.

PAPER_CIFAR10_RESNET50: dict[str, dict[str, float]] = {
    "ce": {"error": 4.95, "ece_em_pre": 4.24, "ece_em_post": 2.11, "temperature": 2.52, "ece_debias_pre": 4.05,
           "ece_debias_post": 1.70, "ece_sweep_em_pre": 4.05, "ece_sweep_em_post": 1.43,
           "ood_auroc_pre": 77.53, "ood_auroc_post": 75.16},
    "focal-3": {"ood_auroc_pre": 80.11, "ood_auroc_post": 79.78},
    "flsd-53": {"error": 4.98, "ece_em_pre": 1.63, "ece_em_post": 1.42, "temperature": 1.08, "ece_debias_pre": 1.62,
                "ece_debias_post": 1.62, "ece_sweep_em_pre": 1.54, "ece_sweep_em_post": 1.54,
                "ood_auroc_pre": 82.06, "ood_auroc_post": 81.38},
    "adafocal": {"error": 5.30, "ece_em_pre": 0.66, "ece_em_post": 0.44, "temperature": 1.06, "ece_debias_pre": 0.47,
                 "ece_debias_post": 0.82, "ece_sweep_em_pre": 0.04, "ece_sweep_em_post": 0.70, "ood_auroc_pre": 84.96},
    "brier": {"error": 5.00, "ece_em_pre": 1.78, "ece_em_post": 1.24, "temperature": 1.11,
              "ood_auroc_pre": 84.09, "ood_auroc_post": 83.86},
    "ls-0.05": {"error": 5.29, "ece_em_pre": 3.86, "ece_em_post": 2.97, "temperature": 0.92,
                "ood_auroc_pre": 72.17, "ood_auroc_post": 72.18},
    "mmce": {"error": 4.99, "ece_em_pre": 4.52, "ece_em_post": 2.12, "temperature": 2.65,
             "ood_auroc_pre": 71.96, "ood_auroc_post": 70.02},
}
PAPER_20NG_CNN: dict[str, dict[str, float]] = {
    "ce": {"error": 26.68, "ece_em_pre": 18.57, "ece_em_post": 4.08, "temperature": 3.78, "ece_debias_pre": 18.36,
           "ece_debias_post": 5.23, "ece_sweep_em_pre": 18.38, "ece_sweep_em_post": 5.53},
    "flsd-53": {"error": 27.98, "ece_em_pre": 8.86, "ece_em_post": 2.13, "temperature": 1.58, "ece_debias_pre": 8.94,
                "ece_debias_post": 0.94, "ece_sweep_em_pre": 8.95, "ece_sweep_em_post": 2.13},
    "adafocal": {"error": 28.53, "ece_em_pre": 2.62, "ece_em_post": 2.46, "temperature": 1.10, "ece_debias_pre": 1.84,
                 "ece_debias_post": 1.84, "ece_sweep_em_pre": 2.22, "ece_sweep_em_post": 2.22},
    "brier": {"error": 27.06, "ece_em_pre": 13.52, "ece_em_post": 3.13, "temperature": 2.33},
    "ls-0.05": {"error": 26.03, "ece_em_pre": 4.36, "ece_em_post": 2.62, "temperature": 1.12},
    "mmce": {"error": 27.23, "ece_em_pre": 15.23, "ece_em_post": 6.45, "temperature": 2.21},
}
PAPER_COLUMNS = (("error", "error"), ("ece_em_pre", "ECE-EM"), ("ece_debias_pre", "ECE-debias"),
                 ("ece_sweep_em_pre", "ECE-sweep-EM"), ("temperature", "T"), ("ece_em_post", "ECE-EM post-T"),
                 ("ece_debias_post", "ECE-debias post-T*"), ("ece_sweep_em_post", "ECE-sweep-EM post-T*"),
                 ("ood_auroc_pre", "OOD AUROC†"), ("ood_auroc_post", "OOD AUROC post-T†"))


def paper_rows(paper: dict[str, dict[str, float]], losses: list[str], *, with_ood: bool) -> tuple[list[str], list[list[str]]]:
    columns = [c for c in PAPER_COLUMNS if with_ood or not c[0].startswith("ood")]
    header = ["loss (paper)"] + [title for _, title in columns]
    rows = []
    for loss in losses:
        figures = paper.get(loss)
        if not figures:
            continue
        rows.append([DISPLAY[loss]] + [("–" if key not in figures else
                                        f"{figures[key]:.2f}" if key != "temperature" else f"{figures[key]:.2f}")
                                       for key, _ in columns])
    return header, rows


def report_tables(runs: list[dict[str, Any]], losses: list[str], *, paper: dict[str, dict[str, float]],
                  paper_note: str, with_ood: bool) -> dict[str, Any]:
    """Print this run's table, the paper's beside it and AdaFocal's last per-bin state; return them for the JSON."""
    summary = summarise(runs, losses)
    header, rows = table_rows(summary, with_ood=with_ood)
    print("\nTest-set figures in % (mean ± std over seeds when more than one), this benchmark's CPU scale:")
    print(text_table(header, rows))
    paper_header, paper_table = paper_rows(paper, list(LOSS_SPECS), with_ood=with_ood)
    print("\n" + paper_note)
    print(text_table(paper_header, paper_table))
    for entry in runs:
        if entry["loss"] == "adafocal" and "adafocal_final_bins" in entry:
            print(f"\nAdaFocal seed {entry['seed']}: last γ-update per validation bin (E_val = C_val − A_val):")
            print(per_bin_table(entry["adafocal_final_bins"]))
    return {
        "summary": summary,
        "table_percent": {"header": header, "rows": rows},
        "paper_percent": {"note": paper_note, "figures": paper,
                          "table": {"header": paper_header, "rows": paper_table}},
    }


def write_results(path: str, kind: str, *, config: dict[str, Any], runs: list[dict[str, Any]],
                  tables: dict[str, Any], plots: dict[str, str], machine: dict[str, Any], started: float) -> None:
    """The benchmark's JSON report (atomic write), and the line that says where it went."""
    from adacal.reports import make_report, write_json

    total = time.perf_counter() - started
    write_json(path, make_report(kind, config=config, results={
        "units": "metrics are fractions (tables show %); nll in nats; temperature unitless",
        "runs": runs, **tables, "plots": plots, "machine": machine, "total_wall_seconds": round(total, 1),
    }))
    print(f"\nwrote {path} ({total / 60:.1f} min in all)")


def add_common_arguments(parser: Any, *, results: Path) -> None:
    """The options both quality benchmarks take: which seeds and losses, where data, runs, JSON and plots go."""
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    parser.add_argument("--losses", default="ce,focal-3,flsd-53,adafocal",
                        help=f"comma-separated, from {', '.join(LOSS_SPECS)}")
    parser.add_argument("--data-dir", default=str(SHARED_DATA))
    parser.add_argument("--out", default="/tmp/quality_runs", help="where the run folders go (outside the repo)")
    parser.add_argument("--results", default=str(results), help="the JSON report to write")
    parser.add_argument("--plots", default=str(PLOTS_DIR), help="folder for the PNG figures")
    parser.add_argument("--fresh", action="store_true", help="retrain even when a finished identical run exists")
    parser.add_argument("--threads", type=int, default=2)


def redirect_quick_outputs(args: Any, *, results: Path) -> None:
    """A smoke test writes nothing into the repository: runs, JSON and plots all go under <out>_quick."""
    args.out = args.out.rstrip("/") + "_quick"
    if args.results == str(results):
        args.results = str(Path(args.out) / f"{results.stem}_quick.json")
    if args.plots == str(PLOTS_DIR):
        args.plots = str(Path(args.out) / "plots")


def train_and_analyse(config: Any, *, name: str, seed: int, folder: Path, reuse: bool,
                      score_ood: Any = None) -> dict[str, Any]:
    """Train (or reuse) one (loss, seed) run, analyse it, print its headline; `score_ood(run_dir, T)` adds OOD."""
    label = f"{DISPLAY[name]} s{seed}"
    run_dir, timing = train_or_reuse(config, folder=folder, label=label, reuse=reuse)
    analysis_started = time.perf_counter()
    entry = {"loss": name, "seed": seed, **analyse_run(run_dir), "timing": timing}
    if score_ood is not None:
        entry["ood"] = score_ood(run_dir, entry["temperature"])
    entry["timing"]["analysis_seconds"] = round(time.perf_counter() - analysis_started, 2)
    figures = flat_figures(entry)
    line = (f"  [{label}] test error {100 * figures['error_pre']:.2f}%  ECE-EM {100 * figures['ece_em_pre']:.2f}% "
            f"→ {100 * figures['ece_em_post']:.2f}% at T={figures['temperature']:.1f}")
    if "ood_auroc_pre" in figures:
        post = figures["ood_auroc_post"]
        line += f"  OOD AUROC {100 * figures['ood_auroc_pre']:.2f}%" + ("" if post is None else f" → {100 * post:.2f}%")
    print(line, flush=True)
    return entry
