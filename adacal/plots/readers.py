"""What `adacal plot` reads: run folders, their history.jsonl, predictions files and evaluate/calibrate/ood reports.

Each function checks everything it can before returning, so the CLI can fail with one line before drawing or writing
anything. Every file is read through `adacal.sources` (reports and predictions) or `adacal.runs` (a run's history), so
`plot` accepts and refuses the same files as the other commands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adacal.checks import check_non_negative_int, check_positive_int, renamed_options
from adacal.conventions import DEFAULT_N_BINS, LOSS_OPTION_ALIASES, LOSS_OPTION_FLAGS
from adacal.errors import InputError, unknown_name
from adacal.metrics.binning import BinStatistics
from adacal.plots.reliability_diagrams import (
    ReliabilityPanel,
    check_diagram_bins,
    empty_bins_note,
    panel_from_scores,
)
from adacal.plots.roc import RocInput
from adacal.plots.style import _colors_for, _finite, display_name
from adacal.runs import (
    CALIBRATE_FILE,
    HISTORY_FILE,
    PREDICTIONS_FILE,
    RunFolder,
    check_predictions_of_run,
    find_run_folder,
    is_run_folder,
    load_history,
    require_run_folder,
    run_config,
)
from adacal.interpretation import load_predictions
from adacal.sources import ReadOptions, check_report, read_report


@dataclass(frozen=True)
class RunInfo:
    """A run folder and what its config.json says about it."""

    root: Path
    config: Mapping[str, Any]

    def option(self, name: str, default: str = "?") -> str:
        value = self.config.get(name)
        return default if value is None else str(value)

    @property
    def loss(self) -> str:
        return self.option("loss")

    @property
    def history(self) -> list[dict[str, Any]]:
        return load_history(self.root / HISTORY_FILE)


def _path_list(paths: Any) -> list[Any]:
    """The inputs as a list: one path given alone (a str or Path, not a list of them) is one input, not a list of
    its characters."""
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    return list(paths)


def read_run(path: str | os.PathLike) -> RunInfo:
    """The run folder at (or holding) `path`, with its resolved training options."""
    run = require_run_folder(path)
    report = run_config(run, required=True)  # config.json validated once, as every reader of a run reads it
    config = report.get("config") if report is not None else None
    if not isinstance(config, Mapping):
        raise InputError(f"Expected {run.config} to hold the training options under 'config'.")
    return RunInfo(root=run.root, config=config)


def read_adafocal_run(path: str | os.PathLike, command: str = "gamma") -> tuple[RunInfo, list[dict[str, Any]]]:
    """A run trained with AdaFocal and its history; any other loss is an InputError naming it."""
    info = read_run(path)
    if info.loss != "adafocal":
        raise InputError(f"{path} was trained with --loss {info.loss}; plot {command} needs an adafocal run.")
    history = info.history
    _check_adafocal_values(history, info.root / HISTORY_FILE)
    return info, history


def _check_adafocal_values(records: list[dict[str, Any]], path: Path) -> None:
    """The values of the AdaFocal records the γ and correspondence plots draw, within their ranges (the history's
    schema checks their types): edges rising within [0, 1], confidences and accuracies in [0, 1], γ within float32's
    range (the loss computes in float32; matplotlib fails on values near float64's), and bin counts adding up to at
    most `MAX_SAMPLES`. A damaged or hand-edited history is refused in one line naming the epoch and field, never
    drawn as a plausible figure."""
    from adacal.training.config import FLOAT32_MAX

    def values(items: Any) -> np.ndarray:
        return np.array([np.nan if v is None else v for v in items or ()], dtype=np.float64)

    def refuse(epoch: int, field: str, expected: str, found: str) -> InputError:
        return InputError(f"Expected 'adafocal.{field}' of epoch {epoch} in {path} to be {expected}, got {found}.")

    def fractions(epoch: int, field: str, items: Any) -> None:
        known = values(items)
        known = known[~np.isnan(known)]  # null: a bin without a value
        if known.size and (known.min() < -_SLACK or known.max() > 1.0 + _SLACK):
            raise refuse(epoch, field, "fractions in [0, 1]", f"values from {known.min():.6g} to {known.max():.6g}")

    def counts(epoch: int, field: str, items: Any) -> None:
        total = sum(int(v) for v in items or ())  # integers >= 0 (the history's schema)
        if total > MAX_SAMPLES:
            raise refuse(epoch, field, "bin counts adding up to at most 2**53", _count_text(total))

    for record in records:
        block, epoch = record.get("adafocal"), record["epoch"]
        if not isinstance(block, Mapping):
            continue
        for i, update in enumerate(block.get("updates") or ()):
            where = f"updates[{i}]"
            edges = values(update.get("edges"))
            if edges.size and not (bool((np.diff(edges) >= 0).all()) and edges.min() >= -_SLACK
                                   and edges.max() <= 1.0 + _SLACK):
                raise refuse(epoch, f"{where}.edges", "edges rising from 0 to 1",
                             f"values from {np.nanmin(edges):.6g} to {np.nanmax(edges):.6g}")
            gammas = values(update.get("gammas"))
            known = gammas[~np.isnan(gammas)]
            if known.size and np.abs(known).max() > FLOAT32_MAX:
                raise refuse(epoch, f"{where}.gammas", f"within float32's range (|γ| <= {FLOAT32_MAX:.2g})",
                             f"{known[np.argmax(np.abs(known))]:.6g}")
            for field in ("val_confidence", "val_accuracy"):
                fractions(epoch, f"{where}.{field}", update.get(field))
            counts(epoch, f"{where}.counts", update.get("counts"))
        fractions(epoch, "train_confidence", block.get("train_confidence"))
        counts(epoch, "train_counts", block.get("train_counts"))


def _unique(labels: list[str], details: list[tuple[str, ...]]) -> list[str]:
    """Tell apart labels that would otherwise repeat: each input offers details in order of preference (model,
    dataset, seed, folder), and a repeated label gets the first detail that differs between all its inputs."""
    final = list(labels)
    for label in {label for label in labels if labels.count(label) > 1}:
        group = [i for i, other in enumerate(labels) if other == label]
        width = max(len(details[i]) for i in group)
        options = [[details[i][k] if k < len(details[i]) else "" for i in group] for k in range(width)]
        chosen = next((values for values in options if len(set(values)) == len(group) and all(values)), None)
        if chosen is None:
            continue
        for i, detail in zip(group, chosen):
            final[i] = f"{label} ({detail})"
    return final


def _run_details(info: RunInfo | None, path: Path) -> tuple[str, ...]:
    if info is None:
        return (path.parent.name, path.name, str(path))
    seed = info.config.get("seed")
    return (info.option("model", ""), info.option("dataset", ""), "" if seed is None else f"seed {seed}",
            info.root.name, path.name)


def _run_label(info: RunInfo) -> str:
    return display_name(info.loss) if info.loss != "?" else info.root.name


def _holds_a_report(path: Path) -> bool:
    """Whether a .json INPUT is an adacal report (which opens with its schema_version) rather than predictions (an
    object of arrays or an array of samples, read by `load_predictions`)."""
    from adacal.sources import open_regular

    with open_regular(path, "a report or predictions file (.json)") as handle:
        head = handle.read(256).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return head.startswith("{") and '"schema_version"' in head


def _evaluate_bins(path: Path, binning: str, n_bins: int | None) -> tuple[BinStatistics, Any]:
    report = read_report(path, kind="evaluate")
    results = report["results"]
    bins = results.get("bins") if isinstance(results, Mapping) else None
    key = binning.replace("-", "_")
    if not isinstance(bins, Mapping) or not isinstance(bins.get(key), Mapping):
        raise InputError(f"Expected {path} to hold results.bins.{key} (bin statistics), found none.")

    n_samples = results.get("n_samples")

    def stats(entry: Mapping[str, Any], which: str) -> BinStatistics:
        where = f"results.bins.{which}"
        try:
            counts = [int(count) for count in entry["counts"]]  # integers >= 0 (the report's schema)
            total = sum(counts)
            if isinstance(n_samples, int) and not isinstance(n_samples, bool) and total != n_samples:
                raise InputError(f"Expected the counts of {where} in {path} to add up to results.n_samples "
                                 f"({n_samples}), got {_count_text(total)}.")
            if total > MAX_SAMPLES:
                raise InputError(f"Expected the counts of {where} in {path} to add up to at most 2**53 samples, got "
                                 f"{_count_text(total)}.")
            result = BinStatistics(
                edges=_finite(entry["edges"]),
                counts=np.asarray(counts, dtype=np.int64),
                mean_confidence=_finite(entry["mean_confidence"]),
                accuracy=_finite(entry["accuracy"]),
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            raise InputError(f"Expected the bins in {path} to hold edges, counts, mean_confidence and accuracy.") from None
        m = result.counts.size
        if m < 1:
            raise InputError(f"Expected {where} in {path} to hold at least one bin, got none.")
        if result.edges.size != m + 1 or result.mean_confidence.size != m or result.accuracy.size != m:
            raise InputError(f"Expected the bins in {path} to have M + 1 edges and M values per statistic.")
        edges = result.edges
        rising = bool((np.diff(edges) >= 0).all())
        if not (rising and edges.min() >= -_SLACK and edges.max() <= 1.0 + _SLACK):
            order = "" if rising else ", out of order"
            raise InputError(f"Expected the edges of {where} in {path} to rise from 0 to 1 (confidences), got values "
                             f"from {edges.min():.6g} to {edges.max():.6g}{order}.")
        for field in ("mean_confidence", "accuracy"):
            values = getattr(result, field)
            known = values[~np.isnan(values)]  # null: a bin without a value
            if known.size and (known.min() < -_SLACK or known.max() > 1.0 + _SLACK):
                raise InputError(f"Expected {where}.{field} in {path} to be fractions in [0, 1], got values from "
                                 f"{known.min():.6g} to {known.max():.6g}.")
        return result

    chosen = stats(bins[key], key)
    if n_bins is not None and n_bins != chosen.n_bins:
        raise InputError(
            f"{path} holds {chosen.n_bins} {binning} bins; --n-bins {n_bins} needs a predictions file or run folder."
        )
    histogram = stats(bins["equal_width"], "equal_width") if isinstance(bins.get("equal_width"), Mapping) else None
    return chosen, histogram


# The most samples an evaluate.json's bins may count in all: integers up to 2**53 are exact in float64, which the
# diagram's histogram and weights compute in (no data set comes near; 10**30 is a damaged or hand-made file).
MAX_SAMPLES = 2**53
# How far past [0, 1] a confidence or accuracy written by `evaluate` may lie by rounding.
_SLACK = 1e-6


def _count_text(count: int) -> str:
    """A count as a message shows it: in full up to 15 digits, else as a power of ten (10**30 from a damaged file)."""
    return str(count) if count < 10**15 else f"{count:.3g}"


def _load_calibrator(path: Path, method: str) -> tuple[Any, str]:
    """The calibrator `method` ("best": the report's pick) stored in a calibrate.json, rebuilt from its dict; or the
    one calibrator of a file `adacal calibrate --save` wrote (what `evaluate --calibrator` takes)."""
    if path.is_dir():
        path = require_run_folder(path).report(CALIBRATE_FILE)
    report = read_report(path)  # read once; its kind says which of the two files it is
    if report.get("kind") == "calibrator":
        from adacal.calibrators.saving import calibrator_from_report

        fitted = calibrator_from_report(report, path)
        if method not in ("best", fitted.name):
            if not _is_calibrator_name(method):  # a typo: suggest the closest of the two names it may be
                raise unknown_name("calibrator (--method)", method, ("best", fitted.name))
            raise InputError(f"Expected --method best or {fitted.name} with {path}, which holds one {fitted.name} "
                             f"calibrator, got {method!r}.")
        return fitted, fitted.name
    report = check_report(report, path, "calibrate")  # the kind check (and message) of read_report(kind=...)
    results = report["results"]
    stored = results.get("calibrators") if isinstance(results, Mapping) else None
    if not isinstance(stored, Mapping) or not stored:
        raise InputError(f"Expected {path} to hold fitted calibrators under results.calibrators, found none.")
    name = results.get("best") if method == "best" else method
    if method != "best" and name not in stored and not _is_calibrator_name(method):
        raise unknown_name("calibrator (--method)", method, ("best", *stored))  # a typo: suggest the closest
    if name not in stored:
        raise InputError(f"Expected calibrator '{name}' in {path}; it has: {', '.join(sorted(stored))}.")
    entry = stored[name]
    state = entry.get("calibrator") if isinstance(entry, Mapping) else None
    if not isinstance(state, Mapping):
        raise InputError(f"Expected {path} to store calibrator '{name}' as a dict under 'calibrator'.")
    from adacal.calibrators import Calibrator

    params = entry.get("params") if isinstance(entry.get("params"), Mapping) else {}
    temperature = params.get("temperature")
    shown = isinstance(temperature, (int, float)) and not isinstance(temperature, bool)  # true is not a temperature
    described = f"{name} (T = {temperature:.2f})" if shown else str(name)
    return Calibrator.from_dict(dict(state)), described


def _is_calibrator_name(method: str) -> bool:
    """Whether `method` names a calibration method adacal has (which a calibrate.json may just not hold)."""
    from adacal.calibrators import CALIBRATORS

    return method in CALIBRATORS.names()


def _same_input(path: Path) -> Path:
    """What `path` reads, as one path: a run folder (or a folder inside one) stands for its predictions file, and
    links and `..` are resolved; so two spellings of one input compare equal."""
    try:
        if path.is_dir():
            run = find_run_folder(path)
            path = run.predictions if run is not None else path
        return path.resolve()
    except (OSError, RuntimeError):  # unreadable or a link loop: the reader says what is wrong with it
        return path.absolute()


def unique_inputs(paths: Sequence[str | os.PathLike]) -> tuple[list[Path], list[str]]:
    """The inputs of `plot reliability` with repeats left out, in order, and one note (no final period) per input
    left out. An input given twice, a run folder and its predictions file, or a link to either, would draw the same
    diagram twice; it is drawn once, from where it is first given (as `plot curves` draws a repeated run once)."""
    paths = [Path(p) for p in _path_list(paths)]
    positions, notes = _first_positions(paths)
    return [paths[i] for i in positions], notes


def _first_positions(paths: list[Path]) -> tuple[list[int], list[str]]:
    """`unique_inputs` as the positions of the inputs kept."""
    first: dict[Path, int] = {}
    notes: list[str] = []
    for i, path in enumerate(paths):
        key = _same_input(path)
        if key not in first:
            first[key] = i
            continue
        earlier = paths[first[key]]
        note = (f"{path} is given more than once; it is drawn once" if str(earlier) == str(path)
                else f"{path} holds the same predictions as {earlier}; they are drawn once")
        if note not in notes:
            notes.append(note)
    return list(first.values()), notes


def _split_predictions(path: Path, split: str, options: ReadOptions) -> Any:
    """The `split` of a predictions file: "val" only from its `val_` arrays (a file without them holds no validation
    split, and plotting its other arrays under that name would mislead); "test" from `test_` or plain arrays."""
    if split != "val":
        return load_predictions(path, split=split, options=options)
    from adacal.interpretation import load_validation_split

    predictions = load_validation_split(path, options=options)
    if predictions is None:
        raise InputError(f"Expected val_ arrays (val_logits, val_labels) in {path} for --split val, found none: its "
                         "arrays are one set, plotted without --split.")
    return predictions


def reliability_inputs(
    paths: Sequence[str | os.PathLike],
    *,
    binning: str = "equal-width",
    n_bins: int | None = None,
    split: str = "test",
    labels: Sequence[str] | None = None,
    calibrated: str | os.PathLike | None = None,
    method: str = "best",
    bands: str = "none",
    band_samples: int = 1000,
    band_level: float = 0.9,
    seed: int = 0,
    notes_out: list[str] | None = None,
    options: Any = None,
    smooth: bool = False,
) -> list[ReliabilityPanel]:
    """Reliability panels from run folders, predictions files (.npz/.pt) or evaluate.json reports.

    With `calibrated` (a calibrate.json) the one input must hold logits: its panel is followed by a panel of the
    same predictions after the stored calibrator (`method`, default the report's best). `bands` ("consistency",
    "bootstrap" or "none"; see `adacal.plots.bands`) and `smooth` (the smoothed reliability curve) need per-sample
    predictions, not an evaluate.json. What reading the predictions files assumed (binary scores, a dropped index
    column, ...; the notes `adacal evaluate` prints) is added to `notes_out`, when given. `options` (an
    `adacal.sources.ReadOptions`: keys, a labels file, renormalising) says how to read predictions files, as for
    `adacal evaluate`.
    """
    from adacal.arrays import to_probs
    from adacal.metrics.binning import BINNINGS, check_n_bins
    from adacal.plots.bands import check_band_options

    kind, band_samples, band_level = check_band_options(bands, band_samples, band_level)
    check_non_negative_int(seed, "--seed")
    band_options = {"bands": kind, "band_samples": band_samples, "band_level": band_level, "seed": seed}

    if binning not in BINNINGS:
        raise unknown_name("binning (--binning)", str(binning), BINNINGS)
    if n_bins is not None:
        check_positive_int(n_bins, "--n-bins")
        check_diagram_bins(n_bins, "--n-bins")
    if not isinstance(split, str) or split not in ("val", "test"):
        raise unknown_name("split (--split)", str(split), ("test", "val"))
    paths = [Path(p) for p in _path_list(paths)]
    if not paths:
        raise InputError("Expected at least one INPUT (run folder, predictions file or evaluate.json), got none.")
    if labels is not None and len(labels) != len(paths):
        raise InputError(f"Expected one label per INPUT ({len(paths)}), got {len(labels)}.")
    kept, repeats = _first_positions(paths)  # an input given twice is drawn once, with its first label
    paths = [paths[i] for i in kept]
    labels = None if labels is None else [labels[i] for i in kept]
    if notes_out is not None:
        notes_out.extend(note for note in repeats if note not in notes_out)
    if calibrated is None and method != "best":
        raise InputError(f"Expected --calibrated with --method {method} (it picks a calibrator from --calibrated), "
                         "got none.")
    if calibrated is not None and len(paths) != 1:
        raise InputError(f"Expected exactly one INPUT with --calibrated (its calibrator fits one model), got {len(paths)}.")
    for path in paths:
        if not path.exists():
            raise InputError(f"Expected INPUT {path} to be a run folder, predictions file or evaluate.json, "
                             "but it does not exist.")
    bins = check_n_bins(DEFAULT_N_BINS if n_bins is None else n_bins)
    calibrator = _load_calibrator(Path(calibrated), method) if calibrated is not None else None

    panels: list[ReliabilityPanel] = []
    names, details = [], []
    for path in paths:
        run_root = path if path.is_dir() else (path.parent if is_run_folder(path.parent) else None)
        info = read_run(run_root) if run_root is not None else None
        names.append(_run_label(info) if info is not None else path.stem)
        details.append(_run_details(info, path))
        if path.is_dir():
            path = require_run_folder(path).predictions
            if not path.is_file():
                raise InputError(f"Expected the run folder {path.parent} to hold {PREDICTIONS_FILE}, but it does not.")
        if run_root is not None and path.name == PREDICTIONS_FILE and path.parent.resolve() == run_root.resolve():
            check_predictions_of_run(RunFolder(run_root), {})  # not another run's file copied in
        if path.suffix.lower() == ".json" and _holds_a_report(path):
            if calibrator is not None:
                raise InputError(f"--calibrated needs logits, but {path} holds only bin statistics; give predictions.")
            if kind != "none":
                raise InputError(f"--bands {kind} needs per-sample predictions, but {path} holds only bin statistics; "
                                 "give a run folder or predictions file.")
            if smooth:
                raise InputError(f"--smooth needs per-sample predictions, but {path} holds only bin statistics; "
                                 "give a run folder or predictions file.")
            if split != "test":  # evaluate scores the test split only (its config.source.split)
                raise InputError(f"{path} holds bin statistics of the test split; --split {split} needs a "
                                 "predictions file or run folder.")
            stats, histogram = _evaluate_bins(path, binning, n_bins)
            panels.append(ReliabilityPanel(label="", stats=stats, histogram=histogram, binning=binning))
            continue
        try:
            predictions = _split_predictions(path, split, options or ReadOptions())
        except InputError as exc:  # the readers' advice names evaluate's flag; plot's --labels is legend text
            raise InputError(str(exc).replace("--labels FILE", "--labels-file FILE")) from None
        if notes_out is not None:  # what reading the file assumed (binary scores, a dropped index column, ...)
            notes_out.extend(note for note in predictions.notes if note not in notes_out)
        probs, _ = to_probs(predictions.logits)
        panels.append(panel_from_scores(probs, predictions.labels, binning=binning, n_bins=bins, smooth=smooth,
                                        **band_options))
        if calibrator is not None:
            fitted, name = calibrator
            try:  # vector / matrix scaling take only the kind of scores they were fitted on (Calibrator.transform)
                calibrated_probs = np.asarray(fitted.transform(predictions.logits), dtype=np.float64)
            except InputError as exc:
                raise InputError(f"{str(exc).rstrip('.')} (--calibrated, applied to {path}).") from None
            panels.append(panel_from_scores(calibrated_probs, predictions.labels, binning=binning, n_bins=bins,
                                            smooth=smooth, **band_options))
            names.append(f"{names[-1]} + {name}")
            details.append(details[-1])
    if labels is not None:
        final = list(labels) if calibrator is None else [labels[0], f"{labels[0]} + {calibrator[1]}"]
    else:
        final = _unique(names, details)
    colors = _colors_for([(panel_name.split(" + ")[0]) for panel_name in names])
    if notes_out is not None:  # what the diagrams leave out: empty bins of zero width (ties)
        for label, panel in zip(final, panels):
            note = empty_bins_note(panel.stats, detail=True)
            if note is not None and f"{label}: {note}" not in notes_out:
                notes_out.append(f"{label}: {note}")
    return [
        ReliabilityPanel(label=label, stats=panel.stats, histogram=panel.histogram, color=color, bands=panel.bands,
                         smooth=panel.smooth, binning=panel.binning)
        for label, panel, color in zip(final, panels, colors)
    ]


# config.json options that cannot change a run's per-epoch history, so runs that differ only in them (and the seed)
# are seeds of one setting: where the run was written, its name, what it was resumed from, where and how it ran
# (device, data-loading workers, memory layout, data folder: `train --resume` may change device, workers and data_dir
# and still continue the run exactly), which checkpoint was kept at the end (not the history) and how often the test
# split was measured (never trained on; epochs without test metrics are handled like those of a shorter run).
CURVE_BOOKKEEPING = ("out", "name", "resume", "device", "workers", "data_dir", "channels_last", "select",
                     "eval_test_every")
# How a label names an option: loss options as their train flag (γ, λ for the paper's symbols), others by their key.
_OPTION_SYMBOLS = {"gamma": "γ", "lam": "λ", "gamma_max": "γ_max", "gamma_min": "γ_min", "gamma_init": "γ_init"}
_MAX_LABEL_OPTIONS = 2  # more differing options than this: the line is named by its run folder


@dataclass(frozen=True)
class CurveInputs:
    """What `plot curves` draws: each line's label → the histories of its runs (one per seed), its loss (colour), its
    run folders, and notes on runs counted once (one sentence each, no final period)."""

    runs: dict[str, list[list[dict[str, Any]]]]
    losses: dict[str, str]
    folders: dict[str, list[Path]]
    notes: list[str]


def _setting(config: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a run that shape its curve, keyed by path: config.json without the seed and
    `CURVE_BOOKKEEPING`, loss and model options one key each (`("loss_options", "gamma")`; a deprecated spelling
    such as num_bins reads as today's), so runs compare equal exactly when they are seeds of one setting."""
    setting: dict[str, Any] = {}
    for key, value in config.items():
        if key == "seed" or key in CURVE_BOOKKEEPING:
            continue
        if key in ("loss_options", "model_options") and isinstance(value, Mapping):
            options = renamed_options(value, LOSS_OPTION_ALIASES) if key == "loss_options" else value
            setting.update({(key, name): option for name, option in options.items()})
        else:
            setting[(key,)] = value
    return setting


def _option_text(key: tuple[str, ...], value: Any) -> str | None:
    """`γ=0`, `lr=0.01`, `milestones=15,25`: how a label shows one option; None when it is not one simple value."""
    name = key[-1]
    if key[0] == "loss_options":
        name = _OPTION_SYMBOLS.get(name) or LOSS_OPTION_FLAGS.get(name, name).lstrip("-")
    elif key[0] != "model_options":
        name = name.replace("_", "-")

    def scalar(item: Any) -> str | None:
        if item is None or isinstance(item, bool):
            return str(item).lower()
        if isinstance(item, float):
            return str(int(item)) if item.is_integer() else repr(item)
        if isinstance(item, (int, str)):
            return str(item)
        return None

    if isinstance(value, list):  # milestones
        parts = [part for part in map(scalar, value) if part is not None]
        text = (",".join(parts) or "none") if len(parts) == len(value) else None
    else:
        text = scalar(value)
    return None if text is None or len(text) > 24 else f"{name}={text}"


def _setting_labels(settings: list[dict[str, Any]], folders: list[Path]) -> list[str]:
    """What tells apart lines that share a loss (and model, dataset): the options whose values differ between them
    when there are at most two and each is one simple value (" γ=0"), else each line's first run folder
    (" · ce-2")."""
    keys = list(dict.fromkeys(key for setting in settings for key in setting))
    differing = [key for key in keys if any(s.get(key) != settings[0].get(key) for s in settings[1:])]
    if 0 < len(differing) <= _MAX_LABEL_OPTIONS:
        texts = [[text for key in differing if (text := _option_text(key, setting.get(key)))] for setting in settings]
        labels = [" " + ", ".join(parts) for parts in texts if len(parts) == len(differing)]
        if len(set(labels)) == len(settings):
            return labels
    names = [folder.name for folder in folders]
    return [f" · {name}" for name in (names if len(set(names)) == len(names) else map(str, folders))]


def curve_inputs(paths: Sequence[str | os.PathLike]) -> CurveInputs:
    """Run folders grouped into the lines of `plot curves`: runs whose config.json options are equal except the seed
    (and `CURVE_BOOKKEEPING`: output folder, name, device, ...) form one line, their seeds drawn as mean ± std.

    A line is labelled by its loss (with the model and dataset when the runs have several); lines that share that
    label add the options that differ between them ("Focal γ=0", "Focal γ=1000"), or their first run folder's name
    ("CE · ce-lr") when more than two differ or one is not a simple value. A run folder given twice, or a run with
    the same options and seed as one before it (a copy or a rerun, not another seed), is drawn once, from the first
    given: `notes` say so.
    """
    paths = _path_list(paths)
    if not paths:
        raise InputError("Expected at least one RUN folder, got none.")
    infos = [read_run(p) for p in paths]
    notes: list[str] = []
    seen: dict[Path, RunInfo] = {}
    unique: list[RunInfo] = []
    for info in infos:
        where = info.root.resolve()
        if where in seen:
            note = f"{info.root} is given more than once; it is drawn once"
            if note not in notes:
                notes.append(note)
            continue
        seen[where] = info
        unique.append(info)
    histories = {info.root: info.history for info in unique}  # every run's, so a damaged one fails even if left out

    groups: list[tuple[dict[str, Any], list[RunInfo]]] = []
    for info in unique:
        setting = _setting(info.config)
        members = next((members for other, members in groups if other == setting), None)
        if members is None:
            groups.append((setting, [info]))
            continue
        seed = info.config.get("seed")
        twin = next((member for member in members if member.config.get("seed") == seed), None)
        if twin is not None:
            notes.append(f"{info.root} has the same options and seed ({seed}) as {twin.root}, so it is not another "
                         f"seed; only {twin.root} is drawn")
            continue
        members.append(info)

    several_models = len({members[0].option("model") for _, members in groups}) > 1
    several_datasets = len({members[0].option("dataset") for _, members in groups}) > 1
    names, extras = [], []
    for _, members in groups:
        first = members[0]
        names.append(display_name(first.loss))
        extras.append([first.option("model")] * several_models + [first.option("dataset")] * several_datasets)
    details = [""] * len(groups)
    for name, extra in dict.fromkeys((name, tuple(extra)) for name, extra in zip(names, extras)):
        shared = [i for i in range(len(groups)) if (names[i], tuple(extras[i])) == (name, extra)]
        if len(shared) > 1:
            told = _setting_labels([groups[i][0] for i in shared], [groups[i][1][0].root for i in shared])
            for i, text in zip(shared, told):
                details[i] = text
    runs: dict[str, list[list[dict[str, Any]]]] = {}
    losses: dict[str, str] = {}
    folders: dict[str, list[Path]] = {}
    for name, extra, detail, (_, members) in zip(names, extras, details, groups):
        label = " · ".join([name + detail, *extra])
        if label in runs:  # two losses shown alike: never merge lines, name this one by its folder
            label = f"{label} ({members[0].root})"
        runs[label] = [histories[member.root] for member in members]
        losses[label] = members[0].loss
        folders[label] = [member.root for member in members]
    return CurveInputs(runs=runs, losses=losses, folders=folders, notes=notes)


def _ood_reports(path: Path) -> list[Path]:
    """The OOD reports a ROC input names: the file itself, or every OOD report of a run folder."""
    if not path.is_dir():
        from adacal.sources.formats import FORMATS

        if path.suffix.lower() in FORMATS and path.exists():
            raise InputError(
                f"Expected an ood.json report or a run folder, got {path.name}, a predictions file: score it first "
                f"with `adacal ood --in-preds IN --out-preds OUT --json ood.json`."
            )
        return [path]
    from adacal.ood import run_ood_reports

    return run_ood_reports(path)


def roc_inputs(paths: Sequence[str | os.PathLike], labels: Sequence[str] | None = None) -> list[RocInput]:
    """OOD reports (ood.json or ood-<set>.json, or run folders holding them), labelled by their run's loss where
    there is a run; a label given for a run folder applies to each of its reports."""
    paths = _path_list(paths)
    if not paths:
        raise InputError("Expected at least one ood.json, got none.")
    if labels is not None and len(labels) != len(paths):
        raise InputError(f"Expected one label per OOD_JSON ({len(paths)}), got {len(labels)}.")
    expanded = [(report, k) for k, path in enumerate(map(Path, paths)) for report in _ood_reports(path)]
    items, names, details, losses = [], [], [], []
    for path, _ in expanded:
        report = read_report(path, kind="ood")
        info = read_run(path.parent) if is_run_folder(path.parent) else None
        recorded = report.get("config", {}).get("loss")  # the ood report's config: an object, its loss any value
        loss = info.loss if info is not None else (recorded if isinstance(recorded, str) else "")
        names.append(display_name(loss) if loss and loss != "?" else path.stem)
        details.append(_run_details(info, path))
        losses.append(loss or None)
        items.append(report["results"])
    final = [labels[k] for _, k in expanded] if labels is not None else _unique(names, details)
    return [RocInput(label=label, results=results, loss=loss) for label, results, loss in zip(final, items, losses)]
