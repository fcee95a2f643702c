"""`adacal ood` as one library call (`run_ood`): resolve the inputs (saved logits or a checkpoint), the
temperature, run the detection and write the report."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adacal.conventions import DEFAULT_RUNS_DIR
from adacal.errors import InputError
from adacal.ood.model import check_ood_options, ood_from_model, ood_report_name, resolve_checkpoint
from adacal.ood.scores import (
    FIT_OBJECTIVE,
    SEVERITIES,
    check_score_names,
    check_temperature,
    detect_ood,
    ood_report,
    resolve_temperature,
    temperature_edge,
)
from adacal.sources.formats import ReadOptions

@dataclass(frozen=True)
class OodRun:
    """What `run_ood` did: the report (its results and config), where it was written and what a reader must know."""

    report: dict[str, Any]
    written: Path | None = None  # the run folder's ood-<set>.json or --json; None when not saved
    notes: list[str] = field(default_factory=list)
    reading: list[str] = field(default_factory=list)  # how each saved set was read: one line per set

    @property
    def results(self) -> dict[str, Any]:
        return self.report["results"]

    @property
    def config(self) -> dict[str, Any]:
        return self.report["config"]


def run_ood(
    *,
    in_name: str | None = None,
    out_name: str | None = None,
    model: str | os.PathLike | None = None,
    in_preds: str | os.PathLike | None = None,
    out_preds: str | os.PathLike | None = None,
    corruption: str | None = None,
    severity: int | None = None,
    scores: str | Iterable[str] = "entropy",
    temperature: float | None = None,
    fit_temperature: bool = False,
    data_dir: str | os.PathLike | None = None,
    download: bool = True,
    device: str = "auto",
    batch_size: int = 512,
    limit: int | None = None,
    seed: int = 0,
    json_path: str | os.PathLike | None = None,
    force: bool = False,
    options: ReadOptions | None = None,
    status: Callable[[str], AbstractContextManager[Any]] | None = None,
) -> OodRun:
    """Everything `adacal ood` does, without printing.

    Either `model` (a run folder or checkpoint; `out_name` is the OOD set, a dataset name, cifar10-c or an .npz of
    images) or `in_preds` and `out_preds` (saved outputs of any model; `options` says how to read them). The
    temperature is `temperature`, else fitted on the validation logits with `fit_temperature`, else the run's
    calibrate.json. The report goes to `json_path` ("-": standard output), else for a run to ood-<set>.json in its
    folder. `status(message)` is a context manager around the long scoring of a model (a spinner). Every option is
    checked before a model is run, and nothing is written before the results exist.
    """
    from adacal.checks import check_device_name
    from adacal.runs import find_run_folder
    from adacal.reports import write_json
    from adacal.writing import check_output

    model = None if model is None else Path(model)
    in_preds = None if in_preds is None else Path(in_preds)
    out_preds = None if out_preds is None else Path(out_preds)
    json_path = None if json_path is None else Path(json_path)
    data_dir = None if data_dir is None else Path(data_dir)
    options = options or ReadOptions()

    model_run = find_run_folder(model) if model is not None else None  # its calibrate.json gives T
    check_output(json_path, flag="--json", force=force, inputs=(
        model, in_preds, out_preds, model_run.report("calibrate.json") if model_run is not None else None,
        *_data_inputs(json_path, out_name if model is not None else None, data_dir),
        *_sibling_labels(in_preds, out_preds)))
    score_names = check_score_names(scores)
    check_device_name(device)  # a typo is refused even when no model runs (--in-preds/--out-preds), as by evaluate
    read_notes: list[str] = []  # what reading --in-preds / --out-preds assumed
    records: dict[str, Any] = {}  # how --in-preds / --out-preds (and their validation split) were read
    if json_path is not None and json_path.is_dir():
        raise InputError(f"Expected --json to be a file path, but {json_path} is a folder.")
    if model is not None and (in_preds is not None or out_preds is not None):
        raise InputError("Expected either --model or --in-preds/--out-preds, not both.")
    if temperature is not None:
        check_temperature(temperature)
        if fit_temperature:
            raise InputError("Expected either --temperature or --fit-temperature, not both.")
    if severity is not None and severity not in SEVERITIES:
        raise InputError(f"Expected --severity to be an integer from 1 to 5, got {severity}.")

    if model is not None:
        from adacal.commands.inputs import describe_options

        if describe_options(options):
            raise InputError("Expected --logits-key, --labels-key, --renormalize, --scores-kind, --header, --separator "
                             "and --pt-items only with --in-preds/--out-preds.")
        if out_name is None:
            raise InputError("Expected --out (the OOD set: a dataset name, cifar10-c or an .npz of inputs) with "
                             "--model.")
        in_name, out_name, corruption, severity = check_ood_options(
            in_name=in_name, out_name=out_name, corruption=corruption, severity=severity
        )
        _, run = resolve_checkpoint(model)
        run_dir = run.root if run is not None else None
        if not fit_temperature:  # option or calibrate.json: settled before the long work
            value, source = resolve_temperature(
                temperature=temperature, calibration=run_dir / "calibrate.json" if run_dir is not None else None
            )
        with status("Scoring the in-distribution and OOD sets") if status is not None else contextlib.nullcontext():
            in_logits, out_logits, info = ood_from_model(
                model, in_name=in_name, out_name=out_name, corruption=corruption, severity=severity,
                data_dir=data_dir, device=device, batch_size=batch_size, seed=seed, limit=limit,
                download=download, with_val=fit_temperature,
            )
        # The data folder is known only now (the checkpoint's own, or the default): its files are inputs too.
        check_output(json_path, flag="--json", force=force, inputs=_data_inputs(
            json_path, out_name, info.get("data_dir") or _default_data_dir(), files=info.get("out_files") or ()))
        if fit_temperature:
            value, source = resolve_temperature(fit=True, val=info.get("val"))
        in_name = info["in"]
        target = json_path or (run_dir / ood_report_name(out_name, corruption, severity) if run_dir is not None
                               else None)
        out_label = out_name if corruption is None else f"{out_name} {corruption} s{severity}"
        sources = {"model": str(model), "checkpoint": info["checkpoint"], "in_preds": None, "out_preds": None,
                   "in_source": info["in_source"], "data_dir": None if data_dir is None else str(data_dir),
                   "limit": limit, "seed": seed, "out_source": info["out_source"], "out_files": info["out_files"],
                   "out_table": info["out_table"], "out_size": info["out_size"],
                   "out_subsample": info["out_subsample"]}
        if info.get("out_range") is not None:  # a file of feature vectors, scored as given
            sources["out_range"] = info["out_range"]
    elif in_preds is not None or out_preds is not None:
        if in_preds is None or out_preds is None:
            raise InputError("Expected both --in-preds and --out-preds (saved logits), got only one.")
        for flag, given in (("--corruption", corruption), ("--severity", severity), ("--data-dir", data_dir),
                            ("--limit", limit)):
            if given is not None:
                raise InputError(f"Expected {flag} only with --model, not with --in-preds/--out-preds.")
        in_logits, out_logits, val = _read_saved_outputs(in_preds, out_preds, options=options,
                                                         with_val=fit_temperature, notes_out=read_notes,
                                                         records_out=records)
        value, source = resolve_temperature(temperature=temperature, fit=fit_temperature, val=val)
        in_name = in_name or in_preds.stem
        out_name = out_name or out_preds.stem
        out_label = out_name
        target = json_path
        sources = {"model": None, "checkpoint": None, "in_preds": str(in_preds), "out_preds": str(out_preds)}
    else:
        raise InputError(_no_model_message(in_name, out_name))

    results = detect_ood(
        in_logits, out_logits, scores=score_names, temperature=value, temperature_source=source,
        in_name=in_name, out_name=out_label,
    )
    edge = temperature_edge(value, objective=FIT_OBJECTIVE) if source == "fitted" else None
    config = {"in": in_name, "out": out_name, "corruption": corruption, "severity": severity,
              "scores": list(score_names), **sources, "temperature": value, "temperature_source": source,
              "temperature_edge": edge}
    if read_notes:
        config["assumed"] = list(dict.fromkeys(read_notes))  # as evaluate's config.source.assumed
    if records:
        results["input"] = {name: record.to_dict() for name, record in records.items()}
    report = ood_report(results, config=config)
    written = write_json(target, report) if target is not None else None
    from adacal.interpretation import reading_lines

    return OodRun(report=report, written=written,
                  notes=[f"{note}." for note in dict.fromkeys(read_notes)] + ood_notes(results, config),
                  reading=reading_lines(*records.values(), names=tuple(records)))


def _default_data_dir() -> Path:
    from adacal.data.base import default_data_dir

    return default_data_dir()


def _data_inputs(json_path: Path | None, out_name: str | None, data_dir: str | os.PathLike | None,
                 files: Iterable[str] = ()) -> list[Path]:
    """The files `adacal ood --model` reads data from that --json could name: an .npz of OOD images given as --out,
    the files read (Hendrycks' CIFAR-C files), and an existing file in the data folder or its CIFAR-10-C /
    CIFAR-100-C folders (the datasets' .npz, Hendrycks' .npy): a report must never replace them without --force."""
    from adacal.writing import is_stdout

    if json_path is None or is_stdout(json_path):
        return []
    found = [Path(f) for f in files]
    if out_name is not None and Path(str(out_name)).expanduser().is_file():
        found.append(Path(str(out_name)).expanduser())
    if data_dir is not None and json_path.is_file():
        root = os.path.realpath(Path(data_dir).expanduser())
        folders = {root, os.path.join(root, "CIFAR-10-C"), os.path.join(root, "CIFAR-100-C")}
        if os.path.dirname(os.path.realpath(json_path)) in folders and not _is_ood_report(json_path):
            found.append(json_path)
    return found


def _sibling_labels(*paths: Path | None) -> list[Path]:
    """The labels files the readers look for beside an .npy or text file of scores (`<stem>_labels.npy`,
    `labels.npy`): inputs too, which a report must not replace."""
    from adacal.interpretation import sibling_labels

    found = []
    for path in paths:
        if path is None or not path.is_file():
            continue
        try:
            labels = sibling_labels(path)
        except (InputError, OSError, ValueError):
            continue
        if labels is not None:
            found.append(labels)
    return found


def _is_ood_report(path: Path) -> bool:
    """Whether `path` holds a report of `adacal ood` (which a rerun may replace), read only when small."""
    import json

    try:
        if path.stat().st_size > 64 << 20:
            return False
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError):
        return False
    return isinstance(report, dict) and report.get("kind") == "ood"


def _read_saved_outputs(
    in_preds: Path, out_preds: Path, *, options: ReadOptions, with_val: bool, notes_out: list[str],
    records_out: dict[str, Any] | None = None,
) -> tuple[Any, Any, Any]:
    """(in-distribution scores, OOD scores, validation predictions or None) of `--in-preds` / `--out-preds`
    (`adacal.resolve_ood_inputs`); the validation split, which the temperature is fitted on, must have as
    many classes as the sets it is applied to."""
    from adacal.commands.inputs import resolve_ood_inputs

    in_scores, out_scores, val = resolve_ood_inputs(in_preds, out_preds, options=options, with_val=with_val,
                                                    notes_out=notes_out, records_out=records_out)
    if val is not None and val.num_classes != in_scores.shape[1]:
        raise InputError(
            f"Expected the validation logits in {in_preds.name} to have as many classes as its test logits and "
            f"{out_preds.name} ({in_scores.shape[1]}), got {val.num_classes}: the temperature must be fitted on "
            "the same model's outputs."
        )
    return in_scores, out_scores, val


def _runs_trained_on(root: str | os.PathLike, dataset: str | None = None) -> list[Path]:
    """The run folders directly under `root` (trained on `dataset`, when given), newest first. Folders whose
    config.json cannot be read are skipped: this only suggests runs, it validates nothing."""
    from adacal.sources.documents import read_report
    from adacal.runs import CONFIG_FILE, is_run_folder

    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for folder in root.iterdir():
        if not is_run_folder(folder):
            continue
        try:
            config = read_report(folder / CONFIG_FILE, kind="train-config")["config"]
        except (InputError, KeyError, TypeError):
            continue
        if dataset is None or config.get("dataset") == dataset:
            found.append((folder.stat().st_mtime, folder))
    return [folder for _, folder in sorted(found, key=lambda item: (-item[0], str(item[1])))]


def _no_model_message(in_name: str | None, out_name: str | None) -> str:
    """What to give when neither a model nor saved outputs were: with the newest matching run under ./runs (where
    `adacal train` writes by default) as the example, when there is one."""
    runs = _runs_trained_on(DEFAULT_RUNS_DIR, in_name) if out_name is not None else []
    scored = f" to score {out_name} with" if out_name is not None else ""
    message = (f"Expected --model RUN (a run folder or checkpoint of the classifier{scored}) or --in-preds and "
               "--out-preds.")
    if runs:
        trained = f" trained on {in_name}" if in_name else ""
        more = f" ({len(runs) - 1} more under {DEFAULT_RUNS_DIR}/)" if len(runs) > 1 else ""
        message += f" The newest run{trained} here is {runs[0]}{more}: add --model {runs[0]}."
    return message


def ood_notes(results: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """What a reader of the results must know: where the OOD images came from, OOD feature vectors beyond the
    training data's range, a subsampled OOD set, sets of different sizes, a temperature fitted at the edge of its
    search range."""
    notes = []
    if config.get("out_source") == "hendrycks-files":
        notes.append(f"OOD images: Hendrycks' CIFAR-C file {config['out_files'][0]}.")
    elif config.get("out_source") == "generated":
        missing = " (no Hendrycks CIFAR-C file for it in the data folder)" if str(config["out"]).endswith("-c") else ""
        from adacal.data.corruptions import table_words

        notes.append(f"OOD images: {config['corruption']} generated by adacal with "
                     f"{table_words(config.get('out_table'))}{missing}.")
    out_range = config.get("out_range")
    if out_range and out_range.get("expected"):
        low, high = out_range["expected"]
        if out_range["min"] < low or out_range["max"] > high:
            name = out_range["dataset"]
            notes.append(f"The OOD features span [{out_range['min']:g}, {out_range['max']:g}], beyond the {name} "
                         f"training data's range [{low:g}, {high:g}]: they are scored as given, not rescaled (give "
                         f"them as the {name} loader makes them unless that is the point).")
    if config.get("model") is not None and config.get("out") == config.get("in") and not config.get("corruption"):
        notes.append(f"The OOD set is the model's own dataset ({config['in']}, its test split): an AUROC near 50 % is "
                     "expected, not a finding.")
    subsample = config.get("out_subsample")
    if subsample:
        limited = f"; then {subsample['limited_to']} of them by --limit" if subsample.get("limited_to") else ""
        notes.append(f"OOD set subsampled from {subsample['from']} to {subsample['to']}: {subsample['reason']}"
                     f"{limited}.")
    n_in, n_out = results["in"]["n"], results["out"]["n"]
    if n_in != n_out:
        notes.append(f"The sets differ in size ({n_in} in-distribution, {n_out} OOD): AUROC and FPR@95 do not "
                     "depend on the ratio, AUPR-in and AUPR-out do.")
    edge = config.get("temperature_edge")
    if edge:
        low, high = edge["range"]
        notes.append(f"The fitted T = {config['temperature']:.3g} is at the {edge['edge']} edge of its search range "
                     f"[{low:g}, {high:g}]: the best T may lie beyond it.")
    return notes
