"""Risk–coverage curves of selective prediction (Geifman & El-Yaniv 2017) for several inputs side by side, with each
input's oracle and random references, from `adacal.metrics.selective.risk_coverage_curve`.

`risk_coverage_inputs` labels the curves of inputs read as `adacal evaluate` reads them (run folders, checkpoints,
predictions files: `adacal.commands.plot.run_plot_risk_coverage` resolves them); `risk_coverage_figure` draws them.
The axes carries the label "risk-coverage"; each input's curve has the gid "risk-coverage:<label>", its oracle
"oracle:<label>" and its random reference "random:<label>".

- The curve: one point per distinct top-1 confidence, from the highest down (tied samples accepted together),
  coverage (%) against selective risk (%), drawn as steps ending at each point: the area under them is the AURC.
- The oracle: the ranking that accepts every right answer before any wrong one, for the input's own answers:
  risk max(0, 1 − C / (c N)) at coverage c (C right answers of N); its area is `oracle_aurc(N, C)`.
- Random: a ranking that carries no information has, in expectation, the overall error rate at every coverage.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.errors import InputError
from adacal.metrics.selective import RiskCoverage, oracle_aurc
from adacal.plots.readers import distinct_labels, input_details, read_run
from adacal.plots.style import (
    add_title,
    colors_for,
    display_name,
    figure_style,
    new_figure,
    plain,
    set_percent_axes,
    wrap_text,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
    from matplotlib.figure import Figure

# Points on each oracle curve past its bend (risk 1 − C / (c N) is smooth there, drawn exactly at these points).
_ORACLE_POINTS = 201
# Legend lines leave room for the line sample in front of them.
_LEGEND_HANDLE_PT = 60.0


@dataclass(frozen=True)
class RiskCoverageInput:
    """One input's risk–coverage curve (`adacal.metrics.selective.RiskCoverage`) and its legend label; `group`
    picks the colour (inputs of one loss share it), default the label."""

    label: str
    curve: RiskCoverage
    group: str | None = None


def aurc_of_curve(curve: RiskCoverage) -> float:
    """The AURC of a risk–coverage curve: Σ_j (c_j − c_{j−1}) r_j (what `adacal.metrics.aurc` returns).

    Example:
        >>> from adacal.metrics.selective import risk_coverage_curve
        >>> from adacal.plots.risk_coverage import aurc_of_curve
        >>> aurc_of_curve(risk_coverage_curve([[0.9, 0.1], [0.3, 0.7]], [0, 0]))  # 0.5 * 0 + 0.5 * 1/2
        0.25
    """
    widths = np.diff(curve.accepted, prepend=0)
    return float(np.dot(widths, curve.errors / curve.accepted) / curve.n_samples)


def oracle_curve(n_samples: int, n_correct: int) -> tuple[np.ndarray, np.ndarray]:
    """Coverage and selective risk (fractions) of the oracle ranking of N samples with C right: risk 0 up to coverage
    C / N, then 1 − C / (c N), drawn at the coverages i / N the oracle reaches (`_ORACLE_POINTS` of them past C).

    Example:
        >>> from adacal.plots.risk_coverage import oracle_curve
        >>> coverage, risk = oracle_curve(4, 2)
        >>> coverage.tolist(), risk.tolist()
        ([0.0, 0.5, 0.75, 1.0], [0.0, 0.0, 0.3333333333333333, 0.5])
    """
    past = np.unique(np.linspace(n_correct, n_samples, _ORACLE_POINTS).round().astype(np.int64))
    past = past[past > n_correct]
    accepted = np.r_[0, n_correct, past] if n_correct > 0 else np.r_[0, past]
    risk = np.where(accepted > 0, (accepted - n_correct).clip(min=0) / np.maximum(accepted, 1), 0.0)
    if n_correct == 0:
        risk[0] = 1.0  # every answer wrong: the risk is 1 at every coverage
    return accepted / n_samples, risk


def _checked_items(inputs: Any) -> list[RiskCoverageInput]:
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
        raise InputError(f"Expected a list of risk–coverage inputs (RiskCoverageInput or (label, curve)), got "
                         f"{type(inputs).__name__}.")
    items = []
    for item in inputs:
        if isinstance(item, (tuple, list)) and len(item) in (2, 3):
            item = RiskCoverageInput(*item)
        if not isinstance(item, RiskCoverageInput) or not isinstance(item.curve, RiskCoverage):
            raise InputError("Expected each risk–coverage input to be a RiskCoverageInput or (label, curve) with a "
                             f"curve from risk_coverage_curve, got {type(item).__name__}.")
        items.append(item)
    if not items:
        raise InputError("Expected at least one input to draw a risk–coverage curve for, got none.")
    return items


def risk_coverage_figure(inputs: Sequence[RiskCoverageInput | tuple[str, RiskCoverage]], *,
                         title: str | None = None) -> Figure:
    """Risk–coverage curves (selective risk against coverage, in %) of several inputs on one axes, each with its
    oracle (dashed) and random (dotted) reference in its colour, AURC in the legend.

    Args:
        inputs: `RiskCoverageInput`s, or (label, curve) pairs, the curves from `risk_coverage_curve`.
        title: a title above the figure.

    Returns:
        A matplotlib Figure (no pyplot).

    Example:
        >>> from adacal.metrics.selective import risk_coverage_curve
        >>> from adacal.plots.risk_coverage import risk_coverage_figure
        >>> curve = risk_coverage_curve([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], [0, 0, 1])
        >>> fig = risk_coverage_figure([("ce", curve)])
        >>> sorted(line.get_gid() for line in fig.axes[0].lines)
        ['oracle:ce', 'random:ce', 'risk-coverage:ce']
    """
    import matplotlib

    items = _checked_items(inputs)
    colors = colors_for([item.group or item.label for item in items])
    with figure_style():
        fig = new_figure(5.2, 6.0)
        # Labels carry names from the inputs (files, folders): wrapped so nothing is cut off.
        size, width = matplotlib.rcParams["legend.fontsize"], fig.get_figwidth() * 72.0 - _LEGEND_HANDLE_PT

        def wrap(text: str) -> str:
            return wrap_text(text, width, size=size)

        ax = fig.add_subplot(1, 1, 1, label="risk-coverage")
        for item, color in zip(items, colors):
            curve = item.curve
            n, errors = curve.n_samples, int(curve.errors[-1])
            error_rate = errors / n
            line = ax.plot(curve.coverage, curve.risk, color=color, drawstyle="steps-pre", linewidth=1.6,
                           label=wrap(f"{item.label}: AURC {100 * aurc_of_curve(curve):.2f} %"))[0]
            line.set_gid(f"risk-coverage:{item.label}")
            coverage, risk = oracle_curve(n, n - errors)
            oracle = ax.plot(coverage, risk, color=color, linestyle="--", linewidth=1.0,
                             label=wrap(f"{item.label}, oracle: AURC {100 * oracle_aurc(n, n - errors):.2f} %"))[0]
            oracle.set_gid(f"oracle:{item.label}")
            random = ax.plot([0.0, 1.0], [error_rate, error_rate], color=color, linestyle=":", linewidth=1.0,
                             label=wrap(f"{item.label}, random: risk {100 * error_rate:.2f} %"))[0]
            random.set_gid(f"random:{item.label}")
        # Room above the highest risk drawn (at most 100 %), so a curve near the top is not cut by the frame.
        highest = max(float(np.max(item.curve.risk)) for item in items)
        set_percent_axes(ax, "Coverage (%): share of samples accepted, most confident first",
                         "Selective risk (%): error among the accepted", top=min(1.005, max(0.01, 1.05 * highest)))
        ax.set_title("Risk–coverage (lower is better)", parse_math=False)
        legend = fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1, frameon=False)
        plain(legend.get_texts())
        add_title(fig, title)
    return fig


def curve_of_predictions(predictions: Any) -> RiskCoverage:
    """The risk–coverage curve of predictions as `adacal evaluate` reads them: class scores (`Predictions`: logits
    or probabilities and labels) or top-label (confidence, correct) pairs (`TopLabelPredictions`).

    Example:
        >>> from adacal.interpretation.confidence import TopLabelPredictions
        >>> from adacal.plots.risk_coverage import curve_of_predictions
        >>> pairs = TopLabelPredictions(np.array([0.9, 0.6, 0.6]), np.array([True, False, True]))
        >>> curve_of_predictions(pairs).risk.tolist()  # the two 0.6 are accepted together
        [0.0, 0.3333333333333333]
    """
    from adacal.metrics.confidences import prepare_confidences
    from adacal.metrics.selective import risk_coverage_curve

    if hasattr(predictions, "confidences") and hasattr(predictions, "correct"):
        return risk_coverage_curve(prepare_confidences(predictions.confidences, predictions.correct), None)
    return risk_coverage_curve(predictions.logits, predictions.labels)


def risk_coverage_inputs(resolved: Sequence[tuple[str | os.PathLike, Any]], *,
                         labels: Sequence[str] | None = None) -> list[RiskCoverageInput]:
    """Labelled risk–coverage curves of inputs already read: (path as given, predictions) pairs, the predictions
    as `adacal.commands.inputs.resolve_evaluation_input` reads a run folder, checkpoint or predictions file. Each is
    labelled by `labels` (one per input) or else by its run's loss (a path in a run folder), else the file's stem;
    labels that repeat are told apart by model, dataset, seed or folder.

        >>> from adacal.plots.risk_coverage import risk_coverage_inputs
        >>> [item.label for item in risk_coverage_inputs([("runs/ce", ce), ("runs/adafocal", ada)])]  # doctest: +SKIP
        ['CE', 'AdaFocal']
    """
    from adacal.runs import is_run_folder

    if labels is not None and len(labels) != len(resolved):
        raise InputError(f"Expected --labels to give one label per INPUT ({len(resolved)}), got {len(labels)}.")
    curves, names, details, groups = [], [], [], []
    for given, predictions in resolved:
        path = Path(given)
        run_root = path if path.is_dir() else (path.parent if is_run_folder(path.parent) else None)
        info = read_run(run_root) if run_root is not None else None
        known = info is not None and info.loss != "?"
        name = (display_name(info.loss) if known else info.root.name) if info is not None else path.stem
        names.append(name)
        groups.append(info.loss if known else name)
        details.append(input_details(info, path))
        curves.append(curve_of_predictions(predictions))
    final = list(labels) if labels is not None else distinct_labels(names, details)
    return [RiskCoverageInput(label, curve, group) for label, curve, group in zip(final, curves, groups)]


__all__ = ["RiskCoverageInput", "aurc_of_curve", "oracle_curve", "curve_of_predictions", "risk_coverage_figure",
           "risk_coverage_inputs"]
