"""Figures drawn from arrays the core computes: reliability diagrams, AdaFocal's γ dynamics, training curves, ROC.

Every drawing function returns a `matplotlib.figure.Figure` (built without pyplot, so nothing global changes and no
display is needed) and `save_figure` writes it atomically as PNG, SVG or PDF. matplotlib is imported only inside the
functions, so importing adacal never pays for it. The same input gives the same bytes: fixed style, no timestamps in
SVG/PDF metadata, a fixed SVG hash salt.

Axes carry stable labels (`Axes.get_label()`) so callers and tests can find them: "reliability:<panel>",
"histogram:<panel>", "error:bin-<i>", "gamma:bin-<i>", "edges:bin-<i>", "confidence:bin-<i>", "curves:error",
"curves:ece_em", "roc".
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.errors import InputError
from adacal.metrics.binning import BinStatistics, equal_width_edges
from adacal.predictions import load_predictions
from adacal.reports import atomic_write, read_report
from adacal.runs import (
    CALIBRATE_FILE,
    HISTORY_FILE,
    PREDICTIONS_FILE,
    is_run_folder,
    require_run_folder,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}

# Okabe & Ito (2008) colour-blind-safe palette, extended with Tol's olive, indigo and wine for the rarer losses.
# One colour per loss in every figure; black and grey are kept for reference lines.
LOSS_COLORS: dict[str, str] = {
    "ce": "#0072B2",  # blue
    "focal": "#56B4E9",  # sky blue
    "flsd-53": "#E69F00",  # orange
    "adafocal": "#D55E00",  # vermillion
    "calfocal": "#009E73",  # bluish green
    "inverse-focal": "#CC79A7",  # reddish purple
    "brier": "#999933",  # olive
    "mmce": "#332288",  # indigo
    "label-smoothing": "#882255",  # wine
}
DISPLAY_NAMES: dict[str, str] = {
    "ce": "CE",
    "focal": "Focal",
    "flsd-53": "FLSD-53",
    "adafocal": "AdaFocal",
    "calfocal": "CalFocal",
    "inverse-focal": "Inverse focal",
    "brier": "Brier",
    "mmce": "MMCE",
    "label-smoothing": "Label smoothing",
}
_SPARE_COLORS = ("#44AA99", "#117733", "#AA4499", "#DDAA33", "#6699CC", "#997700", "#EE99AA", "#555555")
_REFERENCE = "#222222"
_GAP_COLOR = "#C0392B"
_E_COLOR = "#0072B2"
_GAMMA_COLOR = "#D55E00"
_BAND_COLOR = "#9E9E9E"

_STYLE: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "figure.titlesize": 12,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "axes.spines.top": False,
    "lines.linewidth": 1.6,
    "legend.framealpha": 0.9,
    "hatch.linewidth": 0.8,
    "svg.hashsalt": "adacal",
    "svg.fonttype": "path",
    "pdf.fonttype": 42,
    "path.simplify": True,
}


# --------------------------------------------------------------------------------------------------- common helpers


def display_name(loss: str) -> str:
    """How figures name a loss ("flsd-53" → "FLSD-53"); unknown names are shown as given."""
    return DISPLAY_NAMES.get(_color_key(loss), str(loss))


def _color_key(name: str) -> str:
    return "-".join(str(name).strip().lower().split())


def loss_color(name: str) -> str:
    """The fixed colour of a loss (the same in every figure); unknown names get a stable spare colour."""
    key = _color_key(name)
    if key in LOSS_COLORS:
        return LOSS_COLORS[key]
    import zlib

    return _SPARE_COLORS[zlib.crc32(key.encode("utf-8")) % len(_SPARE_COLORS)]


def _colors_for(names: Sequence[str]) -> list[str]:
    """Colours for labels in order: known losses keep theirs, the rest take unused spare colours in turn."""
    keys = [_color_key(n) for n in names]
    taken = {LOSS_COLORS[k] for k in keys if k in LOSS_COLORS}
    spare = [c for c in _SPARE_COLORS + tuple(LOSS_COLORS.values()) if c not in taken]
    colors: list[str] = []
    by_name: dict[str, str] = {}
    for key in keys:
        if key in LOSS_COLORS:
            colors.append(LOSS_COLORS[key])
        else:
            if key not in by_name:
                by_name[key] = spare.pop(0) if spare else loss_color(key)
            colors.append(by_name[key])
    return colors


@contextlib.contextmanager
def _style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        yield


def _new_figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def figure_format(path: str | os.PathLike) -> str:
    """The file format named by `path`'s extension (png, svg or pdf)."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        found = f"'{suffix}'" if suffix else "no extension"
        raise InputError(f"Expected the output file {path} to end in .png, .svg or .pdf, got {found}.")
    return FORMATS[suffix]


