"""Which keys of a file hold the scores and labels of the split a command needs — the one resolver every command
uses (docs/inputs.md, "Keys and splits"):

- a file with `val_` / `test_` keys (a run's predictions.npz) is read by split: `evaluate`, `ood` and a test file
  read `test_*`; `calibrate` fits on `val_*` only, and a `--val FILE` never gives its `test_*` arrays;
- a file of plain keys (`logits`, `labels`, ...) or one array holds one set, "whole file";
- a file holding both plain and split keys, or two spellings of the scores or of the labels, is refused, naming the
  option that chooses (--logits-key / --labels-key).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adacal.errors import InputError
from adacal.sources.formats import (
    HARD_PREDICTION_KEYS, LABEL_KEYS, SCORE_KEYS, UNNAMED_NPZ, WHOLE, Arrays, ReadOptions, unnamed_npz,
)

SPLITS = ("val", "test")
WHOLE_FILE = "whole file"


@dataclass(frozen=True)
class SplitKeys:
    """The split read ("val", "test" or WHOLE_FILE) and the keys of its scores and labels (None: not in the file)."""

    split: str
    scores: str | None
    labels: str | None
    wanted: str = "test"  # the split the command asked for


def unprefixed(key: str) -> str:
    """`key` without a `val_` / `test_` split prefix."""
    for split in SPLITS:
        if key.startswith(f"{split}_"):
            return key[len(split) + 1:]
    return key


def _split_of(key: str) -> str | None:
    return next((split for split in SPLITS if key.startswith(f"{split}_")), None)


def _hard_predictions(arrays: Arrays, key: str) -> bool:
    """A key some frameworks use for predicted classes (`preds`, `y_pred`) holding integers: not a candidate for the
    scores when another key holds them."""
    if unprefixed(key) not in HARD_PREDICTION_KEYS:
        return False
    try:
        dtype = getattr(arrays[key], "dtype", None)
    except InputError:
        return False
    return dtype is not None and (getattr(dtype, "is_floating_point", None) is False
                                  or (isinstance(dtype, np.dtype) and dtype.kind in "iub"))


def _one(arrays: Arrays, candidates: list[str], what: str, flag: str) -> str | None:
    if len(candidates) > 1:
        raise InputError(
            f"Expected one key for the {what} in {arrays.path.name}, found {', '.join(candidates)}: pass {flag} to "
            "name the one to read."
        )
    return candidates[0] if candidates else None


def _present(keys: set[str], names: tuple[str, ...], prefix: str) -> list[str]:
    return [f"{prefix}{name}" for name in names if f"{prefix}{name}" in keys]


def split_keys(arrays: Arrays, split: str, options: ReadOptions) -> SplitKeys:
    """The keys holding `split`'s scores and labels ("test" for evaluate and ood, "val" for fitting calibrators)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if WHOLE in arrays:
        return SplitKeys(WHOLE_FILE, WHOLE, None, split)
    if arrays.kind == "npz" and unnamed_npz(arrays.keys()):
        return SplitKeys(WHOLE_FILE, UNNAMED_NPZ[0], UNNAMED_NPZ[1] if UNNAMED_NPZ[1] in arrays else None, split)
    if arrays.kind == "csv":  # the table's columns, named when it was read (--labels-key picked the label column)
        return SplitKeys(WHOLE_FILE, "scores" if "scores" in arrays else None, "labels" if "labels" in arrays else None,
                         split)
    score_names = (options.logits_key,) if options.logits_key else SCORE_KEYS
    label_names = (options.labels_key,) if options.labels_key else LABEL_KEYS
    keys = set(arrays.keys())
    if options.logits_key and options.logits_key in keys and f"{split}_{options.logits_key}" not in keys:
        return _named_scores(arrays, keys, split, options, label_names)
    plain = _present(keys, score_names, "") + _present(keys, label_names, "")
    by_split = {name: _present(keys, score_names, f"{name}_") + _present(keys, label_names, f"{name}_")
                for name in SPLITS}
    prefixed = by_split["val"] + by_split["test"]
    if plain and prefixed and options.logits_key in keys:
        # The refusal below asks for --logits-key and --labels-key: given, they name exactly those keys (rule 3).
        return _named_scores(arrays, keys, split, options, label_names)
    if plain and prefixed:
        raise InputError(
            f"Expected {arrays.path.name} to hold either plain keys (logits, labels) or split keys (val_logits, "
            f"test_logits, ...), not both; it has {', '.join(plain[:2])} and {', '.join(prefixed[:2])}: pass "
            "--logits-key and --labels-key to name the arrays to read."
        )
    prefix = f"{split}_" if prefixed else ""
    if prefixed and not by_split[split]:
        other = "val" if split == "test" else "test"
        use = ("test data is scored, never validation data" if split == "test" else
               "calibrators are fitted on validation data only, never on test data")
        raise InputError(
            f"Expected {split}_ arrays ({split}_logits, {split}_labels) in {arrays.path.name}, which holds only "
            f"{other}_ ones ({', '.join(by_split[other][:3])}): {use}."
        )
    scores = _present(keys, score_names, prefix)
    if len(scores) > 1:
        scores = [key for key in scores if not _hard_predictions(arrays, key)] or scores
    score_key = _one(arrays, scores, "scores", "--logits-key")
    label_key = _one(arrays, _present(keys, label_names, prefix), "labels", "--labels-key")
    return SplitKeys(split if prefixed else WHOLE_FILE, score_key, label_key, split)


def _named_scores(arrays: Arrays, keys: set[str], split: str, options: ReadOptions,
                  label_names: tuple[str, ...]) -> SplitKeys:
    """--logits-key naming a key exactly (`test_logits`, `my_scores`): its split is its prefix, if any."""
    key = options.logits_key
    found = _split_of(key)
    if found is not None and found != split:
        use = "scores test data" if split == "test" else "fits on validation data only"
        raise InputError(f"Expected --logits-key to name {split} scores here (this command {use}), got {key}.")
    prefix = f"{found}_" if found else ""
    if options.labels_key and options.labels_key in keys and f"{prefix}{options.labels_key}" not in keys:
        return SplitKeys(found or WHOLE_FILE, key, options.labels_key, split)
    label_key = _one(arrays, _present(keys, label_names, prefix), "labels", "--labels-key")
    return SplitKeys(found or WHOLE_FILE, key, label_key, split)


def plain_label_key(arrays: Arrays, options: ReadOptions) -> str | None:
    """The labels key of a file given only for its labels (--labels FILE)."""
    if WHOLE in arrays:
        return WHOLE
    if arrays.kind == "csv":
        return "labels" if "labels" in arrays else None
    names = (options.labels_key,) if options.labels_key else LABEL_KEYS
    return _one(arrays, _present(set(arrays.keys()), names, ""), "labels", "--labels-key")


def has_split(arrays: Arrays, split: str, options: ReadOptions) -> bool:
    names = SCORE_KEYS + LABEL_KEYS + tuple(k for k in (options.logits_key, options.labels_key) if k)
    keys = set(arrays.keys())
    return any(f"{split}_{name}" in keys for name in names)
