"""Conformal set sizes on CIFAR-10: does a better-calibrated model give smaller sets at the same coverage?

    python benchmarks/conformal_cifar10.py               # every quality run with its predictions kept; seconds
    python benchmarks/conformal_cifar10.py --seeds 0     # one seed
    python benchmarks/conformal_cifar10.py --markdown    # also print the table as Markdown (benchmarks/README.md)

Reads the predictions the CPU quality grid keeps beside each result file (benchmarks/quality_cifar10.py:
benchmarks/results/quality_runs/cifar10/<loss>-mean-seed<k>.predictions.npz — ResNet-20, 10,000 training images,
30 epochs, 5,000 validation and 10,000 test images; `--recover-predictions` retrains a run whose predictions were
not kept, and the record beside them then gives the figures of those predictions — another draw of the same cell
when they do not reproduce the committed result) and, for each row below, seed and score, fits split-conformal sets
on the 5,000 validation rows and measures them on the 10,000 test rows (`adacal.conformal.ConformalPredictor`,
`coverage_report`):

- rows: CE, CE + T (the CE logits divided by the temperature the quality run fitted on the same validation split:
  the paper's grid 0.1..10 minimising ECE-EM), FLSD-53, AdaFocal and AdaFocal γ0 = 0, λ = 3 (the quality runs'
  `adafocal-g0-lam3`); every loss with the same seeds shares its data split, initial weights and batch order, so
  differences are paired by seed;
- scores: THR (1 − p_y), APS (randomised, Romano et al. 2020) and RAPS (randomised, k_reg and λ selected on a
  seeded 30 % of the validation rows as Angelopoulos et al. 2021 do; the other 70 % calibrate);
- α = 0.05 and 0.1 (sets that hold the true class with probability ≥ 95 % and ≥ 90 %).

Per cell: the test coverage (with its Clopper–Pearson interval), mean and median set size, singleton and empty-set
rates, the worst class's coverage. The summary is mean ± std over seeds and the paired difference of each row's mean
set size from CE + T's, seed by seed. Written to benchmarks/results/conformal_cifar10.json and the figure
benchmarks/results/plots/conformal_cifar10_set_size.png. Predictions that disagree with their figures (the test
error they give is not the recorded one) are refused, not used.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

import quality_common as qc  # noqa: I001  (sets sys.path to the checkout)

RUNS = qc.RUNS_DIR / "cifar10"
RESULTS = qc.RESULTS_DIR / "conformal_cifar10.json"
FIGURE = qc.PLOTS_DIR / "conformal_cifar10_set_size.png"
# (row name, quality-grid loss, whether the run's fitted temperature divides its logits)
ROWS = (("CE", "ce", False), ("CE + T", "ce", True), ("FLSD-53", "flsd-53", False), ("AdaFocal", "adafocal", False),
        ("AdaFocal γ0=0 λ3", "adafocal-g0-lam3", False))
BASELINE = "CE + T"
SCORES = {"thr": {}, "aps": {"randomized": True}, "raps": {"k_reg": "auto", "lam": "auto", "randomized": True}}
ALPHAS = (0.05, 0.1)
ERROR_TOLERANCE = 1e-9  # the kept predictions must give the committed test error exactly (it is a count / 10,000)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--alphas", default=",".join(map(str, ALPHAS)), help="comma-separated α (default 0.05,0.1)")
    parser.add_argument("--runs-dir", default=str(RUNS), help="the quality runs' result files and predictions")
    parser.add_argument("--results", default=str(RESULTS), help="the summary JSON to write")
    parser.add_argument("--figure", default=str(FIGURE), help="the PNG figure to write ('' for none)")
    parser.add_argument("--markdown", action="store_true", help="also print the summary table as Markdown")
    parser.add_argument("--seed", type=int, default=0, help="seed of the randomised scores and RAPS's tuning split")
    return parser


def load_run(runs_dir: Path, loss: str, seed: int) -> dict[str, Any] | None:
    """The quality run's kept predictions and the figures they give (its result file's, or, for predictions of a
    retrained run, those of the record beside them: `figures` with `error` and `t_ece_em`), or None when either is
    missing; refused (SystemExit) when the predictions do not give those figures' test error."""
    from adacal.predictions import load_split_predictions

    result = qc.result_path(runs_dir, loss, "mean", seed)
    kept = qc.predictions_path(result)
    entry = qc.read_result(result)
    if entry is None or not kept.is_file():
        return None
    record = qc.read_predictions_record(result)
    figures = record["figures"] if record is not None else {
        "error": entry["test_pre"]["error"], "ece_em": entry["test_pre"].get("ece_em"),
        "t_ece_em": entry["ts_ece_em"]["temperature"],
        "ece_em_ts_ece_em": (entry["ts_ece_em"].get("test") or {}).get("ece_em")}
    splits = load_split_predictions(kept)
    val, test = splits.get("val"), splits.get("test")
    if val is None or test is None:
        raise SystemExit(f"Error: {kept} lacks its validation or test predictions.")
    error = float((np.asarray(test.logits).argmax(axis=1) != np.asarray(test.labels)).mean())
    recorded = qc.predictions_record_path(result).name if record is not None else result.name
    if abs(error - float(figures["error"])) > ERROR_TOLERANCE:
        raise SystemExit(f"Error: {kept} gives test error {error:.4f}, but {recorded} holds "
                         f"{figures['error']:.4f}: these predictions are not that run's.")
    return {"figures": figures, "val": val, "test": test, "file": qc.repo_relative(kept),
            "retrained": record is not None,
            "reproduces_result": None if record is None else bool(record.get("reproduces_result")),
            "result_error": float(entry["test_pre"]["error"])}