def check_dpi(dpi: Any) -> int:
    if isinstance(dpi, bool) or not isinstance(dpi, (int, np.integer)) or not 10 <= dpi <= 2400:
        raise InputError(f"Expected --dpi to be an integer between 10 and 2400, got {dpi!r}.")
    return int(dpi)


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = 150) -> Path:
    """Write `fig` to `path` (format from the extension) atomically, with no timestamps: same figure, same bytes."""
    fmt = figure_format(path)
    dpi = check_dpi(dpi)
    metadata: dict[str, Any] = {
        "png": {"Software": "adacal"},
        "svg": {"Date": None, "Creator": "adacal"},
        "pdf": {"CreationDate": None, "ModDate": None, "Creator": "adacal", "Producer": "adacal"},
    }[fmt]

    def write(handle: Any) -> None:
        with _style():
            fig.savefig(handle, format=fmt, dpi=dpi, metadata=metadata, facecolor="white")

    return atomic_write(path, write, binary=True)


def _finite(values: Any) -> np.ndarray:
    """Floats from JSON lists where null stands for a non-finite value."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _percent(axis: Any) -> None:
    """Show a probability axis (data kept as fractions, as the metrics return them) in % without a per-tick sign;
    the axis label carries the unit."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(_percent_tick))


def _percent_tick(value: float, _position: Any = None) -> str:
    """A fraction as a percentage with only the digits it needs: 0.2 → "20", 0.975 → "97.5"."""
    return "0" if abs(value) < 1e-12 else f"{100.0 * value:.6g}"


def _title(fig: Figure, title: str | None) -> None:
    if title:
        fig.suptitle(title, fontweight="bold")


# --------------------------------------------------------------------------------------------- reliability diagram


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


# --------------------------------------------------------------------------------------------- history extraction


