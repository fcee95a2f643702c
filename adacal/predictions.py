"""Model outputs (logits or probabilities, and labels): the `Predictions` type, reading them from any framework's
files (see `adacal.interpretation`, where the reading is decided) and writing a run's predictions.npz."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from adacal.writing import write_file
from adacal.runs import RUN_ID_KEY, run_id_array
from adacal.interpretation import Predictions, load_predictions, load_split_predictions
from adacal.sources.formats import ReadOptions, read_arrays

__all__ = ["Predictions", "ReadOptions", "load_predictions", "load_split_predictions", "read_arrays",
           "save_split_predictions"]


def save_split_predictions(path: str | os.PathLike, *, run_id: str | None = None,
                           **splits: Predictions | None) -> Path:
    """Write `<split>_logits` (float32) and `<split>_labels` (int64) for each given split, atomically; with `run_id`
    (a run's, see `adacal.runs.RUN_ID_KEY`) also the run's identity, so the file is known as that run's."""
    arrays: dict[str, np.ndarray] = {}
    if run_id is not None:
        arrays[RUN_ID_KEY] = run_id_array(run_id)
    for name, predictions in splits.items():
        if predictions is None:
            continue
        arrays[f"{name}_logits"] = np.asarray(predictions.logits, dtype=np.float32)
        arrays[f"{name}_labels"] = np.asarray(predictions.labels, dtype=np.int64)
    return write_file(path, lambda handle: np.savez(handle, **arrays), binary=True)
