"""What `adacal plot` reads of run folders: their config.json and history.jsonl (`read_run`, the AdaFocal records of
`plot gamma` and `plot correspondence`), the runs of `plot curves` grouped into lines, the ood reports of `plot roc`,
and how inputs are labelled. What `plot reliability` reads (predictions files, evaluate.json, a calibrator) is
`adacal.plots.reliability_readers`.

Each function checks everything it can before returning, so the CLI can fail with one line before drawing or writing
anything. Every file is read through `adacal.sources` (reports) or `adacal.runs` (a run's history), so `plot` accepts
and refuses the same files as the other commands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adacal.checks import renamed_options
from adacal.conventions import LOSS_OPTION_ALIASES, LOSS_OPTION_FLAGS
from adacal.errors import InputError
from adacal.plots.roc import SOURCE_NOT_RECORDED, RocInput
from adacal.plots.style import display_name
from adacal.runs import (
    HISTORY_FILE,
    is_run_folder,
    load_history,
    require_run_folder,
    run_config,
)
from adacal.sources import read_report


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


def as_path_list(paths: Any) -> list[Any]:
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
        if known.size and (known.min() < -FRACTION_SLACK or known.max() > 1.0 + FRACTION_SLACK):
            raise refuse(epoch, field, "fractions in [0, 1]", f"values from {known.min():.6g} to {known.max():.6g}")

    def counts(epoch: int, field: str, items: Any) -> None:
        total = sum(int(v) for v in items or ())  # integers >= 0 (the history's schema)
        if total > MAX_SAMPLES:
            raise refuse(epoch, field, "bin counts adding up to at most 2**53", count_text(total))

    for record in records:
        block, epoch = record.get("adafocal"), record["epoch"]
        if not isinstance(block, Mapping):
            continue
        for i, update in enumerate(block.get("updates") or ()):
            where = f"updates[{i}]"
            edges = values(update.get("edges"))
            if edges.size and not (bool((np.diff(edges) >= 0).all()) and edges.min() >= -FRACTION_SLACK
                                   and edges.max() <= 1.0 + FRACTION_SLACK):
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


def distinct_labels(labels: list[str], details: list[tuple[str, ...]]) -> list[str]:
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


def input_details(info: RunInfo | None, path: Path) -> tuple[str, ...]:
    """What may tell apart an input whose label repeats (for `distinct_labels`), in order of preference: its run's
    model, dataset, seed and folder, then the file's name; without a run, its folder, name and path."""
    if info is None:
        return (path.parent.name, path.name, str(path))
    seed = info.config.get("seed")
    return (info.option("model", ""), info.option("dataset", ""), "" if seed is None else f"seed {seed}",
            info.root.name, path.name)


# The most samples an evaluate.json's bins may count in all: integers up to 2**53 are exact in float64, which the
# diagram's histogram and weights compute in (no data set comes near; 10**30 is a damaged or hand-made file).
MAX_SAMPLES = 2**53
# How far past [0, 1] a confidence or accuracy written by `evaluate` may lie by rounding.
FRACTION_SLACK = 1e-6


def count_text(count: int) -> str:
    """A count as a message shows it: in full up to 15 digits, else as a power of ten (10**30 from a damaged file)."""
    return str(count) if count < 10**15 else f"{count:.3g}"


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
    paths = as_path_list(paths)
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
    from adacal.ood.model import run_ood_reports

    return run_ood_reports(path)


def roc_inputs(paths: Sequence[str | os.PathLike], labels: Sequence[str] | None = None) -> list[RocInput]:
    """OOD reports (ood.json or ood-<set>.json, or run folders holding them), labelled by their run's loss where
    there is a run; a label given for a run folder applies to each of its reports."""
    paths = as_path_list(paths)
    if not paths:
        raise InputError("Expected at least one ood.json, got none.")
    if labels is not None and len(labels) != len(paths):
        raise InputError(f"Expected one label per OOD_JSON ({len(paths)}), got {len(labels)}.")
    expanded = [(report, k) for k, path in enumerate(map(Path, paths)) for report in _ood_reports(path)]
    items, names, details, losses, sources = [], [], [], [], []
    for path, _ in expanded:
        report = read_report(path, kind="ood")
        info = read_run(path.parent) if is_run_folder(path.parent) else None
        config = report.get("config", {})  # the ood report's config: an object, its values any value
        recorded = config.get("loss")
        loss = info.loss if info is not None else (recorded if isinstance(recorded, str) else "")
        names.append(display_name(loss) if loss and loss != "?" else path.stem)
        details.append(input_details(info, path))
        losses.append(loss or None)
        items.append(report["results"])
        sources.append(ood_source(config))
    final = [labels[k] for _, k in expanded] if labels is not None else distinct_labels(names, details)
    return [RocInput(label=label, results=results, loss=loss, source=source)
            for label, results, loss, source in zip(final, items, losses, sources)]


# Where an ood report's OOD set came from (its config.out_source, written by `adacal ood --model`), as figures say it.
_OOD_SOURCES = {
    "generated": "generated by adacal",
    "hendrycks-files": "read from Hendrycks' files",
    "dataset": "the dataset's test split",
    "file": "inputs read from a file",
}


def ood_source(config: Any) -> str:
    """Where the OOD set of an ood report came from, as a phrase for a figure: "generated by adacal with cifar
    severities" (corruptions adacal made, and the severity table it used), "read from Hendrycks' files", "the
    dataset's test split", "inputs read from a file", "scored from saved outputs" (`adacal ood --out-preds`); "source
    not recorded" when the report does not say.

        >>> ood_source({"out_source": "generated", "out_table": "tiny-imagenet"}), ood_source({})
        ('generated by adacal with tiny-imagenet severities', 'source not recorded')
    """
    if not isinstance(config, Mapping):
        return SOURCE_NOT_RECORDED
    source = config.get("out_source")
    if source == "generated":
        # Reports from before tables were recorded used CIFAR's, the only table adacal had then.
        table = config.get("out_table") if isinstance(config.get("out_table"), str) else "cifar"
        return f"{_OOD_SOURCES[source]} with {table} severities"
    if isinstance(source, str) and source in _OOD_SOURCES:
        return _OOD_SOURCES[source]
    if source is None and config.get("model") is None and isinstance(config.get("out_preds"), str):
        return "scored from saved outputs"
    return SOURCE_NOT_RECORDED