def load_history(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The per-epoch records of a run's history.jsonl (one JSON object per line, blank lines skipped)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"Expected a training history at {path}, but it does not exist.")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise InputError(f"Expected line {number} of {path} to be a JSON object, but it could not be parsed.") from None
        if not isinstance(record, dict) or "epoch" not in record:
            raise InputError(f"Expected line {number} of {path} to be an epoch record with an 'epoch' key.")
        records.append(record)
    if not records:
        raise InputError(f"Expected {path} to hold at least one epoch record, but it is empty.")
    return records


@dataclass(frozen=True)
class AdaFocalSeries:
    """AdaFocal's per-validation-bin state over training, stacked from history records.

    `update_epochs` (U,) places every γ-update on the epoch axis (several updates in epoch k sit at k − 1 + j/u);
    `edges` (U, M + 1), `gammas`, `val_confidence`, `val_accuracy`, `counts` (U, M) are the update records;
    `train_epochs` (E,), `train_confidence`, `train_counts` (E, M) are C_train per epoch (absent → empty).
    """

    update_epochs: np.ndarray
    edges: np.ndarray
    gammas: np.ndarray
    val_confidence: np.ndarray
    val_accuracy: np.ndarray
    counts: np.ndarray
    train_epochs: np.ndarray
    train_confidence: np.ndarray
    train_counts: np.ndarray

    @property
    def n_bins(self) -> int:
        return int(self.gammas.shape[1])

    @property
    def calibration_error(self) -> np.ndarray:
        """E_val,i = C_val,i − A_val,i per update and bin (NaN for bins with no validation sample)."""
        error = self.val_confidence - self.val_accuracy
        return np.where(self.counts > 0, error, np.nan)


def _stack(rows: list[Any], width: int, what: str) -> np.ndarray:
    array = np.full((len(rows), width), np.nan)
    for r, row in enumerate(rows):
        values = _finite(row)
        if values.size != width:
            raise InputError(f"Expected every AdaFocal {what} in the history to have {width} entries, got {values.size}.")
        array[r] = values
    return array


def adafocal_series(history: Sequence[Mapping[str, Any]]) -> AdaFocalSeries:
    """Stack the "adafocal" entries of a training history; a history without them is an InputError."""
    epochs, updates, train_epochs, train_rows = [], [], [], []
    for record in history:
        block = record.get("adafocal")
        if not isinstance(block, Mapping):
            continue
        epoch = float(record["epoch"])
        records = list(block.get("updates") or [])
        for j, update in enumerate(records, start=1):
            epochs.append(epoch - 1.0 + j / len(records))
            updates.append(update)
        if block.get("train_confidence") is not None:
            train_epochs.append(epoch)
            train_rows.append((block["train_confidence"], block.get("train_counts")))
    if not updates:
        raise InputError("Expected the training history to hold AdaFocal γ-updates (an 'adafocal' entry), found none.")
    try:
        m = len(updates[0]["gammas"])
        gammas = _stack([u["gammas"] for u in updates], m, "gammas")
        edges = _stack([u["edges"] for u in updates], m + 1, "edges")
        confidence = _stack([u["val_confidence"] for u in updates], m, "val_confidence")
        accuracy = _stack([u["val_accuracy"] for u in updates], m, "val_accuracy")
        counts = _stack([u.get("counts", [1] * m) for u in updates], m, "counts")
    except (KeyError, TypeError) as exc:
        raise InputError(f"Expected every AdaFocal update record to hold edges, gammas, val_confidence, val_accuracy; "
                         f"missing {exc}.") from None
    train_confidence = _stack([row[0] for row in train_rows], m, "train_confidence")
    train_counts = _stack([row[1] if row[1] is not None else [1] * m for row in train_rows], m, "train_counts")
    return AdaFocalSeries(
        update_epochs=np.asarray(epochs, dtype=np.float64),
        edges=edges,
        gammas=gammas,
        val_confidence=confidence,
        val_accuracy=accuracy,
        counts=counts,
        train_epochs=np.asarray(train_epochs, dtype=np.float64),
        train_confidence=train_confidence,
        train_counts=train_counts,
    )


def check_bins(bins: Sequence[int] | None, n_bins: int) -> list[int]:
    """The bins to draw: all when None; each must be an index in [0, n_bins)."""
    if bins is None:
        return list(range(n_bins))
    chosen = []
    for b in bins:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 0 <= b < n_bins:
            raise InputError(f"Expected --bins to be bin indices in [0, {n_bins - 1}], got {b!r}.")
        if int(b) not in chosen:
            chosen.append(int(b))
    if not chosen:
        raise InputError("Expected --bins to name at least one bin, got none.")
    return chosen


def _panel_grid(fig: Figure, n: int, rows_per_panel: list[float], max_cols: int = 5) -> list[list[Any]]:
    """Gridspec cells for n panels, each split vertically in the given height ratios."""
    ncols = min(n, max_cols)
    nrows = math.ceil(n / ncols)
    outer = fig.add_gridspec(nrows, ncols)
    cells = []
    for k in range(n):
        inner = outer[k // ncols, k % ncols].subgridspec(len(rows_per_panel), 1, height_ratios=rows_per_panel,
                                                         hspace=0.05)
        cells.append([inner[r, 0] for r in range(len(rows_per_panel))])
    return cells


def _panel_size(n: int, max_cols: int = 5) -> tuple[int, int]:
    ncols = min(n, max_cols)
    return ncols, math.ceil(n / ncols)


def _marker(n_points: int) -> dict[str, Any]:
    return {"marker": "o", "markersize": 2.8} if n_points <= 20 else {}


def gamma_dynamics(
    history: Sequence[Mapping[str, Any]],
    bins: Sequence[int] | None = None,
    *,
    title: str | None = None,
) -> Figure:
    """AdaFocal's dynamics per validation bin (the paper's figure 5): a panel per bin with, stacked on one epoch axis,
    E_val,i = C_val,i − A_val,i (%, zero line dashed), γ_t (a dotted zero line where it goes negative: inverse focal)
    and the bin's boundaries as a shaded band."""
    series = adafocal_series(history)
    chosen = check_bins(bins, series.n_bins)
    x = series.update_epochs
    error = 100.0 * series.calibration_error
    ncols, nrows = _panel_size(len(chosen))
    with _style():
        fig = _new_figure(3.2 * ncols + 0.3, 3.7 * nrows + 0.5)
        fig.get_layout_engine().set(hspace=0.0, h_pad=0.03)
        cells = _panel_grid(fig, len(chosen), [1.9, 1.3, 1.0])
        first = None
        handles: dict[str, Any] = {}
        for k, b in enumerate(chosen):
            ax = fig.add_subplot(cells[k][0], sharex=first, label=f"error:bin-{b}")
            first = first or ax
            gamma_ax = fig.add_subplot(cells[k][1], sharex=first, label=f"gamma:bin-{b}")
            edge_ax = fig.add_subplot(cells[k][2], sharex=first, label=f"edges:bin-{b}")
            ax.axhline(0.0, color=_REFERENCE, linestyle="--", linewidth=0.9, label="E = 0", zorder=1)
            ax.plot(x, error[:, b], color=_E_COLOR, label=r"$E_{val,i} = C_{val,i} - A_{val,i}$", zorder=3,
                    **_marker(x.size))
            ax.set_title(f"Bin {b}")
            gammas = series.gammas[:, b]
            gamma_ax.plot(x, gammas, color=_GAMMA_COLOR, linestyle="-", label=r"$\gamma_t$", zorder=3,
                          **_marker(x.size))
            if np.nanmin(gammas) < 0:
                gamma_ax.axhline(0.0, color=_BAND_COLOR, linestyle=":", linewidth=1.2, zorder=1,
                                 label=r"$\gamma = 0$ (below: inverse focal)")
            lower, upper = series.edges[:, b], series.edges[:, b + 1]
            edge_ax.fill_between(x, lower, upper, color=_BAND_COLOR, alpha=0.45, linewidth=0, label="Bin boundaries")
            edge_ax.plot(x, lower, color=_BAND_COLOR, linewidth=0.9)
            edge_ax.plot(x, upper, color=_BAND_COLOR, linewidth=0.9)
            _percent(edge_ax.yaxis)
            for panel in (ax, gamma_ax, edge_ax):
                handles.update((label, h) for h, label in zip(*panel.get_legend_handles_labels()))
            if k % ncols == 0:
                ax.set_ylabel(r"$E_{val}$ (%)")
                gamma_ax.set_ylabel(r"$\gamma_t$")
                edge_ax.set_ylabel("Bin edges (%)")
            for panel in (ax, gamma_ax):
                panel.tick_params(axis="x", labelbottom=False)
            if k >= len(chosen) - ncols:
                edge_ax.set_xlabel("Epoch")
            else:
                edge_ax.tick_params(labelbottom=False)
        order = [r"$E_{val,i} = C_{val,i} - A_{val,i}$", "E = 0", r"$\gamma_t$", r"$\gamma = 0$ (below: inverse focal)",
                 "Bin boundaries"]
        labels = [label for label in order if label in handles]
        fig.legend([handles[label] for label in labels], labels, loc="outside lower center", ncols=len(labels),
                   frameon=False)
        _title(fig, title or "AdaFocal: calibration error and γ per validation bin")
    return fig


def correspondence(
    history: Sequence[Mapping[str, Any]],
    bins: Sequence[int] | None = None,
    *,
    title: str | None = None,
) -> Figure:
    """C_train (solid) against C_val (dashed) and A_val (dotted) per validation bin over epochs (the paper's figure 2,
    common binning); the shaded band is the validation bin's boundaries. Bins without samples leave a gap.

    Every series sits at the epoch it was measured in: C_train of epoch k over the training samples seen during
    epoch k (binned by the boundaries the previous γ-update set), C_val and A_val at the γ-update ending epoch k."""
    series = adafocal_series(history)
    if series.train_epochs.size == 0:
        raise InputError("Expected the training history to hold AdaFocal's train_confidence (C_train), found none.")
    chosen = check_bins(bins, series.n_bins)
    x_val = series.update_epochs
    x_train = series.train_epochs
    c_train = np.where(series.train_counts > 0, series.train_confidence, np.nan)
    c_val = np.where(series.counts > 0, series.val_confidence, np.nan)
    a_val = np.where(series.counts > 0, series.val_accuracy, np.nan)
    ncols, nrows = _panel_size(len(chosen))
    with _style():
        fig = _new_figure(3.2 * ncols + 0.3, 2.7 * nrows + 0.5)
        cells = _panel_grid(fig, len(chosen), [1.0])
        first = None
        for k, b in enumerate(chosen):
            ax = fig.add_subplot(cells[k][0], sharex=first, label=f"confidence:bin-{b}")
            first = first or ax
            ax.fill_between(x_val, series.edges[:, b], series.edges[:, b + 1], color=_BAND_COLOR, alpha=0.25,
                            linewidth=0, label="Validation-bin boundaries", zorder=1)
            ax.plot(x_train, c_train[:, b], color=_GAMMA_COLOR, linestyle="-", label=r"$C_{train}$", zorder=3,
                    **_marker(x_train.size))
            ax.plot(x_val, c_val[:, b], color=_E_COLOR, linestyle="--", label=r"$C_{val}$", zorder=4)
            ax.plot(x_val, a_val[:, b], color=_REFERENCE, linestyle=":", linewidth=1.8, label=r"$A_{val}$", zorder=4)
            ax.set_title(f"Bin {b}")
            _limit_to_lines(ax, c_train[:, b], c_val[:, b], a_val[:, b])
            _percent(ax.yaxis)
            if k % ncols == 0:
                ax.set_ylabel("Confidence / accuracy (%)")
            if k >= len(chosen) - ncols:
                ax.set_xlabel("Epoch")
            else:
                ax.tick_params(labelbottom=False)
        handles, labels = first.get_legend_handles_labels()
        order = [1, 2, 3, 0]
        fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center",
                   ncols=4, frameon=False)
        _title(fig, title or r"Correspondence of $C_{train}$ and $C_{val}$ per validation bin")
    return fig


