"""What the quality benchmarks make of a finished run folder: `analyse_run` (test metrics before and after temperature
scaling, T fitted on the run's own validation logits two ways — the paper's grid T ∈ {0.1, 0.2, …, 10} minimising
validation ECE-EM (`fit_temperature_grid`), and the T minimising validation NLL (`fit_temperature_nll`) — plus the
reliability bins, the compact training history and AdaFocal's last per-bin state), and `flat_figures`, the per-run
figures the tables show. What is computed here is described by `ANALYSIS_PROTOCOL` (quality_protocol.py), part of
every result's key: change the two together.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


METRICS = ("error", "nll", "brier", "ece_em", "ece_ew", "ece_debias", "ece_sweep_em", "ece_sweep_ew", "mce",
           "classwise_ece")
N_BINS = 15
# The paper's temperature grid (T = 0.1, 0.2, …, 10.0; the first minimum of validation ECE-EM wins).
T_GRID = np.round(np.arange(1, 101) * 0.1, 1)


# ------------------------------------------------------------------------------------------------ temperature


def fit_temperature_grid(logits: np.ndarray, labels: np.ndarray, *, n_bins: int = N_BINS,
                         grid: np.ndarray = T_GRID) -> tuple[float, float]:
    """The paper's fit: the T of `grid` with the lowest ECE-EM of softmax(logits / T) (first on ties).

    Returns (T, ECE-EM at T)."""
    from adacal.metrics import ece_em

    logits = np.asarray(logits, dtype=np.float64)
    scores = np.array([ece_em(logits / float(t), labels, n_bins=n_bins) for t in grid])
    best = int(np.argmin(scores))
    return float(grid[best]), float(scores[best])


def _nll_and_slope(logits: np.ndarray, labels: np.ndarray, beta: float) -> tuple[float, float]:
    """Mean NLL of softmax(β·logits) and its derivative in β: mean(E_p[z] − z_y)."""
    z = beta * logits
    z_max = z.max(axis=1, keepdims=True)
    e = np.exp(z - z_max)
    total = e.sum(axis=1)
    picked = logits[np.arange(len(labels)), labels]
    nll = float(np.mean(np.log(total) + z_max[:, 0] - beta * picked))
    slope = float(np.mean((e * logits).sum(axis=1) / total - picked))
    return nll, slope


def fit_temperature_nll(logits: np.ndarray, labels: np.ndarray, *, lower: float = 0.01,
                        upper: float = 100.0) -> tuple[float, float]:
    """The T in [lower, upper] minimising the validation NLL of softmax(logits / T). Returns (T, NLL at T).

    The NLL is convex in β = 1/T (a log-sum-exp of functions linear in β less a linear term), so its derivative in β
    is increasing: bisection on the sign of the derivative, in log β, finds the minimum to ~1e-12 relative."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    lo, hi = math.log(1.0 / upper), math.log(1.0 / lower)
    if _nll_and_slope(logits, labels, math.exp(lo))[1] >= 0:
        beta = math.exp(lo)
    elif _nll_and_slope(logits, labels, math.exp(hi))[1] <= 0:
        beta = math.exp(hi)
    else:
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if _nll_and_slope(logits, labels, math.exp(mid))[1] > 0:
                hi = mid
            else:
                lo = mid
        beta = math.exp(0.5 * (lo + hi))
    return 1.0 / beta, _nll_and_slope(logits, labels, beta)[0]


# ------------------------------------------------------------------------------------------------ analysis


def read_history(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines() if line.strip()]


def _reliability_bins(logits: np.ndarray, labels: np.ndarray) -> dict[str, dict[str, list[float]]]:
    from adacal.metrics.binning import bin_statistics

    probs = _softmax(logits)
    confidences = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    out = {}
    for binning in ("equal-width", "equal-mass"):
        stats = bin_statistics(confidences, correct, n_bins=N_BINS, binning=binning)
        out[binning] = {"edges": stats.edges.tolist(), "counts": [int(c) for c in stats.counts],
                        "mean_confidence": stats.mean_confidence.tolist(), "accuracy": stats.accuracy.tolist()}
    return out


