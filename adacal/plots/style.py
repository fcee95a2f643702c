"""The look shared by every adacal figure and deterministic saving.

One colour per loss (Okabe & Ito's colour-blind-safe palette), fixed fonts and sizes, probability axes in %, and
`save_figure`, which writes PNG, SVG or PDF atomically with no timestamps and a fixed SVG hash salt, so the same
input gives the same bytes. matplotlib is imported inside the functions only.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.checks import check_integer
from adacal.errors import InputError
from adacal.writing import write_file

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
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
    "dual-focal": "#44AA99",  # teal
    "mbls": "#117733",  # green
    "acls": "#AA4499",  # purple
    "cals": "#EE3377",  # magenta
    "mdca": "#DDAA33",  # sand
    "confidence-penalty": "#6699CC",  # light blue
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
    "dual-focal": "Dual focal",
    "mbls": "MbLS",
    "acls": "ACLS",
    "cals": "CALS",
    "mdca": "MDCA",
    "confidence-penalty": "Confidence penalty",
}
_SPARE_COLORS = ("#997700", "#EE99AA", "#555555")
# Colours of what is not a loss: reference lines (perfect calibration, accuracy), the reliability diagram's gaps,
# AdaFocal's validation curves (E_val = C_val - A_val, C_val) and γ / C_train, bin boundaries and bands.
REFERENCE_COLOR = "#222222"
GAP_COLOR = "#C0392B"
E_VAL_COLOR = "#0072B2"
GAMMA_COLOR = "#D55E00"
BAND_COLOR = "#9E9E9E"

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
    "text.usetex": False,
    "svg.hashsalt": "adacal",
    "svg.fonttype": "path",
    "pdf.fonttype": 42,
    "path.simplify": True,
}




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


def colors_for(names: Sequence[str]) -> list[str]:
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
def figure_style() -> Iterator[None]:
    """Within it, matplotlib draws in adacal's style (fonts, sizes, grid; `_STYLE`); rcParams are restored after."""
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        yield


def new_figure(width: float, height: float) -> Figure:
    """A figure of `width` × `height` inches with constrained layout, made without pyplot (no global state)."""
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
    """`dpi` as an int in [10, 2400] (the PNG resolution)."""
    return check_integer(dpi, "dpi (--dpi)", minimum=10, maximum=2400)


def render_figure(fig: Figure, *, fmt: str = "png", dpi: int = 150, metadata: dict[str, Any] | None = None) -> bytes:
    """The bytes of `fig` rendered in memory as `fmt` (png, svg or pdf) on white, in adacal's style: what
    `save_figure` writes, and what a report page embeds.

        >>> from adacal.plots.style import new_figure, render_figure
        >>> render_figure(new_figure(1.0, 1.0), dpi=20)[:8]
        b'\\x89PNG\\r\\n\\x1a\\n'
    """
    buffer = io.BytesIO()
    with figure_style():
        fig.savefig(buffer, format=fmt, dpi=check_dpi(dpi), metadata=metadata, facecolor="white")
    return buffer.getvalue()


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = 150, kind: str | None = None) -> Path:
    """Write `fig` to `path` (format from the extension) atomically, with no timestamps: same figure, same bytes.

    `kind` ("reliability", "gamma", ...) is recorded in the file's metadata as "adacal plot <kind>", which is how
    `adacal plot` later tells its own figures from other files (`adacal.plots.outputs`). The figure is rendered in
    memory first, so the temp file beside `path` lives only while the bytes are written; stale temp files of killed
    plots in that folder are deleted first.
    """
    from adacal.plots.outputs import KIND_PREFIX, clean_stale_temp_files

    fmt = figure_format(path)
    dpi = check_dpi(dpi)
    metadata: dict[str, Any] = {
        "png": {"Software": "adacal"},
        "svg": {"Date": None, "Creator": "adacal"},
        "pdf": {"CreationDate": None, "ModDate": None, "Creator": "adacal", "Producer": "adacal"},
    }[fmt]
    if kind is not None:
        if not isinstance(kind, str) or not kind.replace("-", "").isalpha() or kind != kind.lower():
            raise InputError(f"Expected kind to be a lowercase name such as 'reliability', got {kind!r}.")
        metadata[{"png": "Comment", "svg": "Description", "pdf": "Subject"}[fmt]] = KIND_PREFIX + kind
    data = render_figure(fig, fmt=fmt, dpi=dpi, metadata=metadata)

    def write(handle: Any) -> None:
        handle.write(data)

    path = Path(path)
    clean_stale_temp_files(path.parent if str(path.parent) else Path("."))
    return write_file(path, write, binary=True)