def _limit_to_lines(ax: Axes, *series: np.ndarray) -> None:
    """Scale the y axis to the plotted series (not the shaded band, which may run from 0 or to 1)."""
    values = np.concatenate([np.asarray(s, dtype=np.float64) for s in series])
    values = values[np.isfinite(values)]
    if values.size == 0:
        return
    low, high = float(values.min()), float(values.max())
    pad = max(0.08 * (high - low), 0.005)
    ax.set_ylim(max(0.0, low - pad), min(1.0 + pad / 2, high + pad))


# ------------------------------------------------------------------------------------------------- training curves


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
        fig.legend(handles, legend_labels, loc="outside lower center", ncols=min(len(handles), 3), frameon=False)
        _title(fig, title)
    return fig


# ------------------------------------------------------------------------------------------------------- ROC curves


@dataclass(frozen=True)
class RocInput:
    """One OOD report's results (the "results" of ood.json) and how to label it."""

    label: str
    results: Mapping[str, Any]
    loss: str | None = None


def _roc_block(results: Mapping[str, Any], score: str, label: str) -> Mapping[str, Any]:
    scores = results.get("scores")
    if not isinstance(scores, Mapping) or not scores:
        raise InputError(f"Expected the OOD report for {label} to hold results.scores, found none.")
    if score not in scores:
        raise InputError(f"Expected OOD score '{score}' in the report for {label}; it has: {', '.join(sorted(scores))}.")
    return scores[score]


