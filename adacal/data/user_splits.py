"""The splits of a user's own data set (`adacal train --dataset PATH`): the content fingerprint a run records, the
seeded class-stratified val/test draws for the parts the data does not give, and the `Dataset` they make. Shared by
the readers of each kind (`adacal.data.user_data` for tables and arrays, `adacal.data.user_images` for folders)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from adacal.data.base import Dataset, Split, default_val_size, split_record, stratified_split, take_subset
from adacal.errors import InputError

# The test split a user's data does not give is drawn with this seed whatever --seed is (like an official test set).
USER_TEST_SEED = 0


def fingerprint(path: Path, files: list[Path] | None = None) -> str:
    """A content fingerprint: the sha256 of a file's bytes, or for a folder of the sorted list of its data files
    (path relative to the folder, and size). Recorded in the split record; resume and evaluate compare it."""
    digest = hashlib.sha256()
    path = Path(path)
    if files is None:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return f"sha256:{digest.hexdigest()}"
    for file in sorted(files):
        digest.update(f"{file.relative_to(path).as_posix()}\t{file.stat().st_size}\n".encode())
    return f"files-sha256:{digest.hexdigest()}"


def class_counts_check(labels: np.ndarray, classes: list[str], *, carved: int, what: str) -> None:
    """Every class of a pool that `carved` splits are drawn from needs carved + 1 samples (one left for training)."""
    if carved == 0:
        return
    counts = np.bincount(labels, minlength=len(classes))
    low = int(np.argmin(counts))
    if counts[low] < carved + 1:
        parts = "validation and test splits" if carved == 2 else "a split"
        raise InputError(
            f"Expected at least {carved + 1} samples of each class in {what} (to split off {parts} by class and keep "
            f"some for training), got {int(counts[low])} of class '{classes[low]}': add samples of it, or give "
            "separate val/test parts."
        )


def split_pool(
    labels: np.ndarray, classes: list[str], *, given: dict[str, np.ndarray], seed: int, val_size: int | None,
    train_subset: int | None, what: str,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Indices into the pool (`labels`) of each split the data does not give (`given`: the labels of the splits it
    gives, "val" and/or "test"), by the module's rules; and the split details for the record."""
    need_test, need_val = "test" not in given, "val" not in given
    if val_size is not None and not need_val:
        raise InputError(f"--val-size applies when the validation split is drawn from the training data, but {what} "
                         "has its own validation part.")
    class_counts_check(labels, classes, carved=int(need_test) + int(need_val), what=what)
    n = len(labels)
    rest = np.random.default_rng(seed).permutation(n)
    parts: dict[str, np.ndarray] = {}
    method = []
    if need_test:
        keep, test = stratified_split(labels, take=max(1, n // 5), seed=USER_TEST_SEED, what=what)
        rest, parts["test"] = keep, test
        method.append("test: a class-stratified fifth of the data, seed 0")
    else:
        method.append("test: as given")
    if need_val:
        size = default_val_size(len(rest)) if val_size is None else val_size
        train_pos, val_pos = stratified_split(labels[rest], take=size, seed=seed, what=f"{what} (val)")
        parts["val"] = rest[val_pos]
        rest = rest[train_pos]
        method.append("val: val_size class-stratified with the seed (default a tenth of the rest)")
    else:
        size = len(given["val"])
        method.append("val: as given")
    missing = sorted(set(range(len(classes))) - set(labels[rest].tolist()))
    if missing:
        raise InputError(
            f"Expected samples of every class left for training in {what}, but class '{classes[missing[0]]}' has none "
            "after the validation and test splits: add samples of it, or lower --val-size."
        )
    parts["train"] = take_subset(rest, train_subset, what)
    method.append("train: the rest in seeded order (train_subset keeps its first N)")
    return parts, {"val_size": int(size), "train_pool": len(rest), "method": "; ".join(method)}


def make_dataset(
    path: Path, *, kind: str, classes: list[str], input_shape: tuple[int, ...], splits: dict[str, Split],
    seed: int, train_subset: int | None, details: dict[str, Any], split_details: dict[str, Any],
    extra: dict[str, Any],
) -> Dataset:
    return Dataset(
        name=str(path), kind=kind, num_classes=len(classes), classes=list(classes), input_shape=input_shape,
        train=splits["train"], val=splits["val"], test=splits["test"],
        split_info=split_record(
            source=str(path), seed=seed, val_size=split_details["val_size"], train_subset=train_subset,
            train_pool=split_details["train_pool"], train=splits["train"], val=splits["val"], test=splits["test"],
            method=split_details["method"], **details,
        ),
        extra={"default_model": "resnet20" if kind == "image" else "mlp", **extra},
    )
