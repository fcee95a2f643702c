"""Figures drawn from arrays the core computes: reliability diagrams, AdaFocal's γ dynamics, training curves, ROC.

Every drawing function returns a `matplotlib.figure.Figure` (built without pyplot, so nothing global changes and no
display is needed) and `save_figure` writes it atomically as PNG, SVG or PDF. matplotlib is imported only inside the
functions, so importing adacal never pays for it. The same input gives the same bytes: fixed style, no timestamps in
SVG/PDF metadata, a fixed SVG hash salt.

One module per figure family: `style` (palette, fonts, saving), `reliability_diagrams`, `adafocal` (γ dynamics,
correspondence), `curves`, `roc`; `readers` turns adacal's files (run folders, predictions, reports) into their inputs.

Axes carry stable labels (`Axes.get_label()`) so callers and tests can find them: "reliability:<panel>",
"histogram:<panel>", "error:bin-<i>", "gamma:bin-<i>", "edges:bin-<i>", "confidence:bin-<i>", "curves:error",
"curves:ece_em", "roc".
"""

from adacal.plots.adafocal import AdaFocalSeries, adafocal_series, check_bins, correspondence, gamma_dynamics
from adacal.plots.curves import CurveSummary, summarize_curve, training_curves
from adacal.plots.readers import (
    RunInfo,
    curve_inputs,
    default_output,
    load_history,
    read_adafocal_run,
    read_run,
    reliability_inputs,
    roc_inputs,
)
from adacal.plots.reliability_diagrams import ReliabilityPanel, expected_calibration_error, reliability_diagram
from adacal.plots.roc import RocInput, roc_curves
from adacal.plots.style import (
    DISPLAY_NAMES,
    FORMATS,
    LOSS_COLORS,
    _percent_tick,
    display_name,
    figure_format,
    loss_color,
    save_figure,
)

__all__ = [
    "DISPLAY_NAMES",
    "FORMATS",
    "LOSS_COLORS",
    "AdaFocalSeries",
    "CurveSummary",
    "ReliabilityPanel",
    "RocInput",
    "RunInfo",
    "adafocal_series",
    "check_bins",
    "correspondence",
    "curve_inputs",
    "default_output",
    "display_name",
    "expected_calibration_error",
    "figure_format",
    "gamma_dynamics",
    "load_history",
    "loss_color",
    "read_adafocal_run",
    "read_run",
    "reliability_diagram",
    "reliability_inputs",
    "roc_curves",
    "roc_inputs",
    "save_figure",
    "summarize_curve",
    "training_curves",
]
