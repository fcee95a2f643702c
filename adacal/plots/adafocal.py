"""AdaFocal's figures from a run's history: γ dynamics per validation bin (the paper's figure 5) and the
correspondence of C_train with C_val and A_val (figure 2).

Axes carry the labels "error:bin-<i>", "gamma:bin-<i>", "edges:bin-<i>" and "confidence:bin-<i>".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.errors import InputError
from adacal.plots.style import (
    BAND_COLOR,
    E_VAL_COLOR,
    GAMMA_COLOR,
    REFERENCE_COLOR,
    TITLE_MARGIN_PT,
    add_title,
    figure_style,
    floats_from_json,
    format_percent,
    isolated_markers,
    line_markers,
    new_figure,
    text_width,
    tick_whole_epochs,
    wrap_text,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


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
        values = floats_from_json(row)
        if values.size != width:
            raise InputError(f"Expected every AdaFocal {what} in the history to have {width} entries, got "
                             f"{values.size}.")
        array[r] = values
    return array


def adafocal_series(history: Sequence[Mapping[str, Any]]) -> AdaFocalSeries:
    """Stack the "adafocal" entries of a training history; a history without them is an InputError."""
    from adacal.losses.records import UPDATES_KEY, BinUpdate, TrainBinStatistics

    epochs, updates, train_epochs, train_rows = [], [], [], []
    from adacal.plots.curves import epoch_of

    if isinstance(history, (str, bytes, Mapping)) or not isinstance(history, Sequence):
        raise InputError(f"Expected a training history as a list of epoch records, got {type(history).__name__}.")
    for number, record in enumerate(history, start=1):
        epoch = float(epoch_of(record, number))
        block = record.get("adafocal")
        if not isinstance(block, Mapping):
            continue
        records = list(block.get(UPDATES_KEY) or [])
        for j, update in enumerate(records, start=1):
            epochs.append(epoch - 1.0 + j / len(records))
            updates.append(update)
        if block.get("train_confidence") is not None:
            train_epochs.append(epoch)
            train_rows.append(block)
    if not updates:
        raise InputError("Expected the training history to hold AdaFocal γ-updates (an 'adafocal' entry), found none.")
    try:
        m = len(updates[0]["gammas"])
        # a record written without counts counts every bin as filled
        typed = [BinUpdate.from_dict({"counts": [1] * m, **u}) for u in updates]
        gammas = _stack([u.gammas for u in typed], m, "gammas")
        edges = _stack([u.edges for u in typed], m + 1, "edges")
        confidence = _stack([u.val_confidence for u in typed], m, "val_confidence")
        accuracy = _stack([u.val_accuracy for u in typed], m, "val_accuracy")
        counts = _stack([u.counts for u in typed], m, "counts")
    except (KeyError, TypeError) as exc:
        raise InputError(f"Expected every AdaFocal update record to hold edges, gammas, val_confidence, val_accuracy; "
                         f"missing {exc}.") from None
    train = [TrainBinStatistics.from_dict({"train_counts": [1] * m, **{k: v for k, v in b.items() if v is not None}})
             for b in train_rows]
    train_confidence = _stack([t.train_confidence for t in train], m, "train_confidence")
    train_counts = _stack([t.train_counts for t in train], m, "train_counts")
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


# One panel per bin: a run trained with --n-bins 400 would draw 400 panels (minutes of matplotlib, unreadable).
# Without --bins, runs with more bins get this many, evenly spaced and said so in the title; more on request are
# refused.
MAX_BIN_PANELS = 30


def check_bins(bins: Sequence[int] | None, n_bins: int) -> list[int]:
    """The bins to draw: all when None (at most MAX_BIN_PANELS of them, evenly spaced from the first to the last);
    else the indices given, each in [0, n_bins), at most MAX_BIN_PANELS."""
    if bins is None:
        if n_bins <= MAX_BIN_PANELS:
            return list(range(n_bins))
        return sorted({int(round(i)) for i in np.linspace(0, n_bins - 1, MAX_BIN_PANELS)})
    if isinstance(bins, (str, bytes, Mapping)) or not isinstance(bins, (Sequence, np.ndarray)):
        raise InputError(f"Expected --bins to be a list of bin indices such as [0, 7, 14], got {bins!r}.")
    chosen = []
    for b in np.asarray(bins).reshape(-1).tolist() if isinstance(bins, np.ndarray) else bins:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 0 <= b < n_bins:
            raise InputError(f"Expected --bins to be bin indices in [0, {n_bins - 1}], got {b!r}.")
        if int(b) not in chosen:
            chosen.append(int(b))
    if not chosen:
        raise InputError("Expected --bins to name at least one bin, got none.")
    if len(chosen) > MAX_BIN_PANELS:
        raise InputError(f"Expected --bins to name at most {MAX_BIN_PANELS} bins (one panel each), got {len(chosen)}.")
    return chosen


def _which_bins(chosen: list[int], n_bins: int) -> str:
    """A title's note when the panels show only some of the run's bins."""
    return "" if len(chosen) == n_bins else f" ({len(chosen)} of {n_bins} bins)"


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


def _figure_width(panels_width: float, legend: Sequence[str], default_title: str) -> float:
    """The figure's width (inches): the panels' width, or wider when the one-row legend or adacal's own title (one
    line) would not fit in it, as with a single panel (`--bins 0`, a run of one bin), where both were cut off at the
    figure's edges. Mathtext is measured as its source text, which is never narrower than what it draws."""
    import matplotlib

    def plain_width(text: str, size: Any, weight: str = "normal") -> float:
        return text_width(text.replace("$", "").replace("\\", ""), size=size, weight=weight)

    legend_size = matplotlib.rcParams["legend.fontsize"]
    legend_pt = sum(plain_width(label, legend_size) + 4.8 * legend_size for label in legend) + 2 * TITLE_MARGIN_PT
    title_pt = plain_width(default_title, matplotlib.rcParams["figure.titlesize"], "bold") + 2 * TITLE_MARGIN_PT
    return max(panels_width, legend_pt / 72.0, title_pt / 72.0)


