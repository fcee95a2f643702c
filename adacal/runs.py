"""The layout of a run folder written by `adacal train`, and finding its parts from whatever path a user gives."""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adacal.errors import InputError

CONFIG_FILE = "config.json"
HISTORY_FILE = "history.jsonl"
PREDICTIONS_FILE = "predictions.npz"
EVALUATE_FILE = "evaluate.json"
CALIBRATE_FILE = "calibrate.json"
OOD_FILE = "ood.json"
CHECKPOINT_DIR = "checkpoints"
PLOTS_DIR = "plots"
# A run's identity: a random 128-bit id in config.json (results.run_id, 32 hex digits), also stored in the run's
# predictions.npz (key `run_id`, its 16 bytes as uint8), so that another run's file copied in is recognised even when
# its splits have the same sizes (the same protocol with another seed).
RUN_ID_KEY = "run_id"
_RUN_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class RunFolder:
    """Paths inside one run folder (they may not all exist yet)."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def history(self) -> Path:
        return self.root / HISTORY_FILE

    @property
    def predictions(self) -> Path:
        return self.root / PREDICTIONS_FILE

    @property
    def checkpoints(self) -> Path:
        return self.root / CHECKPOINT_DIR

    def checkpoint(self, which: str = "last") -> Path:
        return self.checkpoints / f"{which}.pt"

    def report(self, name: str) -> Path:
        return self.root / name

    @property
    def plots(self) -> Path:
        return self.root / PLOTS_DIR


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and (path / CONFIG_FILE).is_file()


def find_run_folder(path: str | os.PathLike) -> RunFolder | None:
    """The run folder that `path` is, or that holds `path` (a checkpoint or a file in it); None if there is none.
    A path with `..` is resolved first: `run/..` is the folder holding the run, not the run (its lexical parent)."""
    path = Path(path)
    if ".." in path.parts:
        path = Path(os.path.realpath(path))
    for candidate in (path, path.parent, path.parent.parent):
        if is_run_folder(candidate):
            return RunFolder(candidate)
    return None


def require_run_folder(path: str | os.PathLike) -> RunFolder:
    run = find_run_folder(path)
    if run is None:
        if not os.fspath(path):
            raise InputError("Expected a run folder or checkpoint, got an empty path.")
        if not Path(path).exists():
            raise InputError(f"Expected a run folder or checkpoint at {path}, but it does not exist.")
        raise InputError(f"Expected {path} to be a run folder written by 'adacal train' (no {CONFIG_FILE} found).")
    return run


def selected_checkpoint(run: RunFolder) -> Path:
    """The checkpoint of the model training selected — best.pt for a run trained with --select best-val, else
    last.pt (falling back to the other when it is missing) — the one its predictions.npz and evaluate.json describe."""
    order = ["last", "best"]
    recorded = (run_config(run) or {}).get("config") or {}
    if recorded.get("select") == "best-val":
        order = ["best", "last"]
    for which in order:
        if run.checkpoint(which).is_file():
            return run.checkpoint(which)
    raise InputError(
        f"Expected the run folder {run.root} to hold {PREDICTIONS_FILE} or a checkpoint ({CHECKPOINT_DIR}/last.pt "
        "or best.pt), but it has neither."
    )


def predictions_are_from(run: RunFolder, checkpoint: dict[str, Any]) -> bool:
    """Whether the run's predictions.npz exists and holds this (loaded) checkpoint's outputs: its epoch is the one
    training evaluated. Unknown (no evaluate.json, a --select best-val run without it) counts as no."""
    epoch = checkpoint.get("epoch")
    if not run.predictions.is_file() or not isinstance(epoch, int) or isinstance(epoch, bool):
        return False
    if checkpoint.get("partial_epoch") is not None:  # interrupted.pt: `epoch` and some batches of the next one
        return False
    selected = _selected_epoch(run, checkpoint)
    return selected is not None and selected == epoch


# The fields of an adacal report: a config.json holding none of them records nothing adacal checks.
_REPORT_FIELDS = ("schema_version", "results", "config")


def _train_config_schemas() -> tuple[Any, Any]:
    """The schemas of a config.json's `config` (every option `adacal train` records, as TrainConfig holds it; the
    envelope's schema checks a few) and `results` (what resume, evaluate, calibrate and plot read back)."""
    from adacal.sources import documents as d

    name, path, count = d.nullable(d.string), d.nullable(d.string), d.nullable(d.integer(0))
    size, number = d.nullable(d.integer(1)), d.nullable(d.number)
    config = d.obj(optional={
        **dict.fromkeys(("dataset", "model", "loss", "optimizer", "device", "preset", "loss_reduction", "name"), name),
        **dict.fromkeys(("out", "resume", "data_dir"), path),
        "select": d.nullable(d.one_of("last", "best-val")),
        "model_options": d.nullable(d.OBJECT), "loss_options": d.nullable(d.OBJECT),
        "epochs": count, "seed": count, "eval_test_every": count, "workers": count,
        "batch_size": size, "train_subset": size, "val_size": size, "test_subset": size,
        **dict.fromkeys(("lr", "lr_decay", "momentum", "weight_decay", "grad_clip"), number),
        "milestones": d.nullable(d.list_of(d.integer(0))),
        "amp": d.nullable(d.boolean), "channels_last": d.nullable(d.boolean),
        # update_every: "epoch", "paper", a spec or a number of batches (checked in `run_config`)
    })
    results = d.obj(optional={
        RUN_ID_KEY: d.string,  # 32 hex digits (checked in `run_config`)
        "split": d.obj(optional={"sizes": d.mapping_of(d.integer(0))}),
        "resumes": d.list_of(d.obj(optional={"from_epoch": d.integer(0), "from_batch": d.integer(0),
                                             "epochs": d.integer(1)})),
    })
    return config, results


