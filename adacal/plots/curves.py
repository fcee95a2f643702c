"""Training curves: error and ECE-EM (%) against epoch for several runs, seeds of one setting as mean ± std.

Seeds that recorded different numbers of epochs (a run stopped early or still training) are drawn over the epochs
they all have, never a mean of fewer runs than the legend says: the legend then says which epochs ("epochs 1–4 of
4/1/20") and `curve_notes` gives the sentence `adacal plot curves` prints. Axes carry the labels "curves:error" and
"curves:ece_em".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adacal.errors import InputError, unknown_name
from adacal.plots.style import add_title, colors_for, figure_style, line_markers, new_figure, plain, tick_whole_epochs

if TYPE_CHECKING:  # pragma: no cover - typing only; matplotlib is imported inside the functions
    from matplotlib.figure import Figure


_CURVE_METRICS = (("error", "error (%)"), ("ece_em", "ECE-EM (%)"))


@dataclass(frozen=True)
class CurveSummary:
    """A metric over epochs for one group of runs: the mean and (population, ddof=0) std across seeds, over the
    epochs every run has; `run_epochs` counts the epochs each run records (more than `epochs` when they differ)."""

    epochs: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    n_runs: int
    run_epochs: tuple[int, ...] = ()

    @property
    def cut(self) -> bool:
        """Whether some run records epochs that are not drawn (the runs have different lengths)."""
        return any(n > self.epochs.size for n in self.run_epochs)

    def drawn(self) -> str:
        """The epochs drawn: "epochs 1–4" or "epoch 1"."""
        first, last = int(self.epochs[0]), int(self.epochs[-1])
        return f"epoch {first}" if first == last else f"epochs {first}–{last}"


def _check_runs(runs: Any) -> None:
    """`runs` as `training_curves` takes it: a mapping of label → a list of histories (one per seed), at least one."""
    if not isinstance(runs, Mapping):
        raise InputError(f"Expected runs to map each line's label to its runs' histories, got {type(runs).__name__}.")
    for label, histories in runs.items():
        if isinstance(histories, (str, bytes, Mapping)) or not isinstance(histories, Sequence) or not histories:
            raise InputError(f"Expected the runs of {label!r} to be a non-empty list of training histories (one per "
                             "seed).")
        for history in histories:
            if isinstance(history, (str, bytes, Mapping)) or not isinstance(history, Sequence):
                raise InputError(f"Expected each training history of {label!r} to be a list of epoch records, got "
                                 f"{type(history).__name__}.")


CURVE_SPLITS = ("auto", "val", "test")


def check_curve_split(split: Any) -> str:
    """`split` of `training_curves` (`plot curves --split`): auto, val or test; else the unknown-name error."""
    if not isinstance(split, str) or split not in CURVE_SPLITS:
        raise unknown_name("split (--split)", str(split), CURVE_SPLITS)
    return split


def choose_curve_split(runs: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]], split: str) -> str:
    """The split `training_curves` draws: `split`, or for "auto" "test" when every history records it, else "val"."""
    split = check_curve_split(split)
    if split != "auto":
        return split
    histories = [h for group in runs.values() for h in group]
    has_test = all(any(isinstance(r, Mapping) and isinstance(r.get("test"), Mapping) for r in h) for h in histories)
    return "test" if has_test else "val"


def epoch_of(record: Any, number: int) -> int:
    """The epoch of the `number`-th record of a training history (a dict with an integer "epoch", as the lines of
    history.jsonl); anything else is an InputError naming the record."""
    if not isinstance(record, Mapping):
        raise InputError(f"Expected history record {number} to be a dict (one line of history.jsonl), got "
                         f"{type(record).__name__}.")
    epoch = record.get("epoch")
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)):
        raise InputError(f"Expected history record {number} to hold an integer 'epoch', got {epoch!r}.")
    return int(epoch)


def summarize_curve(histories: Sequence[Sequence[Mapping[str, Any]]], split: str, metric: str) -> CurveSummary:
    """Mean and std (numpy, ddof=0) of `split.metric` across runs, over the epochs every run has (so each point is
    the mean of all the runs); `run_epochs` keeps how many epochs each run records."""
    per_run = []
    for history in histories:
        values = {}
        for number, record in enumerate(history, start=1):
            epoch = epoch_of(record, number)
            block = record.get(split)
            if isinstance(block, Mapping) and metric in block:
                value = block[metric]
                if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, np.number))):
                    raise InputError(f"Expected {split}.{metric} of history record {number} (epoch {epoch}) to be a "
                                     f"number or null, got {value!r}.")
                values[epoch] = np.nan if value is None else float(value)
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
        run_epochs=tuple(len(values) for values in per_run),
    )


def _legend(label: str, curve: CurveSummary) -> str:
    if curve.n_runs == 1:
        return label
    cut = f", {curve.drawn()} of {'/'.join(map(str, curve.run_epochs))}" if curve.cut else ""
    return f"{label} (mean ± std, {curve.n_runs} seeds{cut})"


def curve_notes(
    runs: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]],
    *,
    split: str = "auto",
    folders: Mapping[str, Sequence[Any]] | None = None,
) -> list[str]:
    """One sentence (no final period) per line of `training_curves(runs, split=split)` whose runs recorded different
    numbers of epochs: which epochs its mean ± std covers; `folders` (label → its runs) names the runs."""
    _check_runs(runs)
    split = choose_curve_split(runs, split)
    split_name = {"val": "validation", "test": "test"}[split]
    notes = []
    for label, histories in runs.items():
        if len(histories) < 2:
            continue
        curves = {unit.replace(" (%)", ""): summarize_curve(histories, split, metric)
                  for metric, unit in _CURVE_METRICS}
        cut: dict[tuple[str, tuple[int, ...]], list[str]] = {}  # the metrics cut alike
        for name, curve in curves.items():
            if curve.cut:
                cut.setdefault((curve.drawn(), curve.run_epochs), []).append(name)
        where = f" ({', '.join(map(str, folders[label]))})" if folders and label in folders else ""
        for (drawn, counts), names in cut.items():
            what = "metrics" if len(names) == len(curves) else names[0]
            listed = ", ".join(map(str, counts[:-1])) + f" and {counts[-1]}"
            notes.append(f"{label}: its {len(histories)} runs{where} record {split_name} {what} for {listed} epochs; "
                         f"mean ± std is drawn over {drawn}, the epochs all of them have")
    return notes


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
    drawn as the mean with a ± std band when there are several, over the epochs they all have (the legend says
    "epochs 1–4 of 4/1/20" when their lengths differ; `curve_notes` says it in a sentence). `losses` maps labels to
    loss names for colours."""
    if not runs:
        raise InputError("Expected at least one run to draw training curves for, got none.")
    _check_runs(runs)
    split = choose_curve_split(runs, split)
    labels = list(runs)
    names = [(losses or {}).get(label, label) for label in labels]
    colors = colors_for(names)
    styles = _repeat_styles(colors)
    split_name = {"val": "Validation", "test": "Test"}[split]
    with figure_style():
        fig = new_figure(8.6, 3.6 + 0.2 * math.ceil(len(labels) / 3))
        axes = [fig.add_subplot(1, 2, i + 1, label=f"curves:{metric}") for i, (metric, _) in enumerate(_CURVE_METRICS)]
        for ax, (metric, unit) in zip(axes, _CURVE_METRICS):
            drawn: list[float] = []
            for label, color, style in zip(labels, colors, styles):
                curve = summarize_curve(runs[label], split, metric)
                drawn.extend(curve.epochs.tolist())
                ax.plot(curve.epochs, 100.0 * curve.mean, color=color, linestyle=style, label=_legend(label, curve),
                        **line_markers(curve.epochs.size, curve.mean))
                if curve.n_runs > 1:
                    band = ax.fill_between(curve.epochs, 100.0 * (curve.mean - curve.std),
                                           100.0 * (curve.mean + curve.std), color=color, alpha=0.2, linewidth=0)
                    band.set_gid(f"band:{label}")
            ax.set_xlabel("Epoch")
            tick_whole_epochs(ax, drawn)
            ax.set_ylabel(f"{split_name} {unit}")
            ax.set_title(f"{split_name} {unit.replace(' (%)', '')}")
            ax.set_ylim(bottom=0.0)
        handles, legend_labels = axes[0].get_legend_handles_labels()
        legend = fig.legend(handles, legend_labels, loc="outside lower center", ncols=min(len(handles), 3),
                            frameon=False)
        plain(legend.get_texts())  # labels come from run options (dataset, model, loss names)
        add_title(fig, title)
    return fig