def _repeat_markers(colors: Sequence[str]) -> list[dict[str, Any]]:
    """Markers that tell apart curves sharing a colour (the same loss, e.g. two seeds): none for the first."""
    seen: dict[str, int] = {}
    markers = []
    for color in colors:
        k = seen.get(color, 0)
        seen[color] = k + 1
        shape = ("", "o", "s", "^", "D", "v")[k % 6]
        markers.append({"marker": shape, "markevery": 0.08, "markersize": 4.0, "markerfacecolor": "white"}
                       if shape else {})
    return markers


def roc_curves(
    reports: Sequence[RocInput | tuple[str, Mapping[str, Any]]],
    *,
    score: str = "entropy",
    title: str | None = None,
) -> Figure:
    """ROC curves (in- vs out-of-distribution; OOD is the positive class) before (solid) and after (dashed)
    temperature scaling, AUROC (%) in the legend, one colour per report."""
    items = [r if isinstance(r, RocInput) else RocInput(*r) for r in reports]
    if not items:
        raise InputError("Expected at least one OOD report to draw ROC curves for, got none.")
    blocks = [_roc_block(item.results, score, item.label) for item in items]
    colors = _colors_for([item.loss or item.label for item in items])
    outs = [str((item.results.get("out") or {}).get("name", "?")) for item in items]
    ins = [str((item.results.get("in") or {}).get("name", "?")) for item in items]
    with _style():
        fig = _new_figure(5.2, 6.0)
        ax = fig.add_subplot(1, 1, 1, label="roc")
        ax.plot([0, 1], [0, 1], color="#888888", linestyle=":", linewidth=1.0, label="Chance (AUROC 50 %)")
        markers = _repeat_markers(colors)
        for item, block, color, out, marker in zip(items, blocks, colors, outs, markers):
            name = item.label if len(set(outs)) == 1 else f"{item.label} → {out}"
            temperature = item.results.get("temperature")
            for stage, style in (("pre", "-"), ("post", "--")):
                entry = block.get(stage)
                if not isinstance(entry, Mapping):
                    continue
                roc = entry.get("roc") or {}
                fpr, tpr = _finite(roc.get("fpr", [])), _finite(roc.get("tpr", []))
                if fpr.size == 0 or fpr.size != tpr.size:
                    raise InputError(f"Expected the OOD report for {item.label} to hold a {stage} ROC curve "
                                     "(results.scores.<score>.<stage>.roc.fpr/tpr of equal length).")
                stage_name = "pre-T" if stage == "pre" else (
                    f"post-T (T = {temperature:.2f})" if isinstance(temperature, (int, float)) else "post-T")
                auroc = entry.get("auroc")
                auroc_text = f"AUROC {100 * auroc:.2f} %" if isinstance(auroc, (int, float)) else "AUROC n/a"
                line = ax.plot(fpr, tpr, color=color, linestyle=style, **marker,
                               label=f"{name}, {stage_name}: {auroc_text}")[0]
                line.set_gid(f"roc:{item.label}:{stage}")
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.005)
        _percent(ax.xaxis)
        _percent(ax.yaxis)
        ax.set_xlabel("False positive rate (%): in-distribution flagged")
        ax.set_ylabel("True positive rate (%): OOD detected")
        shift = f"{ins[0]} → {outs[0]}" if len(set(ins)) == 1 and len(set(outs)) == 1 else "in vs out of distribution"
        ax.set_title(f"OOD detection, {shift} (score: {score})")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1, frameon=False)
        _title(fig, title)
    return fig