def floats_from_json(values: Any) -> np.ndarray:
    """Floats from JSON lists where null stands for a non-finite value."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def format_percent(axis: Any) -> None:
    """Show a probability axis (data kept as fractions, as the metrics return them) in % without a per-tick sign;
    the axis label carries the unit."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(percent_tick))


def set_percent_axes(ax: Any, xlabel: str, ylabel: str, *, top: float = 1.0) -> None:
    """Axes of probabilities: x on [0, 1], y on [0, `top`], both shown in %, with their labels."""
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, top)
    format_percent(ax.xaxis)
    format_percent(ax.yaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def percent_tick(value: float, _position: Any = None) -> str:
    """A fraction as a percentage with only the digits it needs: 0.2 → "20", 0.975 → "97.5"."""
    return "0" if abs(value) < 1e-12 else f"{100.0 * value:.6g}"


def add_title(fig: Figure, title: str | None, default: str | None = None) -> None:
    """The figure's title: the user's `title` shown literally (never mathtext), wrapped to the figure's width; else
    adacal's own `default` (which may use mathtext)."""
    import matplotlib

    if title:
        width = fig.get_figwidth() * 72.0 - 2 * TITLE_MARGIN_PT
        text = wrap_text(title, width, size=matplotlib.rcParams["figure.titlesize"], weight="bold")
        fig.suptitle(text, fontweight="bold", parse_math=False)
    elif default:
        fig.suptitle(default, fontweight="bold")


TITLE_MARGIN_PT = 9.0


def plain(artists: Any) -> None:
    """Show the text of these artists literally: a user's label such as "$x^2$" or "a_b" is not parsed as mathtext."""
    for artist in artists:
        artist.set_parse_math(False)


def text_width(text: str, *, size: Any, weight: str = "normal") -> float:
    """Width in points of one line of `text` (no mathtext) in the figures' font at `size` (points or a name)."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    font = FontProperties(family=_STYLE["font.family"], size=size, weight=weight)
    renderer = RendererAgg(10, 10, 72.0)  # at 72 dpi one pixel is one point
    return float(renderer.get_text_width_height_descent(text, font, ismath=False)[0])


def wrap_text(text: str, width_pt: float, *, size: Any, weight: str = "normal") -> str:
    """`text` with line breaks so that no line is wider than `width_pt` points: breaks at spaces where it can, inside
    a word (a long path) only where a word alone is too wide. Lines that fit are left as they are."""
    lines: list[str] = []
    for paragraph in str(text).split("\n"):
        if text_width(paragraph, size=size, weight=weight) <= width_pt:
            lines.append(paragraph)
            continue
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if text_width(candidate, size=size, weight=weight) <= width_pt:
                line = candidate
                continue
            if line:
                lines.append(line)
            line = ""
            for char in word:  # a word wider than the line is cut where it must be
                if line and text_width(line + char, size=size, weight=weight) > width_pt:
                    lines.append(line)
                    line = ""
                line += char
        lines.append(line)
    return "\n".join(lines)


def line_markers(n_points: int, values: Any = None) -> dict[str, Any]:
    """Markers for a line of `n_points`: on every point up to 20, else (given the line's `values`) only on its
    isolated points, which a line alone does not draw (`isolated_markers`)."""
    if n_points <= 20:
        return {"marker": "o", "markersize": 2.8}
    return {} if values is None else isolated_markers(values)


def isolated_points(values: Any) -> np.ndarray:
    """Indices of the finite values whose neighbours are both missing (NaN, or the end of the series): a line
    through them draws nothing there (a one-epoch run, a bin filled at one update only)."""
    finite = np.isfinite(np.asarray(values, dtype=np.float64).reshape(-1))
    before = np.concatenate([[False], finite[:-1]])
    after = np.concatenate([finite[1:], [False]])
    return np.flatnonzero(finite & ~before & ~after)


def isolated_markers(values: Any) -> dict[str, Any]:
    """Line options that mark only the isolated points of `values` (nothing when there are none), so a line drawn
    without markers still shows every value."""
    isolated = isolated_points(values)
    if isolated.size == 0:
        return {}
    return {"marker": "o", "markersize": 2.8, "markevery": isolated.tolist()}


def tick_whole_epochs(ax: Any, epochs: Any) -> None:
    """Epoch axes tick whole epochs only (no "1.25" between two epochs). Points within one epoch (a one-epoch run)
    get half an epoch of room on either side of the epoch they end, which is ticked."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    epochs = np.asarray(epochs, dtype=np.float64).reshape(-1)
    epochs = epochs[np.isfinite(epochs)]
    if epochs.size and float(np.ptp(epochs)) < 1.0:
        last = float(np.ceil(epochs.max()))
        ax.set_xlim(min(float(epochs.min()), last) - 0.5, last + 0.5)

