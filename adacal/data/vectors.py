"""`digits`: scikit-learn's bundled 8x8 handwritten digits (1,797 samples, 10 classes), the offline default dataset.

Inputs are float32 (N, 64) pixel intensities scaled from 0..16 to [0, 1]. Splits (60 / 20 / 20, class-stratified):
test = a fixed 360 samples (stratified with seed 0 whatever `seed` is, so every run is scored on the same test set,
like an official test split); val = `val_size` (default 360) stratified from the remaining 1,437 with `seed`;
train = the rest (1,077 by default; `train_subset=N` keeps the first N of its seeded order).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from adacal.data.base import DATASETS, Dataset, Split, split_record, stratified_split, take_subset

DIGITS_TEST_SIZE = 360
DIGITS_VAL_SIZE = 360
DIGITS_TEST_SEED = 0


@DATASETS.register("digits")
def load_digits_dataset(
    *, data_dir: Path, seed: int = 0, train_subset: int | None = None, download: bool = True,
    val_size: int | None = None
) -> Dataset:
    """sklearn.datasets.load_digits split 1,077 / 360 / 360 (see the module docstring)."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    inputs = (np.asarray(bunch.data, dtype=np.float32) / 16.0).astype(np.float32)
    labels = np.asarray(bunch.target, dtype=np.int64)
    rest, test_idx = stratified_split(labels, take=DIGITS_TEST_SIZE, seed=DIGITS_TEST_SEED, what="digits")
    val_size = DIGITS_VAL_SIZE if val_size is None else val_size
    train_pos, val_pos = stratified_split(labels[rest], take=val_size, seed=seed, what="digits (val)")
    train_idx = take_subset(rest[train_pos], train_subset, "digits")
    val_idx = rest[val_pos]

    def split(index: np.ndarray) -> Split:
        return Split(torch.from_numpy(inputs[index]), torch.from_numpy(labels[index]))

    train, val, test = split(train_idx), split(val_idx), split(test_idx)
    return Dataset(
        name="digits",
        kind="vector",
        num_classes=10,
        classes=[str(d) for d in range(10)],
        input_shape=(64,),
        train=train,
        val=val,
        test=test,
        split_info=split_record(
            source="sklearn.datasets.load_digits", seed=seed, val_size=val_size, train_subset=train_subset,
            train_pool=len(train_pos), train=train, val=val, test=test,
            method="class-stratified: fixed test (360, seed 0); val (val_size) from the rest with `seed`; "
            "train = the remainder in seeded order (train_subset keeps its first N)",
        ),
        extra={"feature_range": (0.0, 1.0)},
    )
