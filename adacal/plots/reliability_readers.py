"""What `adacal plot reliability` reads: run folders, predictions files and evaluate.json reports, turned into checked
reliability panels (`reliability_inputs`, asked by one `ReliabilityRequest`), with a calibrate.json's calibrator
applied when asked.

Each input is read through `adacal.sources` and `adacal.interpretation`, so `plot` accepts and refuses the same files
as `adacal evaluate`; everything is checked before drawing or writing anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from adacal.checks import check_non_negative_int, check_positive_int
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError, unknown_name
from adacal.interpretation import load_predictions
from adacal.metrics.binning import BinStatistics, calibration_error
from adacal.plots.readers import (
    FRACTION_SLACK,
    MAX_SAMPLES,
    RunInfo,
    as_path_list,
    count_text,
    distinct_labels,
    input_details,
    read_run,
)
from adacal.plots.reliability_diagrams import check_diagram_bins, empty_bins_note
from adacal.plots.reliability_panels import ReliabilityPanel, panel_from_scores
from adacal.plots.style import colors_for, display_name, floats_from_json
from adacal.runs import (
    CALIBRATE_FILE,
    PREDICTIONS_FILE,
    RunFolder,
    check_predictions_of_run,
    find_run_folder,
    is_run_folder,
    require_run_folder,
)
from adacal.sources import ReadOptions, check_report, read_report


@dataclass(frozen=True)
class ReliabilityRequest:
    """What `adacal plot reliability` draws: its inputs and the options that read, bin and band them. It only holds
    them; `reliability_inputs` checks them, each error naming the command's flag.

    - `paths`: run folders, predictions files or evaluate.json reports (a single path alone is one input); an input
      given twice is drawn once, with its first label.
    - `binning` ("equal-width" or "equal-mass") and `n_bins` (None: 15, or an evaluate.json's own bins).
    - `split`: "test", or "val" (a predictions file's `val_` arrays).
    - `labels`: one legend label per input (None: the run's loss, told apart by model, dataset, seed or folder).
    - `calibrated`: a calibrate.json (or a calibrator file `adacal calibrate --save` wrote) whose calibrator `method`
      ("best": the report's pick) is applied to the one input, drawn as a second panel.
    - `bands` ("none", "consistency" or "bootstrap"; see `adacal.plots.bands`) with `band_samples` resamples at
      `band_level`, drawn with `seed`; `smooth`: the smoothed reliability curve; `corp`: the CORP (PAV) curve with
      its consistency band (`band_samples` outcome sets at `band_level`, `seed`).
    - `options`: how to read predictions files (an `adacal.sources.ReadOptions`: keys, a labels file, renormalising),
      as for `adacal evaluate`.
    - `group_by`: a group key of the one input (a predictions file or run folder): one diagram per group
      (`adacal.plots.reliability_groups`; no `labels` or `calibrated` then).
    - `positive`: a binary model's positive-class diagrams (P(class 1) against the frequency of class 1, what
      scikit-learn's CalibrationDisplay draws); inputs of other than two classes' scores are refused.
    """

    paths: Sequence[str | os.PathLike] | str | os.PathLike
    binning: str = "equal-width"
    n_bins: int | None = None
    split: str = "test"
    labels: Sequence[str] | None = None
    calibrated: str | os.PathLike | None = None
    method: str = "best"
    bands: str = "none"
    band_samples: int = 1000
    band_level: float = 0.9
    seed: int = 0
    smooth: bool = False
    corp: bool = False
    options: ReadOptions | None = None
    group_by: str | None = None
    positive: bool = False


def _run_label(info: RunInfo) -> str:
    return display_name(info.loss) if info.loss != "?" else info.root.name


def _holds_a_report(path: Path) -> bool:
    """Whether a .json INPUT is an adacal report (which opens with its schema_version) rather than predictions (an
    object of arrays or an array of samples, read by `load_predictions`)."""
    from adacal.sources import open_regular

    with open_regular(path, "a report or predictions file (.json)") as handle:
        head = handle.read(256).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return head.startswith("{") and '"schema_version"' in head


def _evaluate_bins(path: Path, binning: str, n_bins: int | None) -> tuple[BinStatistics, Any, dict[str, float]]:
    """An evaluate.json's `binning` bins (checked), its equal-width bins (the histogram; None without them) and the
    ECE-EM and ECE-EW it stores (`_stored_eces`)."""
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
                                 f"({n_samples}), got {count_text(total)}.")
            if total > MAX_SAMPLES:
                raise InputError(f"Expected the counts of {where} in {path} to add up to at most 2**53 samples, got "
                                 f"{count_text(total)}.")
            result = BinStatistics(
                edges=floats_from_json(entry["edges"]),
                counts=np.asarray(counts, dtype=np.int64),
                mean_confidence=floats_from_json(entry["mean_confidence"]),
                accuracy=floats_from_json(entry["accuracy"]),
            )
        except InputError:  # (a ValueError too) already one sentence naming the problem
            raise
        except (KeyError, TypeError, ValueError, OverflowError):
            raise InputError(f"Expected the bins in {path} to hold edges, counts, mean_confidence and "
                             "accuracy.") from None
        m = result.counts.size
        if m < 1:
            raise InputError(f"Expected {where} in {path} to hold at least one bin, got none.")
        if result.edges.size != m + 1 or result.mean_confidence.size != m or result.accuracy.size != m:
            raise InputError(f"Expected the bins in {path} to have M + 1 edges and M values per statistic.")
        edges = result.edges
        rising = bool((np.diff(edges) >= 0).all())
        if not (rising and edges.min() >= -FRACTION_SLACK and edges.max() <= 1.0 + FRACTION_SLACK):
            order = "" if rising else ", out of order"
            raise InputError(f"Expected the edges of {where} in {path} to rise from 0 to 1 (confidences), got values "
                             f"from {edges.min():.6g} to {edges.max():.6g}{order}.")
        for field in ("mean_confidence", "accuracy"):
            values = getattr(result, field)
            known = values[~np.isnan(values)]  # null: a bin without a value
            if known.size and (known.min() < -FRACTION_SLACK or known.max() > 1.0 + FRACTION_SLACK):
                raise InputError(f"Expected {where}.{field} in {path} to be fractions in [0, 1], got values from "
                                 f"{known.min():.6g} to {known.max():.6g}.")
        return result

    chosen = stats(bins[key], key)
    if n_bins is not None and n_bins != chosen.n_bins:
        raise InputError(
            f"{path} holds {chosen.n_bins} {binning} bins; --n-bins {n_bins} needs a predictions file or run folder."
        )
    histogram = stats(bins["equal_width"], "equal_width") if isinstance(bins.get("equal_width"), Mapping) else None
    eces = _stored_eces(results, path)
    for name, which in (("ece_em", "equal_mass"), ("ece_ew", "equal_width")):
        if name not in eces and isinstance(bins.get(which), Mapping):  # left out by evaluate --metrics: its bins' ECE
            eces[name] = calibration_error(chosen if which == key else stats(bins[which], which))
    return chosen, histogram, eces


def _stored_eces(results: Mapping[str, Any], path: Path) -> dict[str, float]:
    """The ECE-EM and ECE-EW an evaluate.json stores under results.metrics (what `adacal evaluate` printed), as
    {"ece_em": ..., "ece_ew": ...}; a metric the report leaves out (evaluate --metrics) is absent (`_evaluate_bins`
    then takes it from the report's bins of that binning)."""
    metrics = results.get("metrics")
    found: dict[str, float] = {}
    for key in ("ece_em", "ece_ew"):
        value = metrics.get(key) if isinstance(metrics, Mapping) else None
        if value is None:
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not np.isfinite(value) or not -FRACTION_SLACK <= value <= 1.0 + FRACTION_SLACK:
            raise InputError(f"Expected results.metrics.{key} in {path} to be a fraction in [0, 1], got {value!r}.")
        found[key] = float(value)
    return found


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
    paths = [Path(p) for p in as_path_list(paths)]
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


def reliability_inputs(request: ReliabilityRequest, *, notes_out: list[str] | None = None) -> list[ReliabilityPanel]:
    """Reliability panels from run folders, predictions files (.npz/.pt) or evaluate.json reports, as `request` asks
    (see `ReliabilityRequest`); its options are checked before any predictions are read.

    With `request.calibrated` (a calibrate.json) the one input must hold logits: its panel is followed by a panel of
    the same predictions after the stored calibrator (`request.method`, default the report's best). Bands and the
    smoothed curve need per-sample predictions, not an evaluate.json. What reading the predictions files assumed
    (binary scores, a dropped index column, ...; the notes `adacal evaluate` prints), inputs given twice and bins left
    empty by ties are added to `notes_out`, when given.

        >>> from adacal.plots import ReliabilityRequest, reliability_inputs
        >>> request = ReliabilityRequest(["runs/ce", "runs/adafocal"], binning="equal-mass", n_bins=15)
        >>> panels = reliability_inputs(request)  # doctest: +SKIP
        >>> [panel.label for panel in panels]  # doctest: +SKIP
        ['CE', 'AdaFocal']
    """
    from adacal.metrics.binning import BINNINGS, check_n_bins
    from adacal.plots.bands import check_band_options

    if not isinstance(request, ReliabilityRequest):
        raise InputError(f"Expected a ReliabilityRequest (ReliabilityRequest(paths, binning=..., ...)), got "
                         f"{type(request).__name__}.")
    paths, binning, n_bins, split, labels = (request.paths, request.binning, request.n_bins, request.split,
                                             request.labels)
    calibrated, method, smooth, options = request.calibrated, request.method, request.smooth, request.options
    bands, band_samples, band_level, seed = request.bands, request.band_samples, request.band_level, request.seed
    kind, band_samples, band_level = check_band_options(bands, band_samples, band_level)
    check_non_negative_int(seed, "--seed")
    band_options = {"bands": kind, "band_samples": band_samples, "band_level": band_level, "seed": seed,
                    "corp": bool(request.corp)}

    if binning not in BINNINGS:
        raise unknown_name("binning (--binning)", str(binning), BINNINGS)
    if n_bins is not None:
        check_positive_int(n_bins, "--n-bins")
        check_diagram_bins(n_bins, "--n-bins")
    if not isinstance(split, str) or split not in ("val", "test"):
        raise unknown_name("split (--split)", str(split), ("test", "val"))
    paths = [Path(p) for p in as_path_list(paths)]
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
    if request.group_by is not None and len(paths) != 1:
        raise InputError(f"Expected exactly one INPUT with --group-by {request.group_by} (its groups are drawn side by "
                         f"side), got {len(paths)}.")
    if calibrated is not None and len(paths) != 1:
        raise InputError("Expected exactly one INPUT with --calibrated (its calibrator fits one model), got "
                         f"{len(paths)}.")
    for path in paths:
        if not path.exists():
            raise InputError(f"Expected INPUT {path} to be a run folder, predictions file or evaluate.json, "
                             "but it does not exist.")
    bins = check_n_bins(DEFAULT_N_BINS if n_bins is None else n_bins)
    positive = bool(request.positive)
    if positive and request.group_by is not None:
        raise InputError(f"Expected --positive without --group-by {request.group_by}: the diagrams per group are "
                         "top-label; draw the positive-class diagram of the whole input.")
    if request.group_by is not None:
        return _group_panels(request, paths, bins, band_options, notes_out)
    calibrator = _load_calibrator(Path(calibrated), method) if calibrated is not None else None

    panels: list[ReliabilityPanel] = []
    names, details = [], []
    for path in paths:
        harness = _is_harness_folder(path)
        run_root = None if harness else path if path.is_dir() else (path.parent if is_run_folder(path.parent) else None)
        info = read_run(run_root) if run_root is not None else None
        names.append(_run_label(info) if info is not None else path.name if harness else path.stem)
        details.append(input_details(info, path))
        readable = harness or (path.is_file() and not (path.suffix.lower() == ".json" and _holds_a_report(path)))
        pairs = _pairs_of(path, split, options or ReadOptions()) if readable else None
        if pairs is not None:  # top-label pairs: the diagram of what `adacal evaluate` measures of them
            if positive:
                raise InputError(f"--positive draws a binary model's P(class 1), but {path} holds top-label "
                                 "confidences (confidence, correct); drop --positive for their diagram.")
            if calibrator is not None:
                raise InputError(f"--calibrated needs class scores, but {path} holds top-label confidences "
                                 "(confidence, correct): calibrate them with 'adacal calibrate', then plot.")
            if notes_out is not None:
                notes_out.extend(note for note in pairs.notes if note not in notes_out)
            from adacal.plots.reliability_groups import panel_from_confidences

            panels.append(panel_from_confidences(pairs.confidences, pairs.correct, binning=binning, n_bins=bins,
                                                 smooth=smooth, **band_options))
            continue
        if path.is_dir() and not harness:
            path = require_run_folder(path).predictions
            if not path.is_file():
                raise InputError(f"Expected the run folder {path.parent} to hold {PREDICTIONS_FILE}, but it does not.")
        if run_root is not None and path.name == PREDICTIONS_FILE and path.parent.resolve() == run_root.resolve():
            check_predictions_of_run(RunFolder(run_root), {})  # not another run's file copied in
        if path.suffix.lower() == ".json" and _holds_a_report(path):
            if positive:
                raise InputError(f"--positive needs per-sample predictions, but {path} holds only top-label bin "
                                 "statistics; give a run folder or predictions file.")
            if calibrator is not None:
                raise InputError(f"--calibrated needs logits, but {path} holds only bin statistics; give predictions.")
            if kind != "none":
                raise InputError(f"--bands {kind} needs per-sample predictions, but {path} holds only bin statistics; "
                                 "give a run folder or predictions file.")
            if smooth or request.corp:
                flag = "--smooth" if smooth else "--corp"
                raise InputError(f"{flag} needs per-sample predictions, but {path} holds only bin statistics; "
                                 "give a run folder or predictions file.")
            if split != "test":  # evaluate scores the test split only (its config.source.split)
                raise InputError(f"{path} holds bin statistics of the test split; --split {split} needs a "
                                 "predictions file or run folder.")
            stats, histogram, eces = _evaluate_bins(path, binning, n_bins)
            panels.append(ReliabilityPanel(label="", stats=stats, histogram=histogram, binning=binning,
                                           ece_em=eces.get("ece_em"), ece_ew=eces.get("ece_ew")))
            continue
        try:
            predictions = _split_predictions(path, split, options or ReadOptions())
        except InputError as exc:  # the readers' advice names evaluate's flag; plot's --labels is legend text
            raise InputError(str(exc).replace("--labels FILE", "--labels-file FILE")) from None
        if notes_out is not None:  # what reading the file assumed (binary scores, a dropped index column, ...)
            notes_out.extend(note for note in predictions.notes if note not in notes_out)
        if positive and np.shape(predictions.logits)[1] != 2:
            raise InputError(f"--positive draws a binary model's P(class 1), but {path} holds scores of "
                             f"{np.shape(predictions.logits)[1]} classes; drop --positive for the top-label diagram.")
        # The scores as read, as `adacal evaluate` scores them: the titles' ECEs are the numbers its table prints.
        panels.append(panel_from_scores(predictions.logits, predictions.labels, binning=binning, n_bins=bins,
                                        smooth=smooth, positive=positive, **band_options))
        if calibrator is not None:
            from adacal.evaluation import calibrated_probs

            fitted, name = calibrator
            # As `evaluate --calibrator` applies it; vector / matrix scaling take only the kind of scores they were
            # fitted on (Calibrator.transform says so, naming the input).
            record = predictions.interpretation
            scaled = calibrated_probs(fitted, predictions.logits, calibrator_path=f"--calibrated, applied to {path}",
                                      scores_kind=record.scores_kind if record is not None else None)
            panels.append(panel_from_scores(scaled, predictions.labels, binning=binning, n_bins=bins,
                                            smooth=smooth, positive=positive, **band_options))
            names.append(f"{names[-1]} + {name}")
            details.append(details[-1])
    if labels is not None:
        final = list(labels) if calibrator is None else [labels[0], f"{labels[0]} + {calibrator[1]}"]
    else:
        final = distinct_labels(names, details)
    colors = colors_for([(panel_name.split(" + ")[0]) for panel_name in names])
    if notes_out is not None:  # what the diagrams leave out: empty bins of zero width (ties)
        for label, panel in zip(final, panels):
            note = empty_bins_note(panel.stats, detail=True)
            if note is not None and f"{label}: {note}" not in notes_out:
                notes_out.append(f"{label}: {note}")
    return [replace(panel, label=label, color=color) for label, panel, color in zip(final, panels, colors)]


def _is_harness_folder(path: Path) -> bool:
    """A folder of lm-evaluation-harness sample files, one input (docs/inputs.md §10), not a run folder."""
    from adacal.interpretation.llm import harness_input

    return path.is_dir() and harness_input(path) is not None


def _pairs_of(path: Path, split: str, options: ReadOptions) -> Any:
    """The top-label `(confidence, correct)` pairs of a test input that holds no class scores — a file of such pairs
    (docs/inputs.md §7) or LLM questions of different numbers of options (§10) — else None."""
    if split != "test":
        return None
    from adacal.interpretation.confidence import load_top_label
    from adacal.interpretation.llm_maps import load_questions

    questions = load_questions(path, options)
    if questions is not None:
        return questions.top_label() if questions.ragged else None
    return load_top_label(path, split=split, options=options)


def _top_label_of(path: Path, split: str, options: ReadOptions) -> tuple[np.ndarray, np.ndarray, Any]:
    """(top-1 confidences, correctness, the predictions read) of one input, the kind of its scores decided once (a
    file of top-label `(confidence, correct)` pairs read as such)."""
    from adacal.metrics import top_label

    pairs = _pairs_of(path, split, options)
    if pairs is not None:
        return pairs.confidences, pairs.correct, pairs
    predictions = _split_predictions(path, split, options)
    record = predictions.interpretation
    top = top_label(predictions.logits, predictions.labels, scores_kind=record.scores_kind if record else "auto")
    return top.confidences, top.correct, predictions


def _group_panels(request: ReliabilityRequest, paths: list[Path], n_bins: int, band_options: dict[str, Any],
                  notes_out: list[str] | None) -> list[ReliabilityPanel]:
    """`--group-by`: one panel per group of the one input (a predictions file, or a run folder's predictions)."""
    from adacal.plots.reliability_groups import group_options, group_reliability_panels

    key = request.group_by
    if request.labels is not None or request.calibrated is not None:
        raise InputError(f"Expected neither --labels nor --calibrated with --group-by {key}: each diagram is named "
                         "after its group.")
    path = paths[0]
    if path.is_dir() and not _is_harness_folder(path):
        path = require_run_folder(path).predictions
        if not path.is_file():
            raise InputError(f"Expected the run folder {path.parent} to hold {PREDICTIONS_FILE}, but it does not.")
    if path.suffix.lower() == ".json" and _holds_a_report(path):
        raise InputError(f"--group-by {key} needs per-sample predictions, but {path} holds only bin statistics; give "
                         "the predictions file.")
    notes: list[str] = []
    options = group_options(path, key, request.options)
    confidences, correct, predictions = _top_label_of(path, request.split, options)
    panels = group_reliability_panels(path, key, confidences, correct, predictions, binning=request.binning,
                                      n_bins=n_bins, options=options, band_options=band_options,
                                      smooth=request.smooth, notes_out=notes)
    color = colors_for([path.stem])[0]
    if notes_out is not None:
        notes_out.extend(note for note in notes if note not in notes_out)
        for panel in panels:
            note = empty_bins_note(panel.stats, detail=True)
            if note is not None and f"{panel.label}: {note}" not in notes_out:
                notes_out.append(f"{panel.label}: {note}")
    return [replace(panel, color=color) for panel in panels]


__all__ = ["ReliabilityRequest", "reliability_inputs", "unique_inputs"]