def score_cell(val_logits: np.ndarray, val_labels: np.ndarray, test_logits: np.ndarray, test_labels: np.ndarray, *,
               score: str, alpha: float, seed: int) -> dict[str, Any]:
    """One score at one α: the sets fitted on validation, measured on test (`coverage_report`, trimmed)."""
    from adacal.conformal import ConformalPredictor, coverage_report

    predictor = ConformalPredictor(score, alpha=alpha, seed=seed, **SCORES[score])
    predictor.fit(val_logits, val_labels, scores_kind="logits")
    report = coverage_report(predictor.predict_sets(test_logits, scores_kind="logits"), test_labels)
    kept = {key: report[key] for key in ("n", "coverage", "coverage_interval", "mean_set_size", "median_set_size",
                                         "singleton_rate", "empty_rate", "size_distribution")}
    kept["worst_class"] = report["worst_class"]
    kept["quantile"] = float(predictor.quantile_)
    if predictor.tuning_ is not None:
        kept["raps"] = {"k_reg": predictor.tuning_["k_reg"], "lam": predictor.tuning_["lam"]}
    return kept


def summarise(cells: list[dict[str, Any]], rows: list[str], alphas: list[float]) -> list[dict[str, Any]]:
    """Mean ± std over seeds per (row, score, α) of the coverage and set sizes, and the paired difference of the mean
    set size from the baseline row's (same seed, score and α)."""
    from quality_summary import mean_std

    def find(row: str, score: str, alpha: float, seed: int) -> dict[str, Any] | None:
        return next((c for c in cells if (c["row"], c["score"], c["alpha"], c["seed"]) == (row, score, alpha, seed)),
                    None)

    summary = []
    for alpha in alphas:
        for score in SCORES:
            for row in rows:
                mine = sorted((c for c in cells if (c["row"], c["score"], c["alpha"]) == (row, score, alpha)),
                              key=lambda c: c["seed"])
                if not mine:
                    continue
                paired = [c["mean_set_size"] - base["mean_set_size"] for c in mine
                          if (base := find(BASELINE, score, alpha, c["seed"])) is not None]
                summary.append({
                    "row": row, "score": score, "alpha": alpha, "seeds": [c["seed"] for c in mine],
                    **{key: mean_std([c[key] for c in mine]) for key in
                       ("coverage", "mean_set_size", "median_set_size", "singleton_rate", "empty_rate")},
                    "worst_class_coverage": mean_std([c["worst_class"]["coverage"] for c in mine]),
                    "size_minus_baseline": mean_std(paired) if row != BASELINE else None,
                    "error": mean_std([c["test_error"] for c in mine]),
                })
    return summary


def _stat(stat: dict[str, Any] | None, scale: float = 1.0, digits: int = 2, signed: bool = False) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    mean = f"{scale * stat['mean']:+.{digits}f}" if signed else f"{scale * stat['mean']:.{digits}f}"
    return mean if stat.get("std") is None else f"{mean} ± {scale * stat['std']:.{digits}f}"


