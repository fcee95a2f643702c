"""digits (the bundled offline dataset), load_dataset's argument checks and the registry of dataset names."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.data import dataset_names, default_data_dir, load_dataset, normalization
from adacal.errors import InputError, UnknownNameError


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", seed=0)


def test_digits_sizes_types_and_metadata(digits):
    assert digits.kind == "vector" and digits.num_classes == 10 and digits.input_shape == (64,)
    assert (len(digits.train), len(digits.val), len(digits.test)) == (1077, 360, 360)
    assert digits.split_info["sizes"] == {"train": 1077, "val": 360, "test": 360}
    assert digits.split_info["seed"] == 0
    for split in (digits.train, digits.val, digits.test):
        assert split.inputs.dtype == torch.float32 and split.labels.dtype == torch.int64
        assert 0.0 <= float(split.inputs.min()) and float(split.inputs.max()) <= 1.0
    assert float(digits.train.inputs.max()) == 1.0


def test_digits_splits_are_stratified_and_disjoint(digits):
    rows = {name: {tuple(r) for r in digits.split(name).inputs.numpy().round(4)} for name in ("train", "val", "test")}
    # Samples are identified by content; load_digits has a handful of exact duplicates, so allow a tiny overlap.
    assert len(rows["train"] & rows["val"]) <= 3 and len(rows["train"] & rows["test"]) <= 3
    for split in (digits.val, digits.test):
        counts = torch.bincount(split.labels, minlength=10)
        assert counts.min() >= 34 and counts.max() <= 38  # 360 over ~180 per class: 36 each, +-2


def _indices_of(dataset):
    from sklearn.datasets import load_digits

    data = (load_digits().data / 16.0).astype(np.float32)
    lookup = {row.tobytes(): i for i, row in enumerate(data)}
    return {name: [lookup[row.tobytes()] for row in dataset.split(name).inputs.numpy()]
            for name in ("train", "val", "test")}


def test_digits_split_indices_partition_the_data(digits):
    index = _indices_of(digits)
    train, val, test = set(index["train"]), set(index["val"]), set(index["test"])
    assert not (train & val) and not (train & test) and not (val & test)
    assert len(train | val | test) >= 1797 - 20  # duplicates in load_digits map to one index


def test_digits_determinism_and_seed(digits):
    again = load_dataset("digits", seed=0)
    assert torch.equal(again.train.inputs, digits.train.inputs) and torch.equal(again.val.labels, digits.val.labels)
    other = load_dataset("digits", seed=1)
    assert not torch.equal(other.val.inputs, digits.val.inputs)
    assert torch.equal(other.test.inputs, digits.test.inputs)  # the test split is fixed across seeds


def test_split_subset(digits):
    part = digits.train.subset([3, 1])
    assert len(part) == 2 and torch.equal(part.inputs[0], digits.train.inputs[3])
    assert torch.equal(part.labels, digits.train.labels[[3, 1]])
    with pytest.raises(InputError, match="as many labels as inputs"):
        type(part)(part.inputs, part.labels[:1])


def test_train_subset_and_val_size(digits):
    small = load_dataset("digits", seed=0, train_subset=100)
    assert len(small.train) == 100 and torch.equal(small.train.inputs, digits.train.inputs[:100])
    assert torch.equal(small.val.inputs, digits.val.inputs)
    custom = load_dataset("digits", seed=0, val_size=100)
    assert (len(custom.train), len(custom.val), len(custom.test)) == (1337, 100, 360)
    with pytest.raises(InputError, match="train_subset at most 1077"):
        load_dataset("digits", train_subset=5000)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"seed": -1}, "seed"), ({"train_subset": 0}, "train_subset"), ({"val_size": 0}, "val_size"),
     ({"seed": 1.5}, "seed"), ({"max_length": 3}, "does not take option")],
)
def test_bad_arguments_are_input_errors(kwargs, message):
    with pytest.raises(InputError, match=message):
        load_dataset("digits", **kwargs)


def test_unknown_dataset_suggests_the_closest_name():
    with pytest.raises(UnknownNameError, match="Did you mean 'cifar10'"):
        load_dataset("cifar-10")


def test_dataset_names_and_default_dir(monkeypatch, tmp_path):
    assert ({"digits", "cifar10", "cifar100", "svhn", "tiny-imagenet", "imagenet", "20newsgroups"}
            <= set(dataset_names()))
    monkeypatch.setenv("ADACAL_DATA", str(tmp_path))
    assert default_data_dir() == tmp_path
    monkeypatch.delenv("ADACAL_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_data_dir() == tmp_path / "cache" / "adacal"
    assert normalization("cifar10")[0] == (0.4914, 0.4822, 0.4465)
    assert normalization("digits") is None