def _boundaries(ax: Axes, x: np.ndarray, lower: np.ndarray, upper: np.ndarray, *, alpha: float, label: str,
                zorder: float = 1) -> None:
    """A bin's boundaries over updates as a shaded band; a single update (a one-epoch run), where a band has no
    width and shows nothing, as a vertical bar from the lower to the upper boundary."""
    ax.fill_between(x, lower, upper, color=BAND_COLOR, alpha=alpha, linewidth=0, label=label, zorder=zorder)
    if x.size == 1:
        ax.vlines(x, lower, upper, color=BAND_COLOR, alpha=alpha, linewidth=6.0, zorder=zorder, gid="boundaries")



# ------------------------------------------------------------------------------------------- gaps and scales

# A marker under every epoch where a series has no value (its line breaks there); its legend entry.
GAP_LEGEND = "Epoch with no value: the line breaks (the title says why)"
# A shared axis whose data span is below this fraction of its largest value would show noise-level motion across
# its whole height (0.9840–0.9847): each panel then says how little its series moves.
_TINY_SPAN = 0.01


def _epochs_of(x: np.ndarray) -> np.ndarray:
    """The epoch each point belongs to: several γ-updates of epoch k sit at k − 1 + j/u, all in epoch k."""
    return np.ceil(np.asarray(x, dtype=np.float64) - 1e-9).astype(np.int64)


def gap_text(x: Any, values: Any) -> str | None:
    """Where a series has no value, in words ("in epoch 17 and after epoch 19", "in epochs 3–5", "in every epoch"),
    or None when it has a value everywhere. Epochs are counted among the series' own epochs.

        >>> gap_text([1, 2, 3, 4, 5, 6], [0.5, None, 0.4, 0.3, None, None])
        'in epoch 2 and after epoch 4'
    """
    epochs = _epochs_of(x)
    missing = ~np.isfinite(np.array([np.nan if v is None else v for v in values], dtype=np.float64))
    if not missing.any():
        return None
    order = sorted(set(epochs.tolist()))
    empty = sorted(set(epochs[missing].tolist()))
    if len(empty) == len(order):
        return "in every epoch"
    position = {epoch: k for k, epoch in enumerate(order)}
    runs: list[list[int]] = []
    for epoch in empty:
        if runs and position[epoch] == position[runs[-1][-1]] + 1:
            runs[-1].append(epoch)
        else:
            runs.append([epoch])
    parts = []
    for run in runs:
        if run[-1] == order[-1] and len(run) > 1 and run[0] != order[0]:
            parts.append(f"after epoch {order[position[run[0]] - 1]}")
        elif len(run) == 1:
            parts.append(f"in epoch {run[0]}")
        else:
            parts.append(f"in epochs {run[0]}–{run[-1]}")
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _mark_gaps(ax: Axes, x: np.ndarray, values: np.ndarray, color: str, gid: str) -> bool:
    """A small × under each point of `values` that has no value (its line breaks there), in the series' colour;
    whether there were any."""
    missing = ~np.isfinite(values)
    if not missing.any():
        return False
    ax.plot(x[missing], np.zeros(int(missing.sum())), transform=ax.get_xaxis_transform(), linestyle="none",
            marker="x", markersize=4.0, markeredgewidth=1.1, color=color, clip_on=False, zorder=6, gid=gid,
            label="_gap")
    return True


