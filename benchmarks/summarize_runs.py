"""Summarise adacal run folders: one row per (dataset, model, loss, protocol) with mean ± std over seeds, in %.

    python benchmarks/summarize_runs.py /path/to/runs                    # every run folder below, any depth
    python benchmarks/summarize_runs.py runs_a runs_b --markdown --json summary.json

Reads only what the commands wrote: config.json and evaluate.json (`adacal train`), calibrate.json (`adacal calibrate
RUN --method temperature --objective ece-em`, the paper's grid: T and test ECE after scaling) and any ood*.json (`adacal
ood ... --json RUN/ood-<set>.json`, keyed by the OOD set's name in the report: entropy AUROC before and after T). A
missing report gives "–". Used by benchmarks/paper.sh; works on the runs of benchmarks/quality_cifar10.py too, and on
the per-run result files the quality benchmarks commit
(benchmarks/results/quality_runs/<dataset>/<loss>-<arm>-seed<k>.json: T there is the paper's grid fit on validation
ECE-EM), which need no run folder.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from adacal.conventions import LOSS_OPTION_ALIASES

METRICS = (("error", "error"), ("ece_em", "ECE-EM"), ("ece_ew", "ECE-EW"), ("ece_debias", "ECE-debias"),
           ("ece_sweep_em", "ECE-sweep-EM"))


def find_runs(roots: list[Path]) -> list[Path]:
    runs: set[Path] = set()
    for root in roots:
        if (root / "config.json").is_file() and (root / "evaluate.json").is_file():
            runs.add(root.resolve())
        for config in root.rglob("config.json"):
            if (config.parent / "evaluate.json").is_file():
                runs.add(config.parent.resolve())
    return sorted(runs)


RESULT_SCHEMA = "adacal-quality-run/1"  # benchmarks/quality_common.py's per-run result files


def find_result_files(roots: list[Path]) -> list[Path]:
    found: set[Path] = set()
    for root in roots:
        for path in ([root] if root.is_file() else root.rglob("*-seed*.json")):
            if path.suffix == ".json" and (_read(path) or {}).get("schema") == RESULT_SCHEMA:
                found.add(path.resolve())
    return sorted(found)


def read_result_file(path: Path) -> dict[str, Any]:
    """A quality benchmark's result file in the shape `read_run` gives: figures before and after temperature scaling
    (T by the paper's grid on validation ECE-EM), OOD AUROC when scored."""
    data = _read(path) or {}
    options = _current_names(data.get("options") or {})
    fit = data.get("ts_ece_em") or {}
    figures: dict[str, float | None] = {}
    for key, _ in METRICS:
        figures[f"{key}_pre"] = (data.get("test_pre") or {}).get(key)
        figures[f"{key}_post"] = (fit.get("test") or {}).get(key)
    figures["temperature"] = fit.get("temperature")
    entropy = (data.get("ood") or {}).get("entropy")
    if entropy:
        figures["auroc_cifar10-c_pre"] = (entropy.get("pre") or {}).get("auroc")
        figures["auroc_cifar10-c_post"] = (entropy.get("post") or {}).get("auroc")
    arm = data.get("arm") or "mean"
    return {
        "run": str(path), "dataset": options.get("dataset"), "model": options.get("model"),
        "loss": loss_label(options) + ("" if arm == "mean" else f" [{arm}]"), "seed": options.get("seed"),
        "epochs": options.get("epochs"), "protocol": {**{key: options.get(key) for key in PROTOCOL_KEYS}, "arm": arm},
        "figures": figures,
    }


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def loss_label(config: dict[str, Any]) -> str:
    loss, options = str(config.get("loss")), config.get("loss_options") or {}
    if loss == "focal" and "gamma" in options:
        return f"focal-{options['gamma']:g}"
    if loss == "label-smoothing" and "alpha" in options:
        return f"ls-{options['alpha']:g}"
    extra = ",".join(f"{k}={v}" for k, v in sorted(options.items()))
    return f"{loss}({extra})" if extra else loss


def _current_names(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of `config` whose loss options use their current names (`n_bins`, which older config.json files and the
    result files' keys spell `num_bins`), so runs of the same options are grouped together."""
    options = config.get("loss_options") or {}
    return {**config, "loss_options": {LOSS_OPTION_ALIASES.get(k, k): v for k, v in options.items()}}


def read_run(run: Path) -> dict[str, Any]:
    config = _current_names((_read(run / "config.json") or {}).get("config", {}))
    evaluate = (_read(run / "evaluate.json") or {}).get("results", {})
    figures: dict[str, float | None] = {}
    metrics = evaluate.get("metrics", {})
    for key, _ in METRICS:
        figures[f"{key}_pre"] = metrics.get(key)
    calibrate = _read(run / "calibrate.json")
    entry = (((calibrate or {}).get("results") or {}).get("calibrators") or {}).get("temperature") or {}
    figures["temperature"] = (entry.get("params") or {}).get("temperature")
    for key, _ in METRICS:
        figures[f"{key}_post"] = (entry.get("test_post") or {}).get(key)
    for path in sorted(run.glob("ood*.json")):
        report = _read(path)
        results = (report or {}).get("results") or {}
        name = (results.get("out") or {}).get("name")
        entropy = (results.get("scores") or {}).get("entropy")
        if not name or not entropy:
            continue
        name = Path(str(name)).stem
        figures[f"auroc_{name}_pre"] = (entropy.get("pre") or {}).get("auroc")
        figures[f"auroc_{name}_post"] = (entropy.get("post") or {}).get("auroc")
    return {
        "run": str(run), "dataset": config.get("dataset"), "model": config.get("model"), "loss": loss_label(config),
        "seed": config.get("seed"), "epochs": config.get("epochs"),
        "protocol": {key: config.get(key) for key in PROTOCOL_KEYS}, "figures": figures,
    }


# Runs are averaged together only when every one of these options agrees (only the seed may differ).
PROTOCOL_KEYS = ("epochs", "batch_size", "lr", "milestones", "lr_decay", "momentum", "weight_decay", "optimizer",
                 "train_subset", "val_size", "test_subset", "update_every", "select", "loss_options", "model_options",
                 "preset", "amp", "grad_clip", "loss_reduction")


def setting(protocol: dict[str, Any]) -> str:
    """A short label of what differs most often between protocols: epochs, training subset, batch size."""
    train = protocol.get("train_subset") or "all"
    return f"{protocol.get('epochs')} ep, {train} train, batch {protocol.get('batch_size')}"


def _stat(values: list[Any]) -> dict[str, Any]:
    values = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        return {"mean": None, "std": None, "n": 0}
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else None,
            "n": len(values)}


def summarise(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (dataset, model, loss, protocol): runs that differ in anything but the seed are never averaged."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for run in runs:
        protocol = json.dumps(run["protocol"], sort_keys=True, default=str)
        groups.setdefault((str(run["dataset"]), str(run["model"]), run["loss"], protocol), []).append(run)
    rows = []
    for (dataset, model, loss, _), members in groups.items():
        keys = sorted({k for m in members for k in m["figures"]})
        rows.append({"dataset": dataset, "model": model, "loss": loss, "seeds": sorted(m["seed"] for m in members),
                     "epochs": sorted({m["epochs"] for m in members}), "setting": setting(members[0]["protocol"]),
                     "protocol": members[0]["protocol"],
                     "figures": {k: _stat([m["figures"].get(k) for m in members]) for k in keys}})
    return rows


def _cell(stat: dict[str, Any] | None, scale: float = 100.0, digits: int = 2) -> str:
    if not stat or stat["mean"] is None:
        return "–"
    text = f"{scale * stat['mean']:.{digits}f}"
    return text + (f" ± {scale * stat['std']:.{digits}f}" if stat["std"] is not None else "")


def table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    ood_sets = sorted({k[len("auroc_"):-len("_pre")] for r in rows for k in r["figures"]
                       if k.startswith("auroc_") and k.endswith("_pre")})
    header = ["dataset", "model", "loss", "seeds", "setting"] + [t for _, t in METRICS] + ["T", "ECE-EM post-T",
                                                                                         "ECE-EW post-T"]
    for name in ood_sets:
        header += [f"AUROC {name}", f"AUROC {name} post-T"]
    body = []
    for r in rows:
        f = r["figures"]
        line = [r["dataset"], r["model"], r["loss"], str(len(r["seeds"])), r["setting"]]
        line += [_cell(f.get(f"{k}_pre")) for k, _ in METRICS]
        line += [_cell(f.get("temperature"), 1.0), _cell(f.get("ece_em_post")), _cell(f.get("ece_ew_post"))]
        for name in ood_sets:
            line += [_cell(f.get(f"auroc_{name}_pre")), _cell(f.get(f"auroc_{name}_post"))]
        body.append(line)
    return header, body


def render(header: list[str], body: list[list[str]], *, markdown: bool) -> str:
    if markdown:
        return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                         + ["| " + " | ".join(row) + " |" for row in body])
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    fmt = "  ".join("{:>%d}" % w for w in widths)
    return "\n".join([fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in body])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", type=Path,
                        help="run folders, quality result files, or folders holding them (searched recursively)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--json", type=Path, help="also write the per-run figures and the summary here")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.roots if not r.exists()]
    if missing:
        print(f"Error: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    runs = [read_run(run) for run in find_runs(args.roots)]
    runs += [read_result_file(path) for path in find_result_files(args.roots)]
    if not runs:
        print(f"Error: no finished run folders (config.json + evaluate.json) or quality result files under "
              f"{', '.join(map(str, args.roots))}", file=sys.stderr)
        return 2
    rows = summarise(runs)
    header, body = table(rows)
    print(f"{len(runs)} run(s); test-set figures in % (mean ± std over seeds); T unitless; AUROC of softmax entropy")
    print(render(header, body, markdown=args.markdown))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.json.with_suffix(args.json.suffix + ".tmp")
        tmp.write_text(json.dumps({"runs": runs, "summary": rows}, indent=2))
        tmp.replace(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
