"""The layout of a run folder written by `adacal train`, and finding its parts from whatever path a user gives."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from adacal.errors import InputError

CONFIG_FILE = "config.json"
HISTORY_FILE = "history.jsonl"
PREDICTIONS_FILE = "predictions.npz"
EVALUATE_FILE = "evaluate.json"
CALIBRATE_FILE = "calibrate.json"
OOD_FILE = "ood.json"
CHECKPOINT_DIR = "checkpoints"
PLOTS_DIR = "plots"


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
    """The run folder that `path` is, or that holds `path` (a checkpoint or a file in it); None if there is none."""
    path = Path(path)
    for candidate in (path, path.parent, path.parent.parent):
        if is_run_folder(candidate):
            return RunFolder(candidate)
    return None


def require_run_folder(path: str | os.PathLike) -> RunFolder:
    run = find_run_folder(path)
    if run is None:
        if not Path(path).exists():
            raise InputError(f"Expected a run folder or checkpoint at {path}, but it does not exist.")
        raise InputError(f"Expected {path} to be a run folder written by 'adacal train' (no {CONFIG_FILE} found).")
    return run
