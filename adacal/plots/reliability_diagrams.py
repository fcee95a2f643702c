"""Reliability diagrams: accuracy per confidence bin, the gap to the bin's mean confidence, and a histogram of samples.

`reliability_diagram` draws panels of precomputed `BinStatistics` side by side; axes carry the labels
"reliability:<panel>" and "histogram:<panel>". `reliability` is the one-call figure from scores. What a panel holds
and how it is computed from scores (`ReliabilityPanel`, `panel_from_scores`, `corp_of`, `headline_eces`) lives in
`adacal.plots.reliability_panels`; those names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.checks import check_non_negative_int
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError, unknown_name
from adacal.metrics.binning import BinStatistics, calibration_error, equal_width_edges
from adacal.plots.bands import ReliabilityBands, bins_coverage
from adacal.plots.reliability_panels import ReliabilityPanel, corp_of, headline_eces, panel_from_scores
from adacal.plots.style import (
    GAP_COLOR,
    LOSS_COLORS,
    REFERENCE_COLOR,
    add_title,
    colors_for,
    figure_style,
    format_percent,
    isolated_markers,
    new_figure,
    percent_tick,
    plain,
    set_percent_axes,
    text_width,
    wrap_text,
)

# Bins with fewer samples than this are drawn faded and labelled with their count: their accuracy is mostly noise.
MIN_BIN_COUNT = 10
# A diagram draws one bar (a matplotlib artist) per bin: 1,000 take seconds, 100,000 minutes, and bins narrower than
# a pixel show nothing more. More are refused.
MAX_DIAGRAM_BINS = 1000
# Diagrams per row; more inputs wrap onto further rows (40 in one row made a 20,000-pixel-wide strip).
MAX_PANEL_COLUMNS = 5
# More diagrams than this in one figure are refused: unreadable, and past ~140 rows of pixels' worth matplotlib's
# renderer refuses the image size anyway.
MAX_PANELS = 60
# Above this many bins the histogram's per-bar counts would overlap; the bars alone remain.
_MAX_COUNT_LABELS = 30
_BAND_COLOR = "#333333"
_SMOOTH_COLOR = "#111111"
_CORP_COLOR = "#2166ac"
_ACCURACY_COLOR = "#6E6E6E"  # the histogram's overall-accuracy line: grey, dash-dotted
_SPARSE_ALPHA = 0.3
_DEFAULT_COLOR = LOSS_COLORS["ce"]
_MIN_LABEL_WIDTH = 0.035
_PANEL_MARGIN_PT = 24.0

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "MAX_DIAGRAM_BINS",
    "MAX_PANELS",
    "MAX_PANEL_COLUMNS",
    "MIN_BIN_COUNT",
    "SMOOTH_LEGEND",
    "STRATEGIES",
    "ReliabilityDisplay",
    "ReliabilityPanel",
    "check_diagram_bins",
    "check_min_count",
    "corp_of",
    "empty_bins_note",
    "headline_eces",
    "panel_from_scores",
    "reliability",
    "reliability_diagram",
]


# The legend entry of the smoothed reliability curve in a figure of several panels (each title gives its smECE).
SMOOTH_LEGEND = "Smoothed accuracy (where samples lie)"
# The headline metric of every adacal table first (equal-mass bins), then its equal-width sibling.
_TITLE_ECES = ("ECE-EM", "ECE-EW")


def _binning_name(stats: BinStatistics, binning: str | None = None) -> str:
    """ECE-EW or ECE-EM: from the binning when known (one bin's edges, 0 and 1, are both), else from the edges."""
    if binning is not None:
        return "ECE-EW" if binning == "equal-width" else "ECE-EM"
    edges = np.asarray(stats.edges, dtype=np.float64)
    uniform = edges.size >= 2 and np.allclose(edges, equal_width_edges(edges.size - 1), atol=1e-12)
    return "ECE-EW" if uniform else "ECE-EM"


def _ece_parts(panel: ReliabilityPanel, ece_name: str | None = None) -> list[str]:
    """The ECEs a panel's title gives, headline first: "ECE-EM 1.74 %", "ECE-EW 2.66 %". Each is the panel's own
    value (`ece_em`, `ece_ew`), else the ECE of its bins (or of its equal-width histogram) when they are of that
    binning; a panel whose ECE is named otherwise (`ece_name`) gives that one alone."""
    drawn_name = ece_name or _binning_name(panel.stats, panel.binning)
    drawn = calibration_error(panel.stats) if panel.ece is None else float(panel.ece)
    values = dict(zip(_TITLE_ECES, (panel.ece_em, panel.ece_ew)))
    if drawn_name not in values:
        return [f"{drawn_name} {100 * drawn:.2f} %"]
    if values[drawn_name] is None:
        values[drawn_name] = drawn
    histogram = panel.histogram
    if values["ECE-EW"] is None and isinstance(histogram, BinStatistics) and _binning_name(histogram) == "ECE-EW":
        values["ECE-EW"] = calibration_error(histogram)
    # the same rounding as evaluate's table: a fraction in % with two decimals; a positive-class panel's ECEs are
    # those of P(class 1): ECE-Positive-EM / -EW, as evaluate names them
    prefix = "ECE-Positive-" if panel.positive else "ECE-"
    return [f"{prefix}{name[4:]} {100 * value:.2f} %" for name, value in values.items() if value is not None]


def _joined_lines(parts: list[str], width_pt: float, size: Any) -> str:
    """`parts` joined by " · ", a new line where the next part would make a line wider than `width_pt`."""
    lines: list[str] = []
    for part in parts:
        if lines and text_width(f"{lines[-1]} · {part}", size=size) <= width_pt:
            lines[-1] += f" · {part}"
        else:
            lines.append(part)
    return "\n".join(lines)


def check_diagram_bins(n_bins: int, where: str) -> None:
    """Refuse more bins than a reliability diagram can draw (`MAX_DIAGRAM_BINS`); `where` names their source."""
    if n_bins > MAX_DIAGRAM_BINS:
        raise InputError(
            f"Expected at most {MAX_DIAGRAM_BINS:,} bins in a reliability diagram (one bar each; narrower bins than a "
            f"pixel show nothing), got {n_bins:,} from {where}."
        )


def _hidden_bins(edges: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The bins a diagram leaves out: empty and of zero width. Equal-mass binning never splits tied confidences, so
    ties (or fewer samples than bins) leave such bins; there is nothing to draw in them, and their count labels would
    all stack at one point."""
    return (np.diff(edges) <= 0) & (counts == 0)


# At most this many tie values are named in a note ("ties at 25 %, 50 %, 100 %"); more end in "…".
_MAX_TIE_VALUES = 3


def empty_bins_note(stats: BinStatistics, *, detail: bool = False) -> str | None:
    """What the diagram of `stats` leaves out, in one phrase, or None when every bin is drawn: the empty bins of zero
    width (`_hidden_bins`) and where they sit, e.g. "14 of 15 bins empty (ties at 100 %)". `detail` adds why and that
    they are not drawn (for a note beside the figure)."""
    edges = np.asarray(stats.edges, dtype=np.float64)
    counts = np.asarray(stats.counts)
    hidden = _hidden_bins(edges, counts)
    if not hidden.any():
        return None
    values = np.unique(edges[:-1][hidden])
    where = ", ".join(f"{percent_tick(v)} %" for v in values[:_MAX_TIE_VALUES])
    where += ", …" if values.size > _MAX_TIE_VALUES else ""
    n_hidden, total = int(hidden.sum()), int(counts.sum())
    few = total < counts.size  # equal-mass edges of fewer samples than bins repeat too, without any tie
    if not detail:
        cause = f"{total} sample{'s' * (total != 1)} for {counts.size} bins" if few else f"ties at {where}"
        return f"{n_hidden} of {counts.size} bins empty ({cause})"
    why = f"there are fewer samples ({total}) than bins" if few else "tied confidences are never split between bins"
    return f"{n_hidden} of {counts.size} bins are empty and of zero width at {where}, as {why}; they are not drawn"


def _as_panel(panel: Any) -> ReliabilityPanel:
    if isinstance(panel, ReliabilityPanel):
        checked = panel
    elif isinstance(panel, (tuple, list)) and 2 <= len(panel) <= 4 and isinstance(panel[1], BinStatistics):
        checked = ReliabilityPanel(*panel)
    else:
        checked = None
    if checked is not None:
        check_diagram_bins(checked.stats.n_bins, f"panel {checked.label!r}" if checked.label else "a panel")
        return checked
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
    min_count: int = MIN_BIN_COUNT,
) -> Figure:
    """Reliability diagrams side by side (shared axes; up to MAX_PANEL_COLUMNS a row, then further rows, at most
    MAX_PANELS), each with the gap to the mean confidence and a histogram.

    Bars are the bin accuracies (heights = `stats.accuracy` exactly), spanning each bin's edges; the hatched "Gap"
    goes from accuracy to the bin's mean confidence. A panel's `bands` are drawn as an interval at each bin's centre.
    Bins with fewer than `min_count` samples are faded and labelled "n=<count>" (gid "count:bin-<i>"). The panel
    title headlines ECE-EM, with ECE-EW beside it where the line has room, in % as `adacal evaluate` prints them
    (`_ece_parts`); a smoothed curve is drawn where its samples lie. Beneath each diagram: the share of samples per
    confidence bin (%), each bar labelled with its count (up to 30 bins), with the overall accuracy (grey,
    dash-dotted) and mean confidence (red, dotted) marked.
    """
    if isinstance(panels, (str, bytes, Mapping)) or not isinstance(panels, Sequence):
        raise InputError(f"Expected a list of reliability panels, got {type(panels).__name__}.")
    if len(panels) > MAX_PANELS:
        raise InputError(f"Expected at most {MAX_PANELS} reliability diagrams in one figure, got {len(panels)}: "
                         "draw them in several figures.")
    panels = [_as_panel(p) for p in panels]
    if not panels:
        raise InputError("Expected at least one reliability panel, got none.")
    min_count = check_min_count(min_count)
    import matplotlib

    colors = colors_for([p.label for p in panels])
    n = len(panels)
    ncols = min(n, MAX_PANEL_COLUMNS)
    nrows = -(-n // ncols)
    with figure_style():
        fig = new_figure(max(4.6, 3.3 * ncols + 0.4), 4.9 if n == 1 else 4.6 + 4.1 * (nrows - 1))
        grid = fig.add_gridspec(2 * nrows, ncols, height_ratios=[3.2, 1.0] * nrows)
        first_main = first_hist = None
        label_width = fig.get_figwidth() * 72.0 / ncols - _PANEL_MARGIN_PT  # a long label wraps instead of being cut
        extra: dict[str, Any] = {}  # legend entries that only some diagrams have (bands, sparse bins)
        top_share = 0.0
        for k, panel in enumerate(panels):
            row, column = divmod(k, ncols)
            ax = fig.add_subplot(grid[2 * row, column], sharex=first_main, sharey=first_main, label=f"reliability:{k}")
            hist_ax = fig.add_subplot(grid[2 * row + 1, column], sharex=ax, sharey=first_hist, label=f"histogram:{k}")
            first_main = first_main or ax
            first_hist = first_hist or hist_ax
            color = panel.color or colors[k]
            extra.update(_draw_reliability(ax, panel.stats, color, bands=panel.bands, min_count=min_count,
                                           smooth=panel.smooth, coverage=panel.coverage, corp=panel.corp))
            accuracy, share = _draw_histogram(hist_ax, panel, color)
            top_share = max(top_share, share)
            rate = "Class-1 rate" if panel.positive else "Acc."  # a positive panel's overall rate: of class 1
            parts = _ece_parts(panel, ece_name) + ([] if accuracy is None else [f"{rate} {100 * accuracy:.1f} %"])
            if panel.smooth is not None:
                parts.append(f"smECE {100 * panel.smooth.ece:.2f} % (σ = {panel.smooth.bandwidth:.3f})")
            size = matplotlib.rcParams["axes.titlesize"]
            # ECE-EW beside ECE-EM where the line has room; a title is centred over its axes, narrower than its
            # column, so the numbers keep a margin that a wrapped label does not need.
            summary = _joined_lines(parts, label_width - 2 * _PANEL_MARGIN_PT, size)
            note = empty_bins_note(panel.stats)
            if note is not None:  # empty bins of zero width are not drawn: say so beneath the panel's numbers
                summary += "\n" + wrap_text(note, label_width, size=size)
            label = wrap_text(panel.label, label_width, size=size)
            ax.set_title(f"{label}\n{summary}", parse_math=False)
            if column == 0:
                ax.set_ylabel(_POSITIVE_AXES[1] if panel.positive else "Accuracy (%)")
                hist_ax.set_ylabel("Samples (%)")
            else:
                ax.tick_params(labelleft=False)
                hist_ax.tick_params(labelleft=False)
            ax.tick_params(labelbottom=False)
            hist_ax.set_xlabel(_POSITIVE_AXES[0] if panel.positive else "Confidence (%)")
        format_percent(first_main.xaxis)
        format_percent(first_main.yaxis)
        first_main.set_xlim(0.0, 1.0)
        first_main.set_ylim(0.0, 1.0)
        first_main.set_aspect("auto")
        first_hist.set_ylim(bottom=0.0)
        if top_share > 0 and any(_histogram(p)[1].size <= _MAX_COUNT_LABELS for p in panels):
            # Room for the rotated counts above the bars, but never past 100 % (a share axis ends there).
            first_hist.set_ylim(0.0, min(100.0, 1.6 * top_share))
        handles, labels = first_main.get_legend_handles_labels()
        hist_handles, hist_labels = first_hist.get_legend_handles_labels()
        order = [labels.index(name) for name in ("Accuracy", "Gap", "Mean confidence per bin", "Perfect calibration")]
        entries = [labels[i] for i in order] + hist_labels + list(extra)
        entries[0] = _accuracy_entry(panels)
        if all(panel.positive for panel in panels):  # the same artists, named for P(class 1) and class 1's frequency
            entries = [_positive_entry(entry) for entry in entries]
        shown = [handles[i] for i in order]
        # The bars' swatches as a full bin draws them (a container's first bar may be a faded, sparse one).
        shown[:2] = [_bar_swatch(shown[0], "Accuracy"), _bar_swatch(shown[1], "Gap")]
        fig.legend(shown + hist_handles + list(extra.values()), entries,
                   loc="outside lower center", ncols=_legend_columns(entries, fig.get_figwidth()), frameon=False)
        add_title(fig, title)
    return fig


# A positive-class diagram's axes (x, y): what scikit-learn's CalibrationDisplay draws, in %.
_POSITIVE_AXES = ("Predicted P(class 1) (%)", "Frequency of class 1 (%)")
_POSITIVE_ENTRIES = {"Accuracy": "Frequency of class 1", "Mean confidence per bin": "Mean P(class 1) per bin",
                     "Overall accuracy": "Overall frequency of class 1", "Average confidence": "Average P(class 1)",
                     "Smoothed accuracy": "Smoothed frequency of class 1"}


def _positive_entry(entry: str) -> str:
    """A legend entry of a top-label diagram as a positive-class diagram names it ("Accuracy (15 equal-width bins)"
    → "Frequency of class 1 (15 equal-width bins)")."""
    head, _, tail = entry.partition(" (")
    if head not in _POSITIVE_ENTRIES:
        return entry
    return _POSITIVE_ENTRIES[head] + (f" ({tail}" if tail else "")


def _accuracy_entry(panels: Sequence[ReliabilityPanel]) -> str:
    """The bars' legend entry, naming their bins when every panel has the same: "Accuracy (15 equal-mass bins)" (the
    titles give ECE-EM and ECE-EW whatever the bars' binning)."""
    kinds = {(panel.stats.n_bins, _binning_name(panel.stats, panel.binning)) for panel in panels}
    if len(kinds) != 1:
        return "Accuracy"
    ((n_bins, name),) = kinds
    binning = "equal-width" if name == "ECE-EW" else "equal-mass"
    return f"Accuracy ({n_bins} {binning} bin{'s' * (n_bins != 1)})"


def _legend_columns(entries: list[str], width_in: float) -> int:
    """As many legend columns as fit the figure's width for its longest entry (a legend wider than the figure is cut
    at both edges), at most 6."""
    import matplotlib

    size = matplotlib.rcParams["legend.fontsize"]
    size = matplotlib.font_manager.FontProperties(size=size).get_size_in_points()
    column_pt = 0.6 * size * max(len(entry) for entry in entries) + 4.0 * size  # text, handle and spacing
    return max(1, min(6, int(width_in * 72.0 // column_pt)))


def check_min_count(min_count: Any) -> int:
    return check_non_negative_int(min_count, "min_count (--min-bin-count)")


def _draw_reliability(
    ax: Axes, stats: BinStatistics, color: str, *, bands: ReliabilityBands | None = None,
    min_count: int = MIN_BIN_COUNT, label_counts: str = "sparse", smooth: Any = None, coverage: Any = None,
    corp: Any = None,
) -> dict[str, Any]:
    """Draw one diagram into `ax`; return the legend entries beyond the four every diagram has (label → handle).

    `label_counts`: "sparse" labels bins with fewer than `min_count` samples with their count, "all" every bin.
    `smooth` is drawn where `coverage` (a mask over its grid) says, else over the bins that hold samples."""
    from matplotlib import patheffects
    from matplotlib.patches import Patch

    edges = np.asarray(stats.edges, dtype=np.float64)
    widths = np.diff(edges)
    accuracy = np.asarray(stats.accuracy, dtype=np.float64)
    confidence = np.asarray(stats.mean_confidence, dtype=np.float64)
    counts = np.asarray(stats.counts)
    filled = counts > 0
    kept = ~_hidden_bins(edges, counts)  # empty bins of zero width (ties) get no bar and no count label
    bars = ax.bar(
        edges[:-1][kept], accuracy[kept], width=widths[kept], align="edge", color=color, alpha=0.85,
        edgecolor="white", linewidth=0.6, label="Accuracy", zorder=2,
    )
    bar_of = dict(zip(np.flatnonzero(kept).tolist(), bars.patches))
    low = np.minimum(accuracy, confidence)[filled]
    gap = np.abs(confidence - accuracy)[filled]
    gaps = ax.bar(
        edges[:-1][filled], gap, bottom=low, width=widths[filled], align="edge", facecolor=(1.0, 1.0, 1.0, 0.35),
        edgecolor=GAP_COLOR, hatch="////", linewidth=0.8, label="Gap", zorder=3,
    )
    gap_of = dict(zip(np.flatnonzero(filled).tolist(), gaps.patches))
    centres = (edges[:-1] + edges[1:]) / 2.0
    ax.plot(centres[filled], confidence[filled], linestyle="none", marker="_", markersize=7, markeredgewidth=1.6,
            color=REFERENCE_COLOR, zorder=4, label="Mean confidence per bin")
    ax.plot([0, 1], [0, 1], linestyle="--", color=REFERENCE_COLOR, linewidth=1.0, zorder=5, label="Perfect calibration")
    extra: dict[str, Any] = {}
    if bands is not None:
        lower, upper = np.asarray(bands.lower, dtype=np.float64), np.asarray(bands.upper, dtype=np.float64)
        if lower.shape != accuracy.shape or upper.shape != accuracy.shape:
            raise InputError(f"Expected bands with one value per bin ({accuracy.size}), got {lower.size}.")
        shown = filled & np.isfinite(lower) & np.isfinite(upper)
        if shown.any():
            middle = (lower + upper)[shown] / 2.0
            drawn = ax.errorbar(centres[shown], middle, yerr=[middle - lower[shown], upper[shown] - middle],
                                fmt="none", ecolor=_BAND_COLOR, elinewidth=1.3, capsize=2.5, capthick=1.0, zorder=6,
                                label=bands.description)
            drawn.lines[2][0].set_gid(f"band:{bands.kind}")
            extra[bands.description] = drawn
    if smooth is not None:
        label = f"Smoothed (smECE {100 * smooth.ece:.2f} %, σ = {smooth.bandwidth:.3f})"
        grid = np.asarray(smooth.grid, dtype=np.float64)
        covered = bins_coverage(grid, stats) if coverage is None else np.asarray(coverage, dtype=bool)
        if covered.shape != grid.shape:
            raise InputError(f"Expected the smoothed curve's coverage to have one value per grid point ({grid.size}), "
                             f"got {covered.size}.")
        curve = np.where(covered, np.asarray(smooth.curve, dtype=np.float64), np.nan)  # no line over empty stretches
        # Solid and haloed over the bars: never mistaken for the histogram's dash-dotted overall-accuracy line.
        (line,) = ax.plot(grid, curve, color=_SMOOTH_COLOR, linewidth=1.8, zorder=6, label=label,
                          path_effects=[patheffects.withStroke(linewidth=3.2, foreground="white")],
                          **isolated_markers(curve))
        line.set_gid("smooth")
        # One entry for every panel's curve in a figure's shared legend; each panel's title gives its smECE.
        extra[SMOOTH_LEGEND] = line
    if corp is not None:
        extra.update(_draw_corp(ax, corp))
    sparse = (counts < min_count) & kept & filled
    # "all": every bin's count at its foot, except bins too narrow to hold the text (sparse ones are always labelled).
    # Empty bins carry no label: "n=0" on every empty bin crowds the panel and says nothing the bare axis does not.
    labelled = sparse if label_counts == "sparse" else sparse | ((widths >= _MIN_LABEL_WIDTH) & kept & filled)
    for i in np.flatnonzero(sparse):
        # Faded, gap included: a bin of one or two samples cannot dominate the panel with a full-height hatched gap.
        bar_of[int(i)].set_alpha(_SPARSE_ALPHA)
        gap_of[int(i)].set_alpha(_SPARSE_ALPHA)
    for i in np.flatnonzero(labelled):
        top = max(accuracy[i], confidence[i]) if counts[i] else 0.0
        # Sparse bins: above the bar, or inside its foot when above would leave the axes. Others: at the foot.
        y = top + 0.015 if sparse[i] and top < 0.8 else 0.015
        text = ax.text(centres[i], y, f"n={int(counts[i])}", rotation=90, ha="center", va="bottom",
                       fontsize=6 if sparse[i] else 5.5, color="#555555" if sparse[i] else "white", zorder=7,
                       clip_on=True, parse_math=False)
        text.set_gid(f"count:bin-{i}")
    if sparse.any():
        label = f"Bin with fewer than {min_count} samples (n shown)"
        # The tint drawn: the panel's colour at the sparse bins' alpha (the last panel's, in a figure of several).
        extra[label] = Patch(facecolor=color, alpha=_SPARSE_ALPHA, label=label)
    return extra


def _draw_corp(ax: Axes, corp: Any) -> dict[str, Any]:
    """The CORP reliability curve (PAV fit at each distinct confidence, joined by straight lines) over the bars, and
    its consistency band shaded beneath it; returns their legend entries."""
    from matplotlib import patheffects

    x = np.asarray(corp.forecasts, dtype=np.float64)
    extra: dict[str, Any] = {}
    if corp.band_low is not None:
        band = ax.fill_between(x, corp.band_low, corp.band_high, color=_CORP_COLOR, alpha=0.18, linewidth=0,
                               zorder=5.5, label=f"CORP {round(100 * corp.level)}% consistency band")
        band.set_gid("corp-band")
        extra[band.get_label()] = band
    (line,) = ax.plot(x, corp.recalibrated, color=_CORP_COLOR, linewidth=1.6, zorder=6.5, label="CORP (PAV) curve",
                      path_effects=[patheffects.withStroke(linewidth=3.0, foreground="white")],
                      **isolated_markers(np.asarray(corp.recalibrated, dtype=np.float64)))
    line.set_gid("corp")
    extra["CORP (PAV) curve"] = line
    return extra


def _bar_swatch(container: Any, label: str) -> Any:
    """A legend patch drawn as a full bin's bar is (a container's first bar may be a faded, sparse one)."""
    from matplotlib.patches import Patch

    if label == "Gap":
        return Patch(facecolor=(1.0, 1.0, 1.0, 0.35), edgecolor=GAP_COLOR, hatch="////", linewidth=0.8, label=label)
    if not getattr(container, "patches", None):
        return container
    return Patch(facecolor=container.patches[0].get_facecolor()[:3], alpha=0.85, edgecolor="white", label=label)


def _draw_histogram(ax: Axes, panel: ReliabilityPanel, color: str) -> tuple[float | None, float]:
    """Draw the share of samples per confidence bin, each bar labelled with its count (gid "hist-count:bin-<i>");
    return the overall accuracy (None without samples) and the largest share (%)."""
    edges, counts = _histogram(panel)
    total = counts.sum()
    share = 100.0 * counts / total if total else np.zeros_like(counts)
    drawn = ~_hidden_bins(edges, counts)
    ax.bar(edges[:-1][drawn], share[drawn], width=np.diff(edges)[drawn], align="edge", color=color, alpha=0.55,
           edgecolor="white", linewidth=0.4, zorder=2)
    if counts.size <= _MAX_COUNT_LABELS:
        centres = (edges[:-1] + edges[1:]) / 2.0
        for i in np.flatnonzero(counts > 0):
            text = ax.annotate(f"{int(counts[i])}", (centres[i], share[i]), xytext=(0, 1.5), textcoords="offset points",
                               rotation=90, ha="center", va="bottom", fontsize=5.5, color="#444444", zorder=3)
            text.set_gid(f"hist-count:bin-{i}")
    stats = panel.stats
    top = float(share.max(initial=0.0))
    if stats.counts.sum():
        weights = stats.weights
        accuracy = float(np.sum(weights * stats.accuracy))
        confidence = float(np.sum(weights * stats.mean_confidence))
        ax.axvline(accuracy, color=_ACCURACY_COLOR, linestyle="-.", linewidth=1.4, label="Overall accuracy",
                   gid="overall-accuracy", zorder=4)
        ax.axvline(confidence, color=GAP_COLOR, linestyle=":", linewidth=1.5, label="Average confidence", zorder=4)
        return accuracy, top
    return None, top


# ------------------------------------------------------------------------------------------------ one-call figure

# sklearn's `calibration_curve` names ("uniform", "quantile") are accepted for its users.
STRATEGIES = {"equal-width": "equal-width", "equal-mass": "equal-mass", "uniform": "equal-width",
              "quantile": "equal-mass"}


@dataclass(frozen=True)
class ReliabilityDisplay:
    """What `reliability` drew: the figure, the diagram's axes, the histogram's axes (None when drawn into a given
    `ax`), the bin statistics behind the bars, the bands (None without) and the ECE of the bins (a fraction).
    It unpacks as `fig, ax = reliability(...)`."""

    figure: Figure
    ax: Axes
    histogram_ax: Axes | None
    stats: BinStatistics
    bands: ReliabilityBands | None
    ece: float

    def __iter__(self) -> Iterator[Any]:
        return iter((self.figure, self.ax))



def reliability(
    probs_or_logits: Any,
    labels: Any,
    ax: Axes | None = None,
    *,
    n_bins: int = DEFAULT_N_BINS,
    strategy: str = "equal-width",
    bands: str = "none",
    band_samples: int = 1000,
    band_level: float = 0.9,
    seed: int = 0,
    min_count: int = MIN_BIN_COUNT,
    smooth: bool = False,
    label: str | None = None,
    color: str | None = None,
    title: str | None = None,
    scores_kind: str = "auto",
    positive: bool = False,
) -> ReliabilityDisplay:
    """A reliability diagram of top-1 predictions in one call, like scikit-learn's
    `CalibrationDisplay.from_predictions`.

        >>> display = adacal.plots.reliability(probs, labels, bands="consistency")
        >>> display.figure.savefig("reliability.png")          # or: fig, ax = plt.subplots(); reliability(..., ax=ax)

    `probs_or_logits` (N, K) are read as every adacal metric reads them (docs/inputs.md §2): probabilities when every
    row is a probability row, logits when (almost) none is, refused in between naming `scores_kind=`, which chooses
    ("logits", "probs"); numpy arrays or torch tensors. `strategy` is "equal-width" or "equal-mass" (also "uniform" /
    "quantile"). `bands`: "consistency" (where a calibrated model's bin accuracies would fall), "bootstrap" (the
    uncertainty of each accuracy) or "none", from `band_samples` seeded resamples at `band_level` (see
    `adacal.plots.bands`). Bins with fewer than `min_count` samples are faded and labelled with their count.
    `smooth=True` adds the smoothed reliability curve (kernel regression with smECE's automatic bandwidth), drawn
    only where the confidences lie (`smooth_coverage`). The title gives ECE-EM and ECE-EW of `n_bins` bins, as
    `adacal evaluate` prints them. `positive=True` draws a binary model's positive-class diagram instead, P(class 1)
    against the frequency of class 1 (scikit-learn's `CalibrationDisplay`), titled with ECE-Positive-EM and -EW.

    Without `ax` a new figure (no pyplot) holds the diagram and a histogram of samples per bin beneath it; with `ax`
    only the diagram is drawn into it, every bin labelled with its count, and the axes' figure is returned.
    """
    from adacal.metrics.binning import check_n_bins
    from adacal.plots.bands import check_band_options

    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        raise unknown_name("strategy", str(strategy), STRATEGIES)
    binning = STRATEGIES[strategy]
    n_bins = check_n_bins(n_bins)
    check_diagram_bins(n_bins, "n_bins")
    bands, band_samples, band_level = check_band_options(bands, band_samples, band_level)
    min_count = check_min_count(min_count)
    if ax is not None and not hasattr(ax, "bar"):
        raise InputError(f"Expected ax to be a matplotlib Axes, got {type(ax).__name__}.")
    name = "Model" if label is None else str(label)
    color = color or (colors_for([name])[0] if label is not None else _DEFAULT_COLOR)
    panel = panel_from_scores(probs_or_logits, labels, label=name, binning=binning, n_bins=n_bins, bands=bands,
                              band_samples=band_samples, band_level=band_level, seed=seed, smooth=smooth, color=color,
                              scores_kind=scores_kind, positive=positive)
    stats, band, curve = panel.stats, panel.bands, panel.smooth
    ece = calibration_error(stats)
    if ax is None:
        figure = reliability_diagram([panel], title=title, min_count=min_count)
        main = next(a for a in figure.axes if a.get_label() == "reliability:0")
        hist = next(a for a in figure.axes if a.get_label() == "histogram:0")
        return ReliabilityDisplay(figure, main, hist, stats, band, ece)
    _draw_reliability(ax, stats, color, bands=band, min_count=min_count, label_counts="all", smooth=curve,
                      coverage=panel.coverage)
    note = empty_bins_note(stats)
    if note is not None:  # the legend's last line, without a marker: the title may be the caller's
        ax.plot([], [], linestyle="none", label=note, gid="note:empty-bins")
    set_percent_axes(ax, *(_POSITIVE_AXES if positive else ("Confidence (%)", "Accuracy (%)")))
    summary = " · ".join(_ece_parts(panel))
    heading = title if title is not None else (summary if label is None else f"{name}\n{summary}")
    ax.set_title(heading, parse_math=False)
    if note is None:
        legend = ax.legend(loc="upper left", fontsize=7)
    else:
        handles, entries = ax.get_legend_handles_labels()
        order = sorted(range(len(entries)), key=lambda k: entries[k] == note)  # the note last, the rest as they are
        legend = ax.legend([handles[k] for k in order], [entries[k] for k in order], loc="upper left", fontsize=7)
    plain(legend.get_texts())
    return ReliabilityDisplay(ax.figure, ax, None, stats, band, ece)
