"""Training curves: error and ECE-EM (%) against epoch for several runs, seeds of one setting as mean ± std.

Axes carry the labels "curves:error" and "curves:ece_em".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.errors import InputError
from adacal.plots.style import _colors_for, _marker, _new_figure, _style, _title, plain

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
    from matplotlib.figure import Figure


_CURVE_METRICS = (("error", "error (%)"), ("ece_em", "ECE-EM (%)"))


@dataclass(frozen=True)
class CurveSummary:
    """A metric over epochs for one group of runs: the mean and (population, ddof=0) std across seeds."""

    epochs: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    n_runs: int


def _choose_split(runs: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]], split: str) -> str:
    if split not in ("auto", "val", "test"):
        raise InputError(f"Expected split to be one of auto, val, test, got {split!r}.")
    if split != "auto":
        return split
    histories = [h for group in runs.values() for h in group]
    has_test = all(any(isinstance(r.get("test"), Mapping) for r in h) for h in histories)
    return "test" if has_test else "val"


def summarize_curve(histories: Sequence[Sequence[Mapping[str, Any]]], split: str, metric: str) -> CurveSummary:
    """Mean and std (numpy, ddof=0) of `split.metric` across runs, over the epochs every run has."""
    per_run = []
    for history in histories:
        values = {}
        for record in history:
            block = record.get(split)
            if isinstance(block, Mapping) and metric in block:
                values[int(record["epoch"])] = np.nan if block[metric] is None else float(block[metric])
        per_run.append(values)
    common = sorted(set.intersection(*(set(v) for v in per_run))) if per_run else []
    if not common:
        raise InputError(f"Expected the training histories to record {split} {metric} for a common epoch, found none.")
    matrix = np.array([[v[e] for e in common] for v in per_run], dtype=np.float64)
    return CurveSummary(
        epochs=np.asarray(common, dtype=np.float64),
        mean=matrix.mean(axis=0),
        std=matrix.std(axis=0),
        n_runs=len(per_run),
    )


def _repeat_styles(colors: Sequence[str]) -> list[str]:
    """Line styles that tell apart groups sharing a colour (the same loss on different models)."""
    seen: dict[str, int] = {}
    styles = []
    for color in colors:
        styles.append(("-", "--", ":", "-.")[seen.get(color, 0) % 4])
        seen[color] = seen.get(color, 0) + 1
    return styles


def training_curves(
    runs: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]],
    *,
    split: str = "auto",
    losses: Mapping[str, str] | None = None,
    title: str | None = None,
) -> Figure:
    """Error and ECE-EM (%) against epoch for several runs overlaid; each label maps to the histories of its seeds,
    drawn as the mean with a ± std band when there are several. `losses` maps labels to loss names for colours."""
    if not runs:
        raise InputError("Expected at least one run to draw training curves for, got none.")
    split = _choose_split(runs, split)
    labels = list(runs)
    names = [(losses or {}).get(label, label) for label in labels]
    colors = _colors_for(names)
    styles = _repeat_styles(colors)
    split_name = {"val": "Validation", "test": "Test"}[split]
    with _style():
        fig = _new_figure(8.6, 3.6 + 0.2 * math.ceil(len(labels) / 3))
        axes = [fig.add_subplot(1, 2, i + 1, label=f"curves:{metric}") for i, (metric, _) in enumerate(_CURVE_METRICS)]
        for ax, (metric, unit) in zip(axes, _CURVE_METRICS):
            for label, color, style in zip(labels, colors, styles):
                curve = summarize_curve(runs[label], split, metric)
                legend = label if curve.n_runs == 1 else f"{label} (mean ± std, {curve.n_runs} seeds)"
                ax.plot(curve.epochs, 100.0 * curve.mean, color=color, linestyle=style, label=legend,
                        **_marker(curve.epochs.size))
                if curve.n_runs > 1:
                    band = ax.fill_between(curve.epochs, 100.0 * (curve.mean - curve.std),
                                           100.0 * (curve.mean + curve.std), color=color, alpha=0.2, linewidth=0)
                    band.set_gid(f"band:{label}")
            ax.set_xlabel("Epoch")
            ax.set_ylabel(f"{split_name} {unit}")
            ax.set_title(f"{split_name} {unit.replace(' (%)', '')}")
            ax.set_ylim(bottom=0.0)
        handles, legend_labels = axes[0].get_legend_handles_labels()
        legend = fig.legend(handles, legend_labels, loc="outside lower center", ncols=min(len(handles), 3),
                            frameon=False)
        plain(legend.get_texts())  # labels come from run options (dataset, model, loss names)
        _title(fig, title)
    return fig