def _compact_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per epoch: lr, train loss/accuracy, val (and test, when recorded) error and ECE-EM, AdaFocal's updates."""
    keep = ("error", "ece_em", "nll", "loss", "accuracy")
    out = []
    for record in history:
        entry: dict[str, Any] = {"epoch": int(record["epoch"]), "lr": record.get("lr")}
        for split in ("train", "val", "test"):
            block = record.get(split)
            if isinstance(block, dict):
                entry[split] = {k: block[k] for k in keep if k in block}
        block = record.get("adafocal")
        if isinstance(block, dict) and block.get("updates"):
            entry["adafocal"] = {"updates": [
                {k: u[k] for k in ("edges", "gammas", "val_confidence", "val_accuracy", "counts") if k in u}
                for u in block["updates"]]}
        out.append(entry)
    return out


def analyse_run(run: Path) -> dict[str, Any]:
    """Test metrics before and after temperature scaling (T by the ECE-EM grid and by NLL, on validation logits)."""
    from adacal.metrics import compute_metrics
    from adacal.predictions import load_split_predictions

    preds = load_split_predictions(run / "predictions.npz")
    val, test = preds["val"], preds["test"]
    val_logits, test_logits = np.asarray(val.logits, np.float64), np.asarray(test.logits, np.float64)
    pre = compute_metrics(test_logits, test.labels, names=list(METRICS))
    fits = {}
    t_grid, val_ece = fit_temperature_grid(val_logits, val.labels)
    t_nll, val_nll = fit_temperature_nll(val_logits, val.labels)
    for name, temperature, objective in (("ts_ece_em", t_grid, {"val_ece_em": val_ece}),
                                         ("ts_nll", t_nll, {"val_nll": val_nll})):
        post = compute_metrics(test_logits / temperature, test.labels, names=list(METRICS))
        fits[name] = {"temperature": temperature, **objective, "test": {k: float(post[k]) for k in METRICS}}
    fits["ts_ece_em"]["method"] = "grid T = 0.1..10 step 0.1, first minimum of validation ECE-EM (15 bins)"
    fits["ts_nll"]["method"] = "T in [0.01, 100] minimising validation NLL (bisection on its convex form in 1/T)"
    val_pre = compute_metrics(val_logits, val.labels, names=["error", "ece_em", "nll"])
    history = read_history(run)
    out: dict[str, Any] = {
        "n_val": int(val.labels.shape[0]),
        "n_test": int(test.labels.shape[0]),
        "test_pre": {k: float(pre[k]) for k in METRICS},
        **fits,
        "val_pre": {k: float(v) for k, v in val_pre.items()},
        "final_train": {"loss": float(history[-1]["train"]["loss"]),
                        "accuracy": float(history[-1]["train"]["accuracy"])},
        "mean_test_confidence_pre": float(_softmax(test_logits).max(axis=1).mean()),
        "reliability_test_pre": _reliability_bins(test_logits, test.labels),
        "history": _compact_history(history),
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
    return out


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def flat_figures(entry: dict[str, Any]) -> dict[str, float | None]:
    """The per-run figures the tables show (fractions; T as is): `<metric>` before temperature scaling,
    `<metric>_ts_ece_em` / `<metric>_ts_nll` after it, `t_ece_em` / `t_nll` the two temperatures."""
    figures: dict[str, float | None] = dict(entry["test_pre"])
    for fit in ("ts_ece_em", "ts_nll"):
        figures.update({f"{k}_{fit}": v for k, v in entry[fit]["test"].items()})
    figures["t_ece_em"] = entry["ts_ece_em"]["temperature"]
    figures["t_nll"] = entry["ts_nll"]["temperature"]
    ood = entry.get("ood")
    if ood:
        figures["ood_auroc"] = ood["entropy"]["pre"]["auroc"]
        figures["ood_auroc_ts_ece_em"] = ood["entropy"]["post"]["auroc"] if ood["entropy"]["post"] else None
    seconds = (entry.get("timing") or {}).get("train_wall_seconds")
    figures["train_seconds"] = float(seconds) if seconds is not None else None
    return figures
