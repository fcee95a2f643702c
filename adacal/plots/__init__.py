"""Figures drawn from arrays the core computes: reliability diagrams, AdaFocal's γ dynamics, training curves, ROC.

Every drawing function returns a `matplotlib.figure.Figure` (built without pyplot, so nothing global changes and no
display is needed) and `save_figure` writes it atomically as PNG, SVG or PDF. matplotlib is imported only inside the
functions, so importing adacal never pays for it. The same input gives the same bytes: fixed style, no timestamps in
SVG/PDF metadata, a fixed SVG hash salt.

One module per figure family: `style` (palette, fonts, saving), `reliability_diagrams` (drawing, with the one-call
`reliability`), `reliability_panels` (what a diagram shows, computed from scores: `ReliabilityPanel`,
`panel_from_scores`), `bands` (consistency and bootstrap bands, numpy only), `adafocal` (γ dynamics, correspondence),
`curves`, `roc`, `risk_coverage`, `shift`, `conformal`; `readers` (run folders and their histories, ood reports)
and `reliability_readers` (predictions and
evaluate.json, asked by a `ReliabilityRequest`) turn adacal's files into their inputs, and `outputs` decides where
`adacal plot` writes and what it may replace. (No module is named `reliability`: that name is the one-call
function.)

Axes carry stable labels (`Axes.get_label()`) so callers and tests can find them: "reliability:<panel>",
"histogram:<panel>", "error:bin-<i>", "gamma:bin-<i>", "edges:bin-<i>", "confidence:bin-<i>", "curves:error",
"curves:ece_em", "roc", "conformal:coverage", "conformal:sizes".
"""

from adacal.plots.adafocal import AdaFocalSeries, adafocal_series, check_bins, correspondence, gamma_dynamics
from adacal.plots.bands import (
    BAND_KINDS,
    ReliabilityBands,
    bootstrap_bands,
    consistency_bands,
    reliability_bands,
)
from adacal.plots.curves import CurveSummary, curve_notes, summarize_curve, training_curves
from adacal.plots.outputs import (
    check_replace,
    clean_stale_temp_files,
    comparison_output,
    default_output,
    figure_kind,
)
from adacal.plots.readers import (
    CurveInputs,
    RunInfo,
    curve_inputs,
    load_history,
    read_adafocal_run,
    read_run,
    roc_inputs,
)
from adacal.plots.reliability_diagrams import (
    MIN_BIN_COUNT,
    ReliabilityDisplay,
    reliability,
    reliability_diagram,
)
from adacal.plots.reliability_panels import ReliabilityPanel
from adacal.plots.reliability_readers import ReliabilityRequest, reliability_inputs
from adacal.plots.roc import RocInput, roc_curves
from adacal.plots.style import (
    DISPLAY_NAMES,
    FORMATS,
    LOSS_COLORS,
    display_name,
    figure_format,
    loss_color,
    save_figure,
)

__all__ = [
    "BAND_KINDS",
    "MIN_BIN_COUNT",
    "ReliabilityBands",
    "ReliabilityDisplay",
    "bootstrap_bands",
    "consistency_bands",
    "reliability",
    "reliability_bands",
    "DISPLAY_NAMES",
    "FORMATS",
    "LOSS_COLORS",
    "AdaFocalSeries",
    "CurveInputs",
    "CurveSummary",
    "ReliabilityPanel",
    "ReliabilityRequest",
    "RocInput",
    "RunInfo",
    "adafocal_series",
    "check_bins",
    "check_replace",
    "clean_stale_temp_files",
    "comparison_output",
    "correspondence",
    "curve_inputs",
    "curve_notes",
    "default_output",
    "display_name",
    "figure_format",
    "figure_kind",
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