def _gap_title(title: str, notes: list[str], width_pt: float) -> str:
    """A panel's title with one line per series gap note beneath it, wrapped to the panel's width."""
    import matplotlib

    size = matplotlib.rcParams["axes.titlesize"]
    return "\n".join([title, *(wrap_text(note, width_pt, size=size) for note in notes)])


def _say_tiny_spans(axes: list[Any], series: list[np.ndarray], name: str, unit: str = "") -> None:
    """Shared axes whose values all lie within a sliver of their size (γ from 0.9840 to 0.9847) would draw that
    sliver as full-height motion: each such axis then says, in the panel, how far its own series moves."""
    known = np.concatenate([s[np.isfinite(s)] for s in series]) if series else np.array([])
    if known.size == 0:
        return
    span, level = float(np.ptp(known)), float(np.max(np.abs(known)))
    if level == 0.0 or span >= _TINY_SPAN * level:
        return
    for ax, values in zip(axes, series):
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            continue
        low, high = float(finite.min()), float(finite.max())
        text = (f"{name} constant at {low:.6g}{unit}" if high == low else
                f"{name} spans only {high - low:.2g}{unit} ({low:.6g} to {high:.6g})")
        ax.text(0.98, 0.94, text, transform=ax.transAxes, ha="right", va="top", fontsize=7, color="#333333",
                parse_math=False, gid="note:span", zorder=7,
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})


def _plain_numbers(*axes: Any) -> None:
    """Tick labels as the values themselves: no offset ("+9.84e-1") or scientific factor above the axis, which
    made 0.9840–0.9847 look like motion of 0 to 7."""
    for ax in axes:
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")