def run_config(run: RunFolder, *, required: bool = False) -> dict[str, Any] | None:
    """The run's config.json, read once and validated: the train-config report, its `config` (every option, by type)
    and the `results` adacal reads back (run id, split sizes, resumes). A damaged or tampered file is refused in one
    line naming config.json and the field: the checks that use it (another run's predictions or checkpoint copied
    in, the selected checkpoint, the epochs trained) must not be skipped silently.

    None, unless `required` (what `train --resume` and the plots need), when there is nothing to check: no
    config.json, or a JSON object holding none of a report's fields (an empty `{}`, or another tool's config.json
    beside a predictions file)."""
    from adacal.sources.documents import check_report, read_json, validate

    path = run.config
    if not required and not path.exists():
        return None
    document = read_json(path, f"a run's {CONFIG_FILE}")
    if not required and isinstance(document, dict) and not any(key in document for key in _REPORT_FIELDS):
        return None
    report = check_report(document, path, kind="train-config")
    config_schema, results_schema = _train_config_schemas()
    if "config" in report:
        validate(report["config"], config_schema, label=str(path), root="config")
    validate(report["results"], results_schema, label=str(path), root="results")
    every = (report.get("config") or {}).get("update_every")
    if every is not None and (isinstance(every, bool) or not isinstance(every, (str, int)) or (
            isinstance(every, int) and every < 1)):
        raise InputError(f"Expected 'config.update_every' in {path} to be 'epoch', 'paper', a schedule or a positive "
                         f"number of batches, got {every!r:.40}.")
    run_id = report["results"].get(RUN_ID_KEY)
    if run_id is not None and not _RUN_ID.fullmatch(run_id):
        raise InputError(f"Expected 'results.{RUN_ID_KEY}' in {path} to be a run id (32 lowercase hex digits), got "
                         f"{run_id!r:.40}.")
    return report


def new_run_id() -> str:
    """A fresh run id (32 hex digits) for a new run's config.json."""
    return uuid.uuid4().hex


def run_id_of(report: dict[str, Any] | None) -> str | None:
    """The run id a config.json report records (results.run_id), or None (a run of an earlier adacal, or tampered)."""
    results = (report or {}).get("results")
    run_id = results.get(RUN_ID_KEY) if isinstance(results, dict) else None
    return run_id if isinstance(run_id, str) and _RUN_ID.fullmatch(run_id) else None


def run_id_array(run_id: str) -> Any:
    """The run id as predictions.npz stores it: its 16 bytes as a uint8 array (a plain numeric array, which every
    reader of .npz files takes)."""
    import numpy as np

    return np.frombuffer(bytes.fromhex(run_id), dtype=np.uint8).copy()