# ------------------------------------------------------------------------------ inputs read from adacal's own files
# What `adacal plot` reads: run folders, predictions files and reports. Each function checks everything it can
# before returning, so the CLI can fail with one line before drawing or writing anything.


@dataclass(frozen=True)
class RunInfo:
    """A run folder and what its config.json says about it."""

    root: Path
    config: Mapping[str, Any]

    def option(self, name: str, default: str = "?") -> str:
        value = self.config.get(name)
        return default if value is None else str(value)

    @property
    def loss(self) -> str:
        return self.option("loss")

    @property
    def history(self) -> list[dict[str, Any]]:
        return load_history(self.root / HISTORY_FILE)


def read_run(path: str | os.PathLike) -> RunInfo:
    """The run folder at (or holding) `path`, with its resolved training options."""
    run = require_run_folder(path)
    report = read_report(run.config, kind="train-config")
    config = report.get("config")
    if not isinstance(config, Mapping):
        raise InputError(f"Expected {run.config} to hold the training options under 'config'.")
    return RunInfo(root=run.root, config=config)


def read_adafocal_run(path: str | os.PathLike, command: str = "gamma") -> tuple[RunInfo, list[dict[str, Any]]]:
    """A run trained with AdaFocal and its history; any other loss is an InputError naming it."""
    info = read_run(path)
    if info.loss != "adafocal":
        raise InputError(f"{path} was trained with --loss {info.loss}; plot {command} needs an adafocal run.")
    return info, info.history


def default_output(path: str | os.PathLike, kind: str) -> Path:
    """Where a figure goes by default: `<run>/plots/<kind>.png` for a run folder, else `<stem>-<kind>.png` beside."""
    path = Path(path)
    if path.is_dir():
        return require_run_folder(path).plots / f"{kind}.png"
    return path.with_name(f"{path.stem}-{kind}.png")


def parse_bins(text: str | None) -> list[int] | None:
    """Bin indices from "0,7,14" (None or "" → all bins)."""
    if text is None or not text.strip():
        return None
    bins = []
    for token in text.split(","):
        token = token.strip()
        if not token.lstrip("-").isdigit():
            raise InputError(f"Expected --bins to be comma-separated bin indices such as 0,7,14, got {text!r}.")
        bins.append(int(token))
    return bins


def parse_labels(text: str | None, count: int) -> list[str] | None:
    """Panel labels from "a,b,c"; there must be one per input."""
    if text is None:
        return None
    labels = [label.strip() for label in text.split(",")]
    if len(labels) != count or not all(labels):
        raise InputError(f"Expected --labels to give {count} non-empty label(s) separated by commas, got {text!r}.")
    return labels


def _unique(labels: list[str], details: list[tuple[str, ...]]) -> list[str]:
    """Tell apart labels that would otherwise repeat: each input offers details in order of preference (model,
    dataset, seed, folder), and a repeated label gets the first detail that differs between all its inputs."""
    final = list(labels)
    for label in {label for label in labels if labels.count(label) > 1}:
        group = [i for i, other in enumerate(labels) if other == label]
        width = max(len(details[i]) for i in group)
        options = [[details[i][k] if k < len(details[i]) else "" for i in group] for k in range(width)]
        chosen = next((values for values in options if len(set(values)) == len(group) and all(values)), None)
        if chosen is None:
            continue
        for i, detail in zip(group, chosen):
            final[i] = f"{label} ({detail})"
    return final


def _run_details(info: RunInfo | None, path: Path) -> tuple[str, ...]:
    if info is None:
        return (path.parent.name, path.name, str(path))
    seed = info.config.get("seed")
    return (info.option("model", ""), info.option("dataset", ""), "" if seed is None else f"seed {seed}",
            info.root.name, path.name)


def _run_label(info: RunInfo) -> str:
    return display_name(info.loss) if info.loss != "?" else info.root.name