def gamma_dynamics(
    history: Sequence[Mapping[str, Any]],
    bins: Sequence[int] | None = None,
    *,
    title: str | None = None,
) -> Figure:
    """AdaFocal's dynamics per validation bin (the paper's figure 5): a panel per bin with, stacked on one epoch axis,
    E_val,i = C_val,i − A_val,i (%, zero line dashed), γ_t (a dotted zero line where it goes negative: inverse focal)
    and the bin's boundaries as a shaded band.

    Each of the three rows shares one y-scale across the panels (bins compare at a glance; a bin whose γ barely moves
    is drawn flat, not stretched to the panel's height), tick labels carry the values themselves (no offset), and a
    row whose values all lie within 1 % of their size says in each panel how far its series moves. Where E_val has no
    value (no validation sample in the bin) its line breaks: a × marks the epoch and the panel's title says which."""
    series = adafocal_series(history)
    chosen = check_bins(bins, series.n_bins)
    x = series.update_epochs
    error = 100.0 * series.calibration_error
    ncols, nrows = _panel_size(len(chosen))
    order = [r"$E_{val,i} = C_{val,i} - A_{val,i}$", "E = 0", r"$\gamma_t$", r"$\gamma = 0$ (below: inverse focal)",
             "Bin boundaries", GAP_LEGEND]
    default_title = "AdaFocal: calibration error and γ per validation bin" + _which_bins(chosen, series.n_bins)
    with figure_style():
        inverse = bool(np.nanmin(series.gammas[:, chosen]) < 0)
        gaps = bool((~np.isfinite(error[:, chosen])).any() or (~np.isfinite(series.gammas[:, chosen])).any())
        legend = [label for label in order if (inverse or "inverse" not in label) and (gaps or label != GAP_LEGEND)]
        fig = new_figure(_figure_width(3.2 * ncols + 0.3, legend, default_title), 3.7 * nrows + 0.5)
        fig.get_layout_engine().set(hspace=0.0, h_pad=0.03)
        cells = _panel_grid(fig, len(chosen), [1.9, 1.3, 1.0])
        title_width = fig.get_figwidth() * 72.0 / ncols - 2 * TITLE_MARGIN_PT
        first = first_gamma = first_edges = None
        handles: dict[str, Any] = {}
        rows: dict[str, list[Any]] = {"error": [], "gamma": []}
        for k, b in enumerate(chosen):
            ax = fig.add_subplot(cells[k][0], sharex=first, sharey=first, label=f"error:bin-{b}")
            first = first or ax
            gamma_ax = fig.add_subplot(cells[k][1], sharex=first, sharey=first_gamma, label=f"gamma:bin-{b}")
            first_gamma = first_gamma or gamma_ax
            edge_ax = fig.add_subplot(cells[k][2], sharex=first, sharey=first_edges, label=f"edges:bin-{b}")
            first_edges = first_edges or edge_ax
            rows["error"].append(ax)
            rows["gamma"].append(gamma_ax)
            ax.axhline(0.0, color=REFERENCE_COLOR, linestyle="--", linewidth=0.9, label="E = 0", zorder=1)
            ax.plot(x, error[:, b], color=E_VAL_COLOR, label=r"$E_{val,i} = C_{val,i} - A_{val,i}$", zorder=3,
                    **line_markers(x.size, error[:, b]))
            gammas = series.gammas[:, b]
            notes = []
            if _mark_gaps(ax, x, error[:, b], E_VAL_COLOR, f"gap:e_val:bin-{b}"):
                notes.append(r"$E_{val}$: no validation samples in the bin " + gap_text(x, error[:, b]))
            if _mark_gaps(gamma_ax, x, gammas, GAMMA_COLOR, f"gap:gamma:bin-{b}"):
                notes.append(r"$\gamma_t$ not recorded " + gap_text(x, gammas))
            ax.set_title(_gap_title(f"Bin {b}", notes, title_width))
            gamma_ax.plot(x, gammas, color=GAMMA_COLOR, linestyle="-", label=r"$\gamma_t$", zorder=3,
                          **line_markers(x.size, gammas))
            if np.nanmin(gammas) < 0:
                gamma_ax.axhline(0.0, color=BAND_COLOR, linestyle=":", linewidth=1.2, zorder=1,
                                 label=r"$\gamma = 0$ (below: inverse focal)")
            lower, upper = series.edges[:, b], series.edges[:, b + 1]
            _boundaries(edge_ax, x, lower, upper, alpha=0.45, label="Bin boundaries")
            edge_ax.plot(x, lower, color=BAND_COLOR, linewidth=0.9)
            edge_ax.plot(x, upper, color=BAND_COLOR, linewidth=0.9)
            format_percent(edge_ax.yaxis)
            _plain_numbers(ax, gamma_ax)
            for panel in (ax, gamma_ax, edge_ax):
                handles.update((label, h) for h, label in zip(*panel.get_legend_handles_labels()))
            if k % ncols == 0:
                ax.set_ylabel(r"$E_{val}$ (%)")
                gamma_ax.set_ylabel(r"$\gamma_t$")
                edge_ax.set_ylabel("Bin edges (%)")
            else:  # one scale per row: its values are read off the first column
                for panel in (ax, gamma_ax, edge_ax):
                    panel.tick_params(axis="y", labelleft=False)
            for panel in (ax, gamma_ax):
                panel.tick_params(axis="x", labelbottom=False)
            if k >= len(chosen) - ncols:
                edge_ax.set_xlabel("Epoch")
            else:
                edge_ax.tick_params(labelbottom=False)
        tick_whole_epochs(first, x)
        _say_tiny_spans(rows["error"], [error[:, b] for b in chosen], "E_val", " %")
        _say_tiny_spans(rows["gamma"], [series.gammas[:, b] for b in chosen], "γ")
        if gaps:
            handles[GAP_LEGEND] = _gap_handle()
        labels = [label for label in order if label in handles]
        fig.legend([handles[label] for label in labels], labels, loc="outside lower center", ncols=len(labels),
                   frameon=False)
        add_title(fig, title, default=default_title)
    return fig


def _gap_handle() -> Any:
    """The legend's sample of the × that marks an epoch without a value."""
    from matplotlib.lines import Line2D

    return Line2D([], [], linestyle="none", marker="x", markersize=5.0, markeredgewidth=1.2, color="#444444")


