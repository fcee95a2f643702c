"""Conformal prediction sets of several inputs side by side: test coverage against α with the 1 − α line, and the
set-size histogram at one α, from the `results.levels` of `adacal conformal` reports
(`adacal.commands.conformal.run_conformal`).

Axes labels: "conformal:coverage" and "conformal:sizes"; each input's coverage line has the gid "coverage:<label>",
each of its bars (patches, in size order) "sizes:<label>", the target line "target".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.errors import InputError
from adacal.plots.style import add_title, colors_for, figure_style, new_figure, plain

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.figure import Figure

MAX_SIZE_BARS = 20  # sizes past this are drawn as one bar "≥ 20"


@dataclass(frozen=True)
class ConformalInput:
    """One input's levels (entries of a conformal report's results.levels) and its legend label."""

    label: str
    levels: list[dict[str, Any]]


def size_shares(level: dict[str, Any], largest: int = MAX_SIZE_BARS) -> np.ndarray:
    """The share of test rows per set size 0 … largest (the last bar: size ≥ largest) of one level.

    Example:
        >>> from adacal.plots.conformal import size_shares
        >>> size_shares({"n": 4, "size_distribution": {"1": 3, "5": 1}}, largest=2).tolist()
        [0.0, 0.75, 0.25]
    """
    shares = np.zeros(largest + 1)
    for size, count in level["size_distribution"].items():
        shares[min(int(size), largest)] += count / level["n"]
    return shares


def _checked(inputs: Any) -> list[ConformalInput]:
    items = [item if isinstance(item, ConformalInput) else ConformalInput(*item) for item in inputs]
    if not items:
        raise InputError("Expected at least one input to draw conformal sets for, got none.")
    for item in items:
        if not isinstance(item.levels, list) or not item.levels:
            raise InputError(f"Expected {item.label} to hold at least one conformal level (results.levels), got "
                             "none: give a report 'adacal conformal --json' wrote.")
    return items


def conformal_figure(inputs: Sequence[ConformalInput | tuple[str, list[dict[str, Any]]]], *,
                     size_alpha: float | None = None, title: str | None = None) -> Figure:
    """Coverage against α (error bars: the Clopper–Pearson interval; dashed: 1 − α) and the set-size histogram at
    `size_alpha` (default 0.1 when every input has it, else the first α of the first input), inputs side by side.

    Args:
        inputs: `ConformalInput`s or (label, levels) pairs, levels as in a conformal report's results.levels.
        size_alpha: the α whose set sizes the histogram shows; an input without it is an InputError.
        title: a title above the figure.

    Returns:
        A matplotlib Figure (no pyplot).

    Example:
        >>> from adacal.plots.conformal import conformal_figure
        >>> level = {"alpha": 0.1, "coverage": 0.9, "coverage_interval": [0.8, 0.95], "n": 10, "mean_set_size": 1.2,
        ...          "size_distribution": {"1": 8, "2": 2}}
        >>> fig = conformal_figure([("ce", [level])])
        >>> [line.get_gid() for line in fig.axes[0].lines if line.get_gid()]
        ['target', 'coverage:ce']
    """
    items = _checked(inputs)
    if size_alpha is None:
        common = set.intersection(*({level["alpha"] for level in item.levels} for item in items))
        size_alpha = 0.1 if 0.1 in common else items[0].levels[0]["alpha"]
    chosen = []
    for item in items:
        match = [level for level in item.levels if abs(level["alpha"] - size_alpha) < 1e-12]
        if not match:
            shown = ", ".join(f"{level['alpha']:g}" for level in item.levels)
            raise InputError(f"Expected alpha {size_alpha:g} among the levels of {item.label} for the size "
                             f"histogram, got {shown}: pass --size-alpha one of them.")
        chosen.append(match[0])
    largest = min(MAX_SIZE_BARS, max(max(int(size) for size in level["size_distribution"]) for level in chosen))
    colors = colors_for([item.label for item in items])
    with figure_style():
        fig = new_figure(10.0, 4.8)
        ax = fig.add_subplot(1, 2, 1, label="conformal:coverage")
        alphas = sorted({level["alpha"] for item in items for level in item.levels})
        span = np.array([0.0, max(alphas) * 1.1])
        ax.plot(span, 1 - span, color="0.4", linestyle="--", linewidth=1.0, label="target 1 − α", gid="target")
        for item, color in zip(items, colors):
            levels = sorted(item.levels, key=lambda level: level["alpha"])
            x = np.array([level["alpha"] for level in levels])
            y = np.array([level["coverage"] for level in levels])
            low = np.array([level["coverage_interval"][0] for level in levels])
            high = np.array([level["coverage_interval"][1] for level in levels])
            ax.errorbar(x, y, yerr=np.vstack([y - low, high - y]), color=color, marker="o", markersize=4,
                        linewidth=1.4, capsize=3, label=item.label).lines[0].set_gid(f"coverage:{item.label}")
        ax.set_xlabel("α (miscoverage level)")
        ax.set_ylabel("Test coverage (bars: 95 % Clopper–Pearson)")
        ax.set_title("Coverage against α", parse_math=False)
        ax.set_xlim(0, span[1])
        sizes = fig.add_subplot(1, 2, 2, label="conformal:sizes")
        width = 0.8 / len(items)
        positions = np.arange(largest + 1)
        for index, (item, level, color) in enumerate(zip(items, chosen, colors)):
            bars = sizes.bar(positions - 0.4 + width * (index + 0.5), 100 * size_shares(level, largest), width,
                             color=color, label=f"{item.label}: mean {level['mean_set_size']:.2f}")
            for patch in bars:
                patch.set_gid(f"sizes:{item.label}")
        ticks = [str(size) for size in positions]
        if largest == MAX_SIZE_BARS:
            ticks[-1] = f"≥{MAX_SIZE_BARS}"
        sizes.set_xticks(positions, ticks)
        sizes.set_xlabel("Set size (classes)")
        sizes.set_ylabel("Test rows (%)")
        sizes.set_title(f"Set sizes at α = {size_alpha:g}", parse_math=False)
        for axes in (ax, sizes):
            plain(axes.legend(frameon=False, fontsize="small").get_texts())
        add_title(fig, title)
    return fig


__all__ = ["ConformalInput", "MAX_SIZE_BARS", "conformal_figure", "size_shares"]