def _evaluate_bins(path: Path, binning: str, n_bins: int | None) -> tuple[BinStatistics, Any]:
    report = read_report(path, kind="evaluate")
    results = report["results"]
    bins = results.get("bins") if isinstance(results, Mapping) else None
    key = binning.replace("-", "_")
    if not isinstance(bins, Mapping) or not isinstance(bins.get(key), Mapping):
        raise InputError(f"Expected {path} to hold results.bins.{key} (bin statistics), found none.")

    def stats(entry: Mapping[str, Any]) -> BinStatistics:
        try:
            result = BinStatistics(
                edges=_finite(entry["edges"]),
                counts=np.asarray(entry["counts"], dtype=np.int64),
                mean_confidence=_finite(entry["mean_confidence"]),
                accuracy=_finite(entry["accuracy"]),
            )
        except (KeyError, TypeError, ValueError):
            raise InputError(f"Expected the bins in {path} to hold edges, counts, mean_confidence and accuracy.") from None
        m = result.counts.size
        if result.edges.size != m + 1 or result.mean_confidence.size != m or result.accuracy.size != m:
            raise InputError(f"Expected the bins in {path} to have M + 1 edges and M values per statistic.")
        return result

    chosen = stats(bins[key])
    if n_bins is not None and n_bins != chosen.n_bins:
        raise InputError(
            f"{path} holds {chosen.n_bins} {binning} bins; --n-bins {n_bins} needs a predictions file or run folder."
        )
    histogram = stats(bins["equal_width"]) if isinstance(bins.get("equal_width"), Mapping) else None
    return chosen, histogram


def _load_calibrator(path: Path, method: str) -> tuple[Any, str]:
    """The calibrator `method` ("best": the report's pick) stored in a calibrate.json, rebuilt from its dict."""
    if path.is_dir():
        path = require_run_folder(path).report(CALIBRATE_FILE)
    report = read_report(path, kind="calibrate")
    results = report["results"]
    stored = results.get("calibrators") if isinstance(results, Mapping) else None
    if not isinstance(stored, Mapping) or not stored:
        raise InputError(f"Expected {path} to hold fitted calibrators under results.calibrators, found none.")
    name = results.get("best") if method == "best" else method
    if name not in stored:
        raise InputError(f"Expected calibrator '{name}' in {path}; it has: {', '.join(sorted(stored))}.")
    entry = stored[name]
    state = entry.get("calibrator") if isinstance(entry, Mapping) else None
    if not isinstance(state, Mapping):
        raise InputError(f"Expected {path} to store calibrator '{name}' as a dict under 'calibrator'.")
    from adacal.calibrators import Calibrator

    params = entry.get("params") if isinstance(entry.get("params"), Mapping) else {}
    temperature = params.get("temperature")
    described = f"{name} (T = {temperature:.2f})" if isinstance(temperature, (int, float)) else str(name)
    return Calibrator.from_dict(dict(state)), described


def _panel_from_scores(label: str, probs: np.ndarray, labels: np.ndarray, binning: str, n_bins: int) -> ReliabilityPanel:
    from adacal.metrics.binning import bin_statistics

    confidences = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    stats = bin_statistics(confidences, correct, n_bins=n_bins, binning=binning)
    histogram = stats if binning == "equal-width" else bin_statistics(confidences, correct, n_bins=n_bins)
    return ReliabilityPanel(label=label, stats=stats, histogram=histogram)