def correspondence(
    history: Sequence[Mapping[str, Any]],
    bins: Sequence[int] | None = None,
    *,
    title: str | None = None,
) -> Figure:
    """C_train (solid) against C_val (dashed) and A_val (dotted) per validation bin over epochs (the paper's figure 2,
    common binning); the shaded band is the validation bin's boundaries. An epoch in which a bin holds no training
    (or validation) sample leaves a gap in C_train (or C_val and A_val): a × in the series' colour marks it on the
    epoch axis and the panel's title says when ("C_train: no training samples in the bin after epoch 19").

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
    default_title = (r"Correspondence of $C_{train}$ and $C_{val}$ per validation bin"
                     + _which_bins(chosen, series.n_bins))
    legend = [r"$C_{train}$", r"$C_{val}$", r"$A_{val}$", "Validation-bin boundaries"]
    gaps = bool(np.isnan(c_train[:, chosen]).any() or np.isnan(c_val[:, chosen]).any()
                or np.isnan(a_val[:, chosen]).any())
    legend += [GAP_LEGEND] * gaps
    with figure_style():
        fig = new_figure(_figure_width(3.2 * ncols + 0.3, legend, default_title), 2.7 * nrows + 0.5)
        cells = _panel_grid(fig, len(chosen), [1.0])
        title_width = fig.get_figwidth() * 72.0 / ncols - 2 * TITLE_MARGIN_PT
        first = None
        for k, b in enumerate(chosen):
            ax = fig.add_subplot(cells[k][0], sharex=first, label=f"confidence:bin-{b}")
            first = first or ax
            _boundaries(ax, x_val, series.edges[:, b], series.edges[:, b + 1], alpha=0.25,
                        label="Validation-bin boundaries")
            ax.plot(x_train, c_train[:, b], color=GAMMA_COLOR, linestyle="-", label=r"$C_{train}$", zorder=3,
                    **line_markers(x_train.size, c_train[:, b]))
            # No markers but on the points a line alone would not draw (one epoch, a bin filled at one update only).
            ax.plot(x_val, c_val[:, b], color=E_VAL_COLOR, linestyle="--", label=r"$C_{val}$", zorder=4,
                    **isolated_markers(c_val[:, b]))
            ax.plot(x_val, a_val[:, b], color=REFERENCE_COLOR, linestyle=":", linewidth=1.8, label=r"$A_{val}$",
                    zorder=4, **isolated_markers(a_val[:, b]))
            ax.set_title(_gap_title(f"Bin {b}", _correspondence_gaps(ax, b, x_train, c_train[:, b], x_val,
                                                                     c_val[:, b], a_val[:, b]), title_width))
            _limit_to_lines(ax, c_train[:, b], c_val[:, b], a_val[:, b])
            format_percent(ax.yaxis)
            if k % ncols == 0:
                ax.set_ylabel("Confidence / accuracy (%)")
            if k >= len(chosen) - ncols:
                ax.set_xlabel("Epoch")
            else:
                ax.tick_params(labelbottom=False)
        tick_whole_epochs(first, np.concatenate([x_val, x_train]))
        handles, labels = first.get_legend_handles_labels()
        order = [1, 2, 3, 0]
        handles, labels = [handles[i] for i in order], [labels[i] for i in order]
        if gaps:
            handles, labels = handles + [_gap_handle()], labels + [GAP_LEGEND]
        fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), frameon=False)
        add_title(fig, title, default=default_title)
    return fig


def _correspondence_gaps(ax: Axes, b: int, x_train: np.ndarray, c_train: np.ndarray, x_val: np.ndarray,
                         c_val: np.ndarray, a_val: np.ndarray) -> list[str]:
    """Mark the gaps of bin `b`'s three series on the epoch axis and say them, one note per series (C_val and A_val
    together where they break at the same updates, as they do when the bin holds no validation sample)."""
    notes = []
    if _mark_gaps(ax, x_train, c_train, GAMMA_COLOR, f"gap:c_train:bin-{b}"):
        notes.append(r"$C_{train}$: no training samples in the bin " + gap_text(x_train, c_train))
    together = np.array_equal(np.isnan(c_val), np.isnan(a_val))
    if _mark_gaps(ax, x_val, c_val, E_VAL_COLOR, f"gap:c_val:bin-{b}"):
        names = r"$C_{val}$, $A_{val}$" if together else r"$C_{val}$"
        notes.append(f"{names}: no validation samples in the bin " + gap_text(x_val, c_val))
    if not together and _mark_gaps(ax, x_val, a_val, REFERENCE_COLOR, f"gap:a_val:bin-{b}"):
        notes.append(r"$A_{val}$: no value " + gap_text(x_val, a_val))
    return notes


def _limit_to_lines(ax: Axes, *series: np.ndarray) -> None:
    """Scale the y axis to the plotted series (not the shaded band, which may run from 0 or to 1)."""
    values = np.concatenate([np.asarray(s, dtype=np.float64) for s in series])
    values = values[np.isfinite(values)]
    if values.size == 0:
        return
    low, high = float(values.min()), float(values.max())
    pad = max(0.08 * (high - low), 0.005)
    ax.set_ylim(max(0.0, low - pad), min(1.0 + pad / 2, high + pad))

