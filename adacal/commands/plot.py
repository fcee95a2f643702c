"""`adacal plot` as library calls: reliability diagrams, AdaFocal's γ dynamics, C_train/C_val correspondence, training,
ROC and risk–coverage curves, calibration under shift, conformal sets, each read, drawn and written by one
`run_plot_*` call.

Reading inputs and drawing is `adacal.plots`; here each figure's output path is chosen and checked before anything is
read (`adacal.plots.outputs`: a figure of several inputs goes to `plots/compare-<kind>-<names>.png` in the current
folder; an existing file is replaced only when it is a figure of the same kind, else `force`), and the figure is
written atomically, so a failed call leaves nothing behind. Warnings raised while drawing (numpy, matplotlib) are
held back and returned, so that a caller prints them after the figure is written, or not at all after a failure.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adacal.errors import InputError


@dataclass(frozen=True)
class PlotRun:
    """What a `run_plot_*` call did: the figure written, what a reader must know, and warnings held while drawing."""

    written: Path
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_dpi(dpi: Any) -> int:
    """--dpi as an int in [10, 2400].

    >>> check_dpi(150)
    150
    """
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 10 <= dpi <= 2400:
        raise InputError(f"Expected --dpi to be an integer between 10 and 2400, got {dpi!r}.")
    return dpi


def parse_bins(text: str | None) -> list[int] | None:
    """Bin indices from "0,7,14" (None or "" → all bins).

    >>> parse_bins("0, 7,14"), parse_bins(None)
    ([0, 7, 14], None)
    """
    if text is None or not text.strip():
        return None
    bins = []
    for token in text.split(","):
        token = token.strip()
        # ASCII digits only: str.isdigit() also admits "²" or "١", which int() then refuses with a traceback
        if not re.fullmatch(r"[+-]?[0-9]+", token):
            raise InputError(f"Expected --bins to be comma-separated bin indices such as 0,7,14, got {text!r}.")
        bins.append(int(token))
    return bins


def parse_labels(text: str | None, count: int) -> list[str] | None:
    """Panel labels from "a,b,c"; there must be one per input.

    >>> parse_labels("ce, adafocal", 2)
    ['ce', 'adafocal']
    """
    if text is None:
        return None
    labels = [label.strip() for label in text.split(",")]
    if len(labels) != count or not all(labels):
        raise InputError(f"Expected --labels to give {count} non-empty label(s) separated by commas, got {text!r}.")
    return labels


@contextmanager
def held_warnings() -> Iterator[list[str]]:
    """Collect Python warnings and matplotlib's logged warnings instead of printing them as they happen."""
    held: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            held.append(record.getMessage())

    logger = logging.getLogger("matplotlib")
    handler, propagate = Collect(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield held
            held.extend(f"{w.category.__name__}: {w.message}" for w in caught)
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def draw_figure(kind: str, inputs: Sequence[Path], build: Callable[[], Any], *, out: Path | None = None,
                dpi: int = 150, force: bool = False, name: str | None = None,
                extra_inputs: Sequence[Path | None] = ()) -> PlotRun:
    """Check the output path, build the figure (which reads and checks the inputs), then write it atomically.

    `name` is the default file name's kind when it differs from `kind` (a reliability figure with a calibrated
    panel)."""
    from adacal import plots
    from adacal.writing import check_output

    if out is not None:
        target = Path(out)
    elif len(inputs) > 1:
        target = plots.comparison_output(inputs, name or kind)
    else:
        target = plots.default_output(inputs[0], name or kind)
    plots.figure_format(target)
    check_dpi(dpi)
    check_output(target, flag="--out", inputs=(*inputs, *extra_inputs), force=force)
    plots.check_replace(target, kind, force=force)
    with held_warnings() as held:
        figure = build()
        written = plots.save_figure(figure, target, dpi=dpi, kind=kind)
    return PlotRun(Path(written), warnings=[" ".join(message.split()) for message in dict.fromkeys(held)])


def run_plot_reliability(inputs: Sequence[Path], *, binning: str = "equal-width", n_bins: int | None = None,
                         split: str = "test", calibrated: Path | None = None, method: str = "best",
                         bands: str = "none", band_samples: int = 1000, band_level: float = 0.9, seed: int = 0,
                         smooth: bool = False, min_bin_count: int = 10, labels: str | None = None,
                         options: Any = None, out: Path | None = None, force: bool = False, dpi: int = 150,
                         title: str | None = None, group_by: str | None = None, corp: bool = False,
                         positive: bool = False) -> PlotRun:
    """`adacal plot reliability`: reliability diagrams of run folders, predictions files or evaluate.json reports,
    side by side (`labels`: "a,b,c", one per input; `options`: how to read predictions files, a
    `adacal.sources.ReadOptions`); with `group_by`, one diagram per group of the one input's samples
    (`adacal.plots.reliability_groups`); `positive`: a binary model's positive-class diagrams (default file name
    `...-reliability-positive.png`)."""
    from adacal import plots
    from adacal.plots.reliability_readers import unique_inputs

    notes: list[str] = []
    inputs = [Path(path) for path in inputs]

    def build() -> Any:
        request = plots.ReliabilityRequest(
            inputs, binning=binning, n_bins=n_bins, split=split, labels=parse_labels(labels, len(inputs)),
            calibrated=calibrated, method=method, bands=bands, band_samples=band_samples, band_level=band_level,
            seed=seed, smooth=smooth, options=options, group_by=group_by, corp=corp, positive=positive,
        )
        panels = plots.reliability_inputs(request, notes_out=notes)
        return plots.reliability_diagram(panels, title=title, min_count=min_bin_count)

    # An input given twice is drawn once (reliability_inputs notes it), so it is named like one input, too.
    run = draw_figure("reliability", unique_inputs(inputs)[0], build, out=out, dpi=dpi, force=force,
                      name="reliability" + "-positive" * positive + "-calibrated" * (calibrated is not None),
                      extra_inputs=(calibrated,))
    return PlotRun(run.written, notes, run.warnings)


def run_plot_adafocal(kind: str, run: Path, *, bins: str | None = None, out: Path | None = None, dpi: int = 150,
                      title: str | None = None, force: bool = False) -> PlotRun:
    """`adacal plot gamma` (`kind` "gamma") and `adacal plot correspondence`: per-bin panels from an AdaFocal run's
    history (`bins`: "0,7,14"; default all, or 30 evenly spaced)."""
    from adacal import plots

    def build() -> Any:
        chosen = parse_bins(bins)
        _, history = plots.read_adafocal_run(run, kind)
        draw = plots.gamma_dynamics if kind == "gamma" else plots.correspondence
        return draw(history, chosen, title=title)

    return draw_figure(kind, [Path(run)], build, out=out, dpi=dpi, force=force)


def run_plot_curves(runs: Sequence[Path], *, split: str = "auto", out: Path | None = None, force: bool = False,
                    dpi: int = 150, title: str | None = None) -> PlotRun:
    """`adacal plot curves`: error and ECE-EM against epoch for several runs, seeds of one setting as mean ± std."""
    from adacal import plots
    from adacal.plots.curves import check_curve_split

    notes: list[str] = []

    def build() -> Any:
        check_curve_split(split)  # before reading the runs
        inputs = plots.curve_inputs(runs)
        figure = plots.training_curves(inputs.runs, split=split, losses=inputs.losses, title=title)
        notes.extend(inputs.notes + plots.curve_notes(inputs.runs, split=split, folders=inputs.folders))
        return figure

    run = draw_figure("curves", [Path(path) for path in runs], build, out=out, dpi=dpi, force=force)
    return PlotRun(run.written, notes, run.warnings)


def run_plot_roc(reports: Sequence[Path], *, score: str = "entropy", labels: str | None = None,
                 out: Path | None = None, force: bool = False, dpi: int = 150, title: str | None = None) -> PlotRun:
    """`adacal plot roc`: ROC curves of OOD detection before and after temperature scaling, from ood reports or run
    folders holding them."""
    from adacal import plots

    reports = [Path(path) for path in reports]

    def build() -> Any:
        items = plots.roc_inputs(reports, parse_labels(labels, len(reports)))
        return plots.roc_curves(items, score=score, title=title)

    return draw_figure("roc", reports, build, out=out, dpi=dpi, force=force)


def run_plot_risk_coverage(inputs: Sequence[Path], *, labels: str | None = None, options: Any = None,
                           data_dir: Path | None = None, device: str = "auto", out: Path | None = None,
                           force: bool = False, dpi: int = 150, title: str | None = None) -> PlotRun:
    """`adacal plot risk-coverage`: the risk–coverage curves of run folders, checkpoints or predictions files side by
    side, each read as `adacal evaluate` reads it (its test split; a checkpoint without saved outputs is run on
    `data_dir` with `device`), with its oracle and random references (`labels`: "a,b", one per input; `options`: how
    to read predictions files, a `adacal.sources.ReadOptions`). An input given twice is drawn once."""
    from adacal.commands.inputs import resolve_evaluation_input
    from adacal.plots.reliability_readers import unique_inputs
    from adacal.plots.risk_coverage import risk_coverage_figure, risk_coverage_inputs
    from adacal.sources import ReadOptions

    given = [Path(path) for path in inputs]
    if not given:
        raise InputError("Expected at least one INPUT (run folder, checkpoint or predictions file), got none.")
    chosen = parse_labels(labels, len(given))  # before reading anything
    kept, notes = unique_inputs(given)
    if chosen is not None:  # an input given twice keeps its first label
        first: dict[str, str] = {}
        for path, label in zip(given, chosen):
            first.setdefault(str(path), label)
        chosen = [first[str(path)] for path in kept]

    def build() -> Any:
        resolved = []
        for path in kept:
            try:
                source = resolve_evaluation_input(path, data_dir=data_dir, device=device,
                                                  options=options or ReadOptions())
            except InputError as exc:  # the readers' advice names evaluate's --labels; here it is --labels-file
                raise InputError(str(exc).replace("--labels FILE", "--labels-file FILE").replace(
                    "Expected --labels only", "Expected --labels-file only")) from None
            notes.extend(note for note in source.predictions.notes if note not in notes)
            resolved.append((path, source.predictions))
        return risk_coverage_figure(risk_coverage_inputs(resolved, labels=chosen), title=title)

    run = draw_figure("risk-coverage", kept, build, out=out, dpi=dpi, force=force)
    return PlotRun(run.written, notes, run.warnings)


PLOT_ALPHAS = "0.05,0.1,0.15,0.2,0.3"


def conformal_levels(path: Path, *, alpha: str | None = None, score: str | None = None,
                     calibrator: Path | None = None, seed: int = 0, options: Any = None) -> list[dict[str, Any]]:
    """The conformal levels (results.levels) an input of `plot conformal` stands for: a report `adacal conformal
    --json` wrote, read as it is (no other option may change it), else `run_conformal` on the input (a run folder
    or predictions file, read as `calibrate` reads it) at `alpha` (default PLOT_ALPHAS)."""
    from adacal.commands.conformal import CONFORMAL_KIND, run_conformal

    if path.suffix.lower() == ".json" and path.is_file():
        from adacal.sources.documents import read_report

        if alpha is not None or score is not None or calibrator is not None:
            raise InputError(f"Expected --alpha, --score and --calibrator only with run folders or predictions files, "
                             f"not with the report {path.name}, whose sets are fitted already.")
        levels = read_report(path, kind=CONFORMAL_KIND)["results"].get("levels")
        if not isinstance(levels, list) or not levels or not all(isinstance(level, dict) for level in levels):
            raise InputError(f"Expected results.levels in {path} to be a non-empty list, got "
                             f"{type(levels).__name__}: write the report with adacal conformal --json.")
        return levels
    return run_conformal(path, alpha=alpha or PLOT_ALPHAS, score=score, calibrator=calibrator, seed=seed,
                         options=options).results["levels"]


def run_plot_conformal(inputs: Sequence[Path], *, alpha: str | None = None, score: str | None = None,
                       calibrator: Path | None = None, seed: int = 0, size_alpha: float | None = None,
                       labels: str | None = None, options: Any = None, out: Path | None = None, force: bool = False,
                       dpi: int = 150, title: str | None = None) -> PlotRun:
    """`adacal plot conformal`: coverage against α and set-size histograms of several inputs side by side: conformal
    reports (`adacal conformal --json`), or run folders and predictions files fitted here (`conformal_levels`;
    `calibrator` applied first to each). `labels`: "a,b", one per input (default: the file or folder name)."""
    from adacal.plots.conformal import ConformalInput, conformal_figure

    given = [Path(path) for path in inputs]
    if not given:
        raise InputError("Expected at least one INPUT (conformal report, run folder or predictions file), got none.")
    chosen = parse_labels(labels, len(given)) or [path.stem if path.is_file() else path.name for path in given]
    if size_alpha is not None:
        from adacal.conformal import check_alpha

        check_alpha(size_alpha)

    def build() -> Any:
        items = [ConformalInput(label, conformal_levels(path, alpha=alpha, score=score, calibrator=calibrator,
                                                        seed=seed, options=options))
                 for path, label in zip(given, chosen)]
        return conformal_figure(items, size_alpha=size_alpha, title=title)

    return draw_figure("conformal", given, build, out=out, dpi=dpi, force=force,
                       extra_inputs=(calibrator, getattr(options, "labels_file", None)))


def run_plot_shift(reports: Sequence[Path], *, metric: str = "ece_em", labels: str | None = None,
                   out: Path | None = None, force: bool = False, dpi: int = 150, title: str | None = None) -> PlotRun:
    """`adacal plot shift`: a metric per corruption severity, boxes over corruptions, inputs side by side, before and
    after temperature scaling, from shift reports or run folders holding shift.json."""
    from adacal.plots.shift import check_shift_metric, shift_figure, shift_inputs

    reports = [Path(path) for path in reports]
    check_shift_metric(metric)  # before reading anything

    def build() -> Any:
        return shift_figure(shift_inputs(reports, parse_labels(labels, len(reports))), metric=metric, title=title)

    return draw_figure("shift", reports, build, out=out, dpi=dpi, force=force)


__all__ = ["PLOT_ALPHAS", "PlotRun", "check_dpi", "conformal_levels", "draw_figure", "held_warnings", "parse_bins",
           "parse_labels", "run_plot_adafocal", "run_plot_conformal", "run_plot_curves", "run_plot_reliability",
           "run_plot_risk_coverage", "run_plot_roc", "run_plot_shift"]
