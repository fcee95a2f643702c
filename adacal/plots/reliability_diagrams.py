"""Reliability diagrams: accuracy per confidence bin, the gap to the bin's mean confidence, and a histogram of samples.

`reliability_diagram` draws panels of precomputed `BinStatistics` side by side; axes carry the labels
"reliability:<panel>" and "histogram:<panel>".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.errors import InputError
from adacal.metrics.binning import BinStatistics, equal_width_edges
from adacal.plots.style import _GAP_COLOR, _REFERENCE, _colors_for, _new_figure, _percent, _style, _title

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class ReliabilityPanel:
    """One reliability diagram: bin statistics, an optional ECE (fraction; computed from the bins when None) and an
    optional confidence histogram (BinStatistics or (edges, counts); the panel's own bin counts when None)."""

    label: str
    stats: BinStatistics
    ece: float | None = None
    histogram: Any = None
    color: str | None = None


def expected_calibration_error(stats: BinStatistics) -> float:
    """ECE of the bins themselves: the count-weighted mean of |confidence − accuracy| (a fraction)."""
    return float(np.sum(stats.weights * np.abs(stats.gaps)))


def _binning_name(stats: BinStatistics) -> str:
    edges = np.asarray(stats.edges, dtype=np.float64)
    uniform = edges.size >= 2 and np.allclose(edges, equal_width_edges(edges.size - 1), atol=1e-12)
    return "ECE-EW" if uniform else "ECE-EM"


def _as_panel(panel: Any) -> ReliabilityPanel:
    if isinstance(panel, ReliabilityPanel):
        return panel
    if isinstance(panel, (tuple, list)) and 2 <= len(panel) <= 4 and isinstance(panel[1], BinStatistics):
        return ReliabilityPanel(*panel)
    raise InputError(
        "Expected each reliability panel to be a ReliabilityPanel or (label, BinStatistics[, ece[, histogram]]), "
        f"got {type(panel).__name__}."
    )


def _histogram(panel: ReliabilityPanel) -> tuple[np.ndarray, np.ndarray]:
    source = panel.stats if panel.histogram is None else panel.histogram
    if isinstance(source, BinStatistics):
        return np.asarray(source.edges, dtype=np.float64), np.asarray(source.counts, dtype=np.float64)
    edges, counts = source
    edges, counts = np.asarray(edges, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    if edges.ndim != 1 or counts.ndim != 1 or edges.size != counts.size + 1:
        raise InputError(
            f"Expected a histogram as edges (M + 1,) and counts (M,), got shapes {edges.shape} and {counts.shape}."
        )
    return edges, counts


def reliability_diagram(
    panels: Sequence[ReliabilityPanel | tuple[Any, ...]],
    *,
    title: str | None = None,
    ece_name: str | None = None,
) -> Figure:
    """Reliability diagrams side by side (shared axes), each with the gap to the mean confidence and a histogram.

    Bars are the bin accuracies (heights = `stats.accuracy` exactly), spanning each bin's edges; the hatched "Gap"
    goes from accuracy to the bin's mean confidence. The panel title shows the ECE in %. Beneath each diagram: the
    share of samples per confidence bin (%), with the overall accuracy and mean confidence marked.
    """
    panels = [_as_panel(p) for p in panels]
    if not panels:
        raise InputError("Expected at least one reliability panel, got none.")
    colors = _colors_for([p.label for p in panels])
    n = len(panels)
    with _style():
        fig = _new_figure(max(4.6, 3.3 * n + 0.4), 4.9 if n == 1 else 4.6)
        grid = fig.add_gridspec(2, n, height_ratios=[3.2, 1.0])
        first_main = first_hist = None
        for k, panel in enumerate(panels):
            ax = fig.add_subplot(grid[0, k], sharex=first_main, sharey=first_main, label=f"reliability:{k}")
            hist_ax = fig.add_subplot(grid[1, k], sharex=ax, sharey=first_hist, label=f"histogram:{k}")
            first_main = first_main or ax
            first_hist = first_hist or hist_ax
            color = panel.color or colors[k]
            _draw_reliability(ax, panel.stats, color)
            ece = expected_calibration_error(panel.stats) if panel.ece is None else float(panel.ece)
            name = ece_name or _binning_name(panel.stats)
            accuracy = _draw_histogram(hist_ax, panel, color)
            summary = f"{name} {100 * ece:.2f} %" + ("" if accuracy is None else f" · Acc. {100 * accuracy:.1f} %")
            ax.set_title(f"{panel.label}\n{summary}")
            if k == 0:
                ax.set_ylabel("Accuracy (%)")
                hist_ax.set_ylabel("Samples (%)")
            else:
                ax.tick_params(labelleft=False)
                hist_ax.tick_params(labelleft=False)
            ax.tick_params(labelbottom=False)
            hist_ax.set_xlabel("Confidence (%)")
        _percent(first_main.xaxis)
        _percent(first_main.yaxis)
        first_main.set_xlim(0.0, 1.0)
        first_main.set_ylim(0.0, 1.0)
        first_main.set_aspect("auto")
        first_hist.set_ylim(bottom=0.0)
        handles, labels = first_main.get_legend_handles_labels()
        hist_handles, hist_labels = first_hist.get_legend_handles_labels()
        order = [labels.index(name) for name in ("Accuracy", "Gap", "Mean confidence per bin", "Perfect calibration")]
        fig.legend([handles[i] for i in order] + hist_handles, [labels[i] for i in order] + hist_labels,
                   loc="outside lower center", ncols={1: 2, 2: 3}.get(n, 6), frameon=False)
        _title(fig, title)
    return fig


def _draw_reliability(ax: Axes, stats: BinStatistics, color: str) -> None:
    edges = np.asarray(stats.edges, dtype=np.float64)
    widths = np.diff(edges)
    accuracy = np.asarray(stats.accuracy, dtype=np.float64)
    confidence = np.asarray(stats.mean_confidence, dtype=np.float64)
    filled = np.asarray(stats.counts) > 0
    bars = ax.bar(
        edges[:-1], accuracy, width=widths, align="edge", color=color, alpha=0.85,
        edgecolor="white", linewidth=0.6, label="Accuracy", zorder=2,
    )
    low = np.minimum(accuracy, confidence)[filled]
    gap = np.abs(confidence - accuracy)[filled]
    gaps = ax.bar(
        edges[:-1][filled], gap, bottom=low, width=widths[filled], align="edge", facecolor=(1.0, 1.0, 1.0, 0.35),
        edgecolor=_GAP_COLOR, hatch="////", linewidth=0.8, label="Gap", zorder=3,
    )
    centres = (edges[:-1] + edges[1:]) / 2.0
    ax.plot(centres[filled], confidence[filled], linestyle="none", marker="_", markersize=7, markeredgewidth=1.6,
            color=_REFERENCE, zorder=4, label="Mean confidence per bin")
    ax.plot([0, 1], [0, 1], linestyle="--", color=_REFERENCE, linewidth=1.0, zorder=5, label="Perfect calibration")


def _draw_histogram(ax: Axes, panel: ReliabilityPanel, color: str) -> float | None:
    """Draw the share of samples per confidence bin; return the overall accuracy (None without samples)."""
    edges, counts = _histogram(panel)
    total = counts.sum()
    share = 100.0 * counts / total if total else np.zeros_like(counts)
    ax.bar(edges[:-1], share, width=np.diff(edges), align="edge", color=color, alpha=0.55, edgecolor="white",
           linewidth=0.4, zorder=2)
    stats = panel.stats
    if stats.counts.sum():
        weights = stats.weights
        accuracy = float(np.sum(weights * stats.accuracy))
        confidence = float(np.sum(weights * stats.mean_confidence))
        ax.axvline(accuracy, color=_REFERENCE, linestyle="-", linewidth=1.2, label="Overall accuracy")
        ax.axvline(confidence, color=_GAP_COLOR, linestyle=":", linewidth=1.5, label="Average confidence")
        return accuracy
    return None

