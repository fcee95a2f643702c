"""ROC curves of out-of-distribution detection before and after temperature scaling, from ood.json results.

The axes carries the label "roc"; each curve's gid is "roc:<label>:<pre|post>".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adacal.errors import InputError, unknown_name
from adacal.plots.style import (
    add_title,
    colors_for,
    figure_style,
    floats_from_json,
    new_figure,
    plain,
    set_percent_axes,
    wrap_text,
)

# The axes title is centred over the axes, which the y-axis label shifts right: it may use the figure's width less
# twice that shift and a margin. Legend lines leave room for the line sample in front of them.
_AXES_MARGINS_PT = 80.0
_LEGEND_HANDLE_PT = 60.0

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class RocInput:
    """One OOD report's results (the "results" of ood.json) and how to label it."""

    label: str
    results: Mapping[str, Any]
    loss: str | None = None


def _score_names() -> list[str]:
    """The OOD scores `adacal ood` computes (and names in its reports)."""
    from adacal.metrics.ood import OOD_SCORES

    return list(OOD_SCORES.names())


def _roc_block(results: Mapping[str, Any], score: str, label: str) -> Mapping[str, Any]:
    if not isinstance(results, Mapping):
        raise InputError(f"Expected the OOD results for {label} to be a dict (an ood.json's results), got "
                         f"{type(results).__name__}.")
    scores = results.get("scores")
    if not isinstance(scores, Mapping) or not scores:
        raise InputError(f"Expected the OOD report for {label} to hold results.scores, found none.")
    if score not in scores:
        if score not in _score_names():  # a typo: suggest the closest name (a known score may just be missing)
            raise unknown_name("OOD score (--score)", score, sorted({*_score_names(), *scores}))
        raise InputError(f"Expected OOD score '{score}' in the report for {label}; it has: "
                         f"{', '.join(sorted(scores))}.")
    block = scores[score]
    # a report without a curve would draw nothing and still be listed as drawn
    if not isinstance(block, Mapping) or not any(isinstance(block.get(stage), Mapping) for stage in ("pre", "post")):
        raise InputError(f"Expected the OOD report for {label} to hold a ROC curve for '{score}' "
                         f"(results.scores.{score}.pre or .post), found none.")
    return block


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
    if isinstance(reports, (str, bytes, Mapping)) or not isinstance(reports, Sequence):
        raise InputError(f"Expected a list of OOD reports (RocInput or (label, results)), got "
                         f"{type(reports).__name__}.")
    items = []
    for report in reports:
        if isinstance(report, RocInput):
            items.append(report)
        elif isinstance(report, (tuple, list)) and 2 <= len(report) <= 3:
            items.append(RocInput(*report))
        else:
            raise InputError(f"Expected each OOD report to be a RocInput or (label, results), got "
                             f"{type(report).__name__}.")
    if not items:
        raise InputError("Expected at least one OOD report to draw ROC curves for, got none.")
    if not isinstance(score, str):
        raise unknown_name("OOD score (--score)", str(score), _score_names())
    blocks = [_roc_block(item.results, score, item.label) for item in items]
    colors = colors_for([item.loss or item.label for item in items])
    outs = [str((item.results.get("out") or {}).get("name", "?")) for item in items]
    ins = [str((item.results.get("in") or {}).get("name", "?")) for item in items]
    import matplotlib

    with figure_style():
        fig = new_figure(5.2, 6.0)
        ax = fig.add_subplot(1, 1, 1, label="roc")
        ax.plot([0, 1], [0, 1], color="#888888", linestyle=":", linewidth=1.0, label="Chance (AUROC 50 %)")
        markers = _repeat_markers(colors)
        # Labels and the title carry names from the reports (data sets, files): wrapped so nothing is cut off.
        legend_size = matplotlib.rcParams["legend.fontsize"]
        legend_width = fig.get_figwidth() * 72.0 - _LEGEND_HANDLE_PT
        for item, block, color, out, marker in zip(items, blocks, colors, outs, markers):
            name = item.label if len(set(outs)) == 1 else f"{item.label} → {out}"
            temperature = item.results.get("temperature")
            for stage, style in (("pre", "-"), ("post", "--")):
                entry = block.get(stage)
                if not isinstance(entry, Mapping):
                    continue
                roc = entry.get("roc") or {}
                fpr, tpr = floats_from_json(roc.get("fpr", [])), floats_from_json(roc.get("tpr", []))
                if fpr.size == 0 or fpr.size != tpr.size:
                    raise InputError(f"Expected the OOD report for {item.label} to hold a {stage} ROC curve "
                                     "(results.scores.<score>.<stage>.roc.fpr/tpr of equal length).")
                stage_name = "pre-T" if stage == "pre" else (
                    f"post-T (T = {temperature:.2f})" if isinstance(temperature, (int, float)) else "post-T")
                auroc = entry.get("auroc")
                auroc_text = f"AUROC {100 * auroc:.2f} %" if isinstance(auroc, (int, float)) else "AUROC n/a"
                label = wrap_text(f"{name}, {stage_name}: {auroc_text}", legend_width, size=legend_size)
                line = ax.plot(fpr, tpr, color=color, linestyle=style, **marker, label=label)[0]
                line.set_gid(f"roc:{item.label}:{stage}")
        set_percent_axes(ax, "False positive rate (%): in-distribution flagged", "True positive rate (%): OOD detected",
                      top=1.005)
        shift = f"{ins[0]} → {outs[0]}" if len(set(ins)) == 1 and len(set(outs)) == 1 else "in vs out of distribution"
        title_width = fig.get_figwidth() * 72.0 - _AXES_MARGINS_PT
        ax.set_title(wrap_text(f"OOD detection, {shift} (score: {score})", title_width,
                               size=matplotlib.rcParams["axes.titlesize"]), parse_math=False)
        legend = fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1, frameon=False)
        plain(legend.get_texts())
        add_title(fig, title)
    return fig