def reliability_inputs(
    paths: Sequence[str | os.PathLike],
    *,
    binning: str = "equal-width",
    n_bins: int | None = None,
    split: str = "test",
    labels: Sequence[str] | None = None,
    calibrated: str | os.PathLike | None = None,
    method: str = "best",
) -> list[ReliabilityPanel]:
    """Reliability panels from run folders, predictions files (.npz/.pt) or evaluate.json reports.

    With `calibrated` (a calibrate.json) the one input must hold logits: its panel is followed by a panel of the
    same predictions after the stored calibrator (`method`, default the report's best).
    """
    from adacal.arrays import looks_like_probs, to_probs
    from adacal.metrics.binning import BINNINGS, check_n_bins

    if binning not in BINNINGS:
        raise InputError(f"Expected --binning to be one of {', '.join(BINNINGS)}, got {binning!r}.")
    if n_bins is not None and (isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1):
        raise InputError(f"Expected --n-bins to be a positive integer, got {n_bins!r}.")
    if split not in ("val", "test"):
        raise InputError(f"Expected --split to be val or test, got {split!r}.")
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("Expected at least one INPUT (run folder, predictions file or evaluate.json), got none.")
    if labels is not None and len(labels) != len(paths):
        raise InputError(f"Expected one label per INPUT ({len(paths)}), got {len(labels)}.")
    if calibrated is not None and len(paths) != 1:
        raise InputError(f"Expected exactly one INPUT with --calibrated (its calibrator fits one model), got {len(paths)}.")
    for path in paths:
        if not path.exists():
            raise InputError(f"Expected INPUT {path} to be a run folder, predictions file or evaluate.json, "
                             "but it does not exist.")
    bins = check_n_bins(15 if n_bins is None else n_bins)
    calibrator = _load_calibrator(Path(calibrated), method) if calibrated is not None else None

    panels: list[ReliabilityPanel] = []
    names, details = [], []
    for path in paths:
        run_root = path if path.is_dir() else (path.parent if is_run_folder(path.parent) else None)
        info = read_run(run_root) if run_root is not None else None
        names.append(_run_label(info) if info is not None else path.stem)
        details.append(_run_details(info, path))
        if path.is_dir():
            path = require_run_folder(path).predictions
            if not path.is_file():
                raise InputError(f"Expected the run folder {path.parent} to hold {PREDICTIONS_FILE}, but it does not.")
        if path.suffix.lower() == ".json":
            if calibrator is not None:
                raise InputError(f"--calibrated needs logits, but {path} holds only bin statistics; give predictions.")
            stats, histogram = _evaluate_bins(path, binning, n_bins)
            panels.append(ReliabilityPanel(label="", stats=stats, histogram=histogram))
            continue
        predictions = load_predictions(path, split=split)
        probs, _ = to_probs(predictions.logits)
        panels.append(_panel_from_scores("", probs, predictions.labels, binning, bins))
        if calibrator is not None:
            if looks_like_probs(predictions.logits):
                raise InputError(f"--calibrated needs logits, but {path} holds probabilities.")
            fitted, name = calibrator
            calibrated_probs = np.asarray(fitted.transform(predictions.logits), dtype=np.float64)
            panels.append(_panel_from_scores("", calibrated_probs, predictions.labels, binning, bins))
            names.append(f"{names[-1]} + {name}")
            details.append(details[-1])
    if labels is not None:
        final = list(labels) if calibrator is None else [labels[0], f"{labels[0]} + {calibrator[1]}"]
    else:
        final = _unique(names, details)
    colors = _colors_for([(panel_name.split(" + ")[0]) for panel_name in names])
    return [
        ReliabilityPanel(label=label, stats=panel.stats, histogram=panel.histogram, color=color)
        for label, panel, color in zip(final, panels, colors)
    ]


def curve_inputs(paths: Sequence[str | os.PathLike]) -> tuple[dict[str, list[list[dict[str, Any]]]], dict[str, str]]:
    """Histories grouped by (dataset, model, loss) — seeds of one setting form one group — and each group's loss."""
    if not paths:
        raise InputError("Expected at least one RUN folder, got none.")
    infos = [read_run(p) for p in paths]
    keys = [(i.option("dataset"), i.option("model"), i.loss) for i in infos]
    several_models = len({k[1] for k in keys}) > 1
    several_datasets = len({k[0] for k in keys}) > 1
    groups: dict[tuple[str, str, str], list[list[dict[str, Any]]]] = {}
    for info, key in zip(infos, keys):
        groups.setdefault(key, []).append(info.history)
    runs: dict[str, list[list[dict[str, Any]]]] = {}
    losses: dict[str, str] = {}
    for (dataset, model, loss), histories in groups.items():
        parts = [display_name(loss)] + ([model] if several_models else []) + ([dataset] if several_datasets else [])
        label = " · ".join(parts)
        runs[label] = histories
        losses[label] = loss
    return runs, losses


def roc_inputs(paths: Sequence[str | os.PathLike], labels: Sequence[str] | None = None) -> list[RocInput]:
    """OOD reports (ood.json, or run folders holding one), labelled by their run's loss where there is a run."""
    if not paths:
        raise InputError("Expected at least one ood.json, got none.")
    from adacal.ood import run_ood_reports

    paths = [report for path in map(Path, paths) for report in (run_ood_reports(path) if path.is_dir() else [path])]
    if labels is not None and len(labels) != len(paths):
        raise InputError(f"Expected one label per OOD_JSON ({len(paths)}), got {len(labels)}.")
    items, names, details, losses = [], [], [], []
    for path in paths:
        report = read_report(path, kind="ood")
        info = read_run(path.parent) if is_run_folder(path.parent) else None
        loss = info.loss if info is not None else str(report.get("config", {}).get("loss") or "")
        names.append(display_name(loss) if loss and loss != "?" else path.stem)
        details.append(_run_details(info, path))
        losses.append(loss or None)
        items.append(report["results"])
    final = list(labels) if labels is not None else _unique(names, details)
    return [RocInput(label=label, results=results, loss=loss) for label, results, loss in zip(final, items, losses)]