def table(summary: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["α", "score", "model", "test error %", "coverage %", "mean size", "Δ size vs CE + T", "singletons %",
              "worst class cov. %"]
    rows = [[f"{s['alpha']:g}", s["score"].upper(), s["row"], _stat(s["error"], 100), _stat(s["coverage"], 100),
             _stat(s["mean_set_size"], 1, 3), _stat(s["size_minus_baseline"], 1, 3, signed=True),
             _stat(s["singleton_rate"], 100, 1), _stat(s["worst_class_coverage"], 100, 1)] for s in summary]
    return header, rows


def draw(summary: list[dict[str, Any]], rows: list[str], alphas: list[float], path: Path) -> str:
    """Mean set size (± std over seeds) per model, one panel per α, one bar group per score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from adacal.writing import write_file

    figure, axes = plt.subplots(1, len(alphas), figsize=(5.2 * len(alphas), 3.6), squeeze=False)
    width = 0.8 / len(rows)
    for axis, alpha in zip(axes[0], alphas):
        for i, row in enumerate(rows):
            found = [next((s for s in summary if (s["row"], s["score"], s["alpha"]) == (row, score, alpha)), None)
                     for score in SCORES]
            means = [s["mean_set_size"]["mean"] if s else math.nan for s in found]
            stds = [(s["mean_set_size"]["std"] or 0.0) if s else 0.0 for s in found]
            axis.bar(np.arange(len(SCORES)) + (i - (len(rows) - 1) / 2) * width, means, width, yerr=stds, capsize=2,
                     label=row)
        axis.set_xticks(np.arange(len(SCORES)), [s.upper() for s in SCORES])
        axis.set_title(f"α = {alpha:g} (coverage ≥ {100 * (1 - alpha):g} %)")
        axis.set_ylabel("mean set size (test)")
        axis.set_ylim(bottom=1.0)
        axis.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.suptitle("CIFAR-10 ResNet-20 (10k train, 30 epochs): conformal set size, mean ± std over seeds", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, lambda handle: figure.savefig(handle, format="png", dpi=110), binary=True)
    plt.close(figure)
    return qc.repo_relative(path)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    seeds = qc.parse_ints(args.seeds, "--seeds")
    try:
        alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    except ValueError:
        raise SystemExit(f"Error: expected --alphas to be comma-separated numbers, got {args.alphas!r}.") from None
    if not alphas or not all(0 < a < 1 for a in alphas):
        raise SystemExit(f"Error: expected every α in (0, 1), got {args.alphas!r}.")
    runs_dir = Path(args.runs_dir)
    cells: list[dict[str, Any]] = []
    missing: list[str] = []
    sources: dict[str, dict[str, Any]] = {}
    for seed in seeds:
        for row, loss, scaled in ROWS:
            run = load_run(runs_dir, loss, seed)
            if run is None:
                missing.append(f"{row} seed {seed}")
                continue
            temperature = float(run["figures"]["t_ece_em"]) if scaled else 1.0
            val_logits = np.asarray(run["val"].logits, dtype=np.float64) / temperature
            test_logits = np.asarray(run["test"].logits, dtype=np.float64) / temperature
            error = float(run["figures"]["error"])
            sources[f"{loss}-seed{seed}"] = {"file": run["file"], "retrained": run["retrained"],
                                             "reproduces_result": run["reproduces_result"],
                                             "test_error": error, "result_test_error": run["result_error"],
                                             "ece_em": run["figures"].get("ece_em"),
                                             "ece_em_ts_ece_em": run["figures"].get("ece_em_ts_ece_em")}
            for alpha in alphas:
                for score in SCORES:
                    cell = score_cell(val_logits, run["val"].labels, test_logits, run["test"].labels, score=score,
                                      alpha=alpha, seed=args.seed)
                    cells.append({"row": row, "loss": loss, "seed": seed, "temperature": temperature, "score": score,
                                  "alpha": alpha, "test_error": error, **cell})
    rows = [row for row, _, _ in ROWS if any(c["row"] == row for c in cells)]
    print(f"Conformal sets on CIFAR-10 (ResNet-20 quality runs, {qc.repo_relative(runs_dir)}): "
          f"{len({(c['row'], c['seed']) for c in cells})} model(s) × seed(s) read"
          + (f"; not available yet ({len(missing)}): {', '.join(missing)}" if missing else ""), flush=True)
    if not cells:
        print("Nothing to measure: keep the quality runs' predictions first (python benchmarks/quality_cifar10.py "
              "--losses ce,flsd-53,adafocal,adafocal-g0-lam3 --arms mean --recover-predictions).")
        return 1
    summary = summarise(cells, rows, alphas)
    header, body = table(summary)
    print("\nTest-set coverage and set sizes, mean ± std over seeds (Δ size: paired by seed against CE + T):")
    print(qc.text_table(header, body))
    if args.markdown:
        print("\n" + qc.markdown_table(header, body))
    figure = draw(summary, rows, alphas, Path(args.figure)) if args.figure else None
    from adacal.reports import make_report, write_json

    write_json(args.results, make_report("benchmark-conformal-cifar10", config={
        "runs_dir": qc.repo_relative(runs_dir), "rows": [{"row": r, "loss": loss, "temperature": scaled}
                                                         for r, loss, scaled in ROWS],
        "scores": SCORES, "alphas": alphas, "seeds": seeds, "seed": args.seed, "baseline": BASELINE,
        "protocol": "split conformal: fitted on the quality run's 5,000 validation predictions, measured on its "
                    "10,000 test predictions; CE + T divides both by the run's grid temperature (validation "
                    "ECE-EM)",
        "argv": sys.argv[1:] if argv is None else list(argv)}, results={
        "summary": summary, "table": {"header": header, "rows": body}, "cells": cells, "missing": missing,
        "predictions": sources, "figure": figure}))
    print(f"\nwrote {qc.repo_relative(Path(args.results))}" + (f" and {figure}" if figure else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