def predictions_run_id(path: Path) -> str | None:
    """The run id stored in a predictions.npz (`RUN_ID_KEY`), or None when it holds none (written by an earlier
    adacal, or not by `adacal train`) or one of another shape. Only that member is read, its declared size checked."""
    import numpy as np

    from adacal.sources.files import NpzArchive

    with NpzArchive(path, "a run's predictions (.npz)") as archive:
        if RUN_ID_KEY not in archive.files:
            return None
        stored = archive[RUN_ID_KEY]
    if not isinstance(stored, np.ndarray) or stored.dtype != np.uint8 or stored.shape != (16,):
        return None
    return stored.tobytes().hex()


def check_predictions_of_run(run: RunFolder, sizes: dict[str, int]) -> None:
    """Refuse a predictions.npz that is not this run's (another run's file, copied in): its run id differs from the
    one config.json records (when both record one), or its splits do not have the sizes config.json records (say a
    file of a run trained with --test-subset); `sizes` maps a split ("val", "test") to its number of samples."""
    report = run_config(run) or {}
    expected_id = run_id_of(report)
    if expected_id is not None:
        found_id = predictions_run_id(run.predictions)
        if found_id is not None and found_id != expected_id:
            raise InputError(
                f"Expected {run.predictions} to hold the predictions of run {expected_id} ({CONFIG_FILE}), found "
                f"run {found_id}'s: it is not this run's predictions (another run's file copied in?)."
            )
    results = report.get("results") if isinstance(report.get("results"), dict) else {}
    split = results.get("split") if isinstance(results.get("split"), dict) else {}
    recorded = split.get("sizes") if isinstance(split.get("sizes"), dict) else {}
    for name, found in sizes.items():
        expected = recorded.get(name)
        if isinstance(expected, int) and not isinstance(expected, bool) and expected != found:
            raise InputError(
                f"Expected {run.predictions} to hold the run's {expected} {name} samples ({CONFIG_FILE}), found "
                f"{found}: it is not this run's predictions (another run's file copied in?)."
            )


def _selected_epoch(run: RunFolder, checkpoint: dict[str, Any]) -> int | None:
    """The epoch whose model produced the run's predictions.npz, or None when that cannot be told."""
    from adacal.sources.documents import read_report

    try:
        config = read_report(run.report(EVALUATE_FILE)).get("config", {})
    except InputError:
        config = {}
    for holder in (config, config.get("model")):
        selected = holder.get("selected_epoch") if isinstance(holder, dict) else None
        if isinstance(selected, int) and not isinstance(selected, bool):
            return selected
    # The run's own target (config.json, which a --resume to more epochs raises) before the checkpoint's: a best.pt
    # saved before such a resume records the old target, and would pass for the final model.
    recorded = (run_config(run) or {}).get("config")
    train_config: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    if not isinstance(train_config.get("epochs"), int) or "select" not in train_config:
        saved = checkpoint.get("config")
        train_config = saved if isinstance(saved, dict) else {}
    epochs = train_config.get("epochs")
    if train_config.get("select") == "last" and isinstance(epochs, int) and not isinstance(epochs, bool):
        return int(epochs)
    return None


def load_history(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The per-epoch records of a run's history.jsonl (the file, or the run folder holding it), each validated by
    `adacal.sources.read_history` (a damaged line is refused with its number); a history with no record is refused
    too, since whatever reads it (the plots) has nothing to show."""
    from adacal.sources.documents import read_history

    path = Path(path)
    if path.is_dir() and is_run_folder(path):
        path = RunFolder(path).history
    records = read_history(path)
    if not records:
        raise InputError(f"Expected {path} to hold at least one epoch record, but it is empty.")
    return records


def resolve_checkpoint(model_path: str | os.PathLike) -> tuple[Path, RunFolder | None]:
    """(checkpoint file, run folder or None) from a run folder or a checkpoint file (a regular file)."""
    path = Path(model_path).expanduser()
    if path.is_dir():
        run = require_run_folder(path)
        return selected_checkpoint(run), run
    from adacal.errors import CheckpointError
    from adacal.sources.files import check_regular_file

    check_regular_file(path, "a run folder or checkpoint", error=CheckpointError)
    return path, find_run_folder(path)
