"""What a training run returns and reports: `TrainResult`, each epoch's validation metrics (`validation_metrics`) and
the evaluate.json written at the end (`run_evaluation_report`), the same report `adacal evaluate <run>` writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adacal.conventions import DEFAULT_N_BINS
from adacal.runs import RunFolder

VAL_METRICS = ("error", "nll", "ece_em", "ece_ew")


@dataclass
class TrainResult:
    """What `train` returns (also summarised on the command line)."""

    run_dir: Path
    epochs: int
    select: str
    selected_epoch: int
    test_metrics: dict[str, float]
    val_metrics: dict[str, float]
    best_epoch: int | None
    best_val_accuracy: float | None
    gammas: list[float] | None
    seconds: float
    resumed_from: int | None
    config: dict[str, Any] = field(default_factory=dict)
    rank: int = 0  # the process's rank under torchrun (only rank 0 writes files and reports)
    evaluate_report: dict[str, Any] = field(default_factory=dict)


def validation_metrics(logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """The metrics history.jsonl records per epoch (`VAL_METRICS`), as floats."""
    from adacal.metrics import compute_metrics

    metrics = compute_metrics(logits, labels, names=list(VAL_METRICS))
    return {name: float(metrics[name]) for name in VAL_METRICS}


def run_evaluation_report(logits: np.ndarray, labels: np.ndarray, *, run: RunFolder) -> dict[str, Any]:
    """The report `adacal evaluate <run>` writes: metrics of the test split read from the run's predictions.npz."""
    from adacal.evaluation import evaluation_report as build_report

    source = {"kind": "run", "path": str(run.root), "read": str(run.predictions), "source": "predictions.npz",
              "split": "test"}
    return build_report(logits, labels, n_bins=DEFAULT_N_BINS, input_path=run.predictions, source=source)


def report_metrics(report: dict[str, Any]) -> dict[str, float]:
    """The flat metric dict inside an evaluate report (fractions)."""
    results = report.get("results", {})
    metrics = results.get("metrics", results)
    return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


__all__ = ["TrainResult", "VAL_METRICS", "report_metrics", "run_evaluation_report", "validation_metrics"]
