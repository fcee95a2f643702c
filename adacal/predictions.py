"""Reading and writing model outputs (logits and labels) from .npz or .pt files, any model, any framework."""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adacal.arrays import PROB_SUM_TOLERANCE, check_labels, check_scores, looks_like_probs, probability_tolerance
from adacal.errors import InputError
from adacal.reports import atomic_write, safe_torch_load


@dataclass(frozen=True)
class Predictions:
    """Validated scores (N, K) — logits or probabilities — and integer labels (N,)."""

    logits: np.ndarray
    labels: np.ndarray

    @property
    def num_classes(self) -> int:
        return int(self.logits.shape[1])

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def read_arrays(path: Path) -> dict[str, Any]:
    """Every array of an .npz (no pickles) or a .pt dict of tensors (weights_only), by key; InputError otherwise."""
    if not path.exists():
        raise InputError(f"Expected a predictions file at {path}, but it does not exist.")
    if path.is_dir():
        raise InputError(f"Expected a predictions file at {path}, but it is a folder.")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as data:
                return {key: data[key] for key in data.files}
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
            raise InputError(f"Expected {path} to be a readable .npz file, but it is not ({exc.__class__.__name__}).") from None
    if suffix in (".pt", ".pth"):
        data = safe_torch_load(path, what="torch predictions file")
        if not isinstance(data, dict):
            raise InputError(f"Expected {path} to hold a dict of tensors, got {type(data).__name__}.")
        return data
    raise InputError(f"Expected a predictions file ending in .npz or .pt, got {path.name}.")


def _pair(arrays: dict[str, Any], path: Path, scores_key: str, labels_key: str) -> Predictions:
    missing = [key for key in (scores_key, labels_key) if key not in arrays]
    if missing:
        raise InputError(
            f"Expected {path} to contain {' and '.join(missing)}; it has: {', '.join(sorted(arrays)) or 'nothing'}."
        )
    tolerance = probability_tolerance(arrays[scores_key])
    logits = check_scores(arrays[scores_key], name=f"{path.name}:{scores_key}")
    if tolerance > PROB_SUM_TOLERANCE and looks_like_probs(logits, tolerance=tolerance):
        # float16/bfloat16 probabilities sum to 1 only within their rounding: normalise them here, in float64, so that
        # everything downstream takes them as probabilities (the normalisation changes no metric).
        logits = logits / logits.sum(axis=1, keepdims=True)
    labels = check_labels(
        arrays[labels_key], n=logits.shape[0], num_classes=logits.shape[1], name=f"{path.name}:{labels_key}"
    )
    return Predictions(logits=logits, labels=labels)


def load_predictions(path: str | os.PathLike, *, split: str = "test") -> Predictions:
    """Load `logits`/`labels`, or `<split>_logits`/`<split>_labels` when the file holds several splits."""
    path = Path(path)
    arrays = read_arrays(path)
    if "logits" in arrays or "labels" in arrays:
        return _pair(arrays, path, "logits", "labels")
    if f"{split}_logits" not in arrays and f"{split}_labels" not in arrays:
        raise InputError(
            f"Expected {path} to contain logits and labels (or {split}_logits and {split}_labels); "
            f"it has: {', '.join(sorted(arrays)) or 'nothing'}."
        )
    return _pair(arrays, path, f"{split}_logits", f"{split}_labels")


def load_split_predictions(path: str | os.PathLike) -> dict[str, Predictions | None]:
    """Validation and test predictions from a file with `val_logits`, `val_labels`, `test_logits`, `test_labels`."""
    path = Path(path)
    arrays = read_arrays(path)
    if "test_logits" not in arrays and "test_labels" not in arrays:
        raise InputError(
            f"Expected {path} to hold val_logits, val_labels, test_logits and test_labels (like a run's "
            f"predictions.npz); it has: {', '.join(sorted(arrays)) or 'nothing'}."
        )
    test = _pair(arrays, path, "test_logits", "test_labels")
    val = _pair(arrays, path, "val_logits", "val_labels") if "val_logits" in arrays or "val_labels" in arrays else None
    if val is not None and val.num_classes != test.num_classes:
        raise InputError(
            f"Expected the validation and test logits in {path} to have the same number of classes, "
            f"got {val.num_classes} and {test.num_classes}."
        )
    return {"val": val, "test": test}


def save_split_predictions(path: str | os.PathLike, **splits: Predictions | None) -> Path:
    """Write `<split>_logits` (float32) and `<split>_labels` (int64) for each given split, atomically."""
    arrays: dict[str, np.ndarray] = {}
    for name, predictions in splits.items():
        if predictions is None:
            continue
        arrays[f"{name}_logits"] = np.asarray(predictions.logits, dtype=np.float32)
        arrays[f"{name}_labels"] = np.asarray(predictions.labels, dtype=np.int64)
    return atomic_write(path, lambda handle: np.savez(handle, **arrays), binary=True)
