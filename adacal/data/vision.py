"""CIFAR-10, CIFAR-100 and SVHN: read `<data-dir>/<name>.npz`, else download once through torchvision and cache it.

Splits (as the paper and the AdaFocal / focal_calibration reference code): a seeded permutation of the official
training set (`np.random.default_rng(seed).permutation`); its first `val_size` images are the validation split, the
rest the training split; the official test set is the test split. `val_size` defaults to a tenth of the official
training set: CIFAR-10/100 45,000 / 5,000 / 10,000; SVHN (train set only, no "extra") 65,932 / 7,325 / 26,032.
`train_subset=N` keeps the first N of the shuffled training part (val and test unchanged).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adacal.data.base import (
    data_location_hint,
    DATASETS,
    NORMALIZATION,
    Dataset,
    Split,
    check_data_file,
    default_val_size,
    folders_removed_on_failure,
    images_to_tensor,
    labels_to_tensor,
    shuffled_split,
    split_record,
)
from adacal.data.image_arrays import describe_image_npz, read_image_npz, write_image_npz
from adacal.errors import DataUnavailableError, InputError

# What a torchvision download can raise: network (URLError is an OSError), disk, and integrity checks (RuntimeError).
DOWNLOAD_ERRORS = (OSError, RuntimeError)


@dataclass(frozen=True)
class ArrayDatasetSpec:
    name: str
    title: str
    num_classes: int
    image_size: tuple[int, int]
    fetch: Callable[[Path], dict[str, Any]]

    @property
    def file_name(self) -> str:
        return f"{self.name}.npz"


def _fetch_cifar(class_name: str) -> Callable[[Path], dict[str, Any]]:
    def fetch(root: Path) -> dict[str, Any]:
        from torchvision import datasets

        factory = getattr(datasets, class_name)
        train = factory(root=str(root), train=True, download=True)
        test = factory(root=str(root), train=False, download=True)
        return {
            "train_x": np.asarray(train.data, dtype=np.uint8),
            "train_y": np.asarray(train.targets, dtype=np.int64),
            "test_x": np.asarray(test.data, dtype=np.uint8),
            "test_y": np.asarray(test.targets, dtype=np.int64),
            "classes": list(train.classes),
        }

    return fetch


def _fetch_svhn(root: Path) -> dict[str, Any]:
    from torchvision import datasets

    train = datasets.SVHN(root=str(root), split="train", download=True)
    test = datasets.SVHN(root=str(root), split="test", download=True)
    # torchvision keeps SVHN as (N, C, H, W); the cache format is HWC like CIFAR.
    return {
        "train_x": np.ascontiguousarray(np.asarray(train.data, dtype=np.uint8).transpose(0, 2, 3, 1)),
        "train_y": np.asarray(train.labels, dtype=np.int64),
        "test_x": np.ascontiguousarray(np.asarray(test.data, dtype=np.uint8).transpose(0, 2, 3, 1)),
        "test_y": np.asarray(test.labels, dtype=np.int64),
        "classes": [str(digit) for digit in range(10)],
    }


SPECS = {
    "cifar10": ArrayDatasetSpec("cifar10", "CIFAR-10", 10, (32, 32), _fetch_cifar("CIFAR10")),
    "cifar100": ArrayDatasetSpec("cifar100", "CIFAR-100", 100, (32, 32), _fetch_cifar("CIFAR100")),
    "svhn": ArrayDatasetSpec("svhn", "SVHN", 10, (32, 32), _fetch_svhn),
}


def load_image_arrays(spec: ArrayDatasetSpec, data_dir: Path, *, download: bool) -> tuple[dict[str, Any], str]:
    """The validated arrays of `spec` and where they came from (the .npz path, or 'torchvision download')."""
    path = data_dir / spec.file_name
    what = describe_image_npz(spec.file_name)
    check_data_file(path, what)
    if path.is_file():
        return read_image_npz(path, num_classes=spec.num_classes, image_size=spec.image_size), str(path)
    if not download:
        raise DataUnavailableError(
            f"{spec.title} is not in {data_dir} and download is off. Put {what} in {data_dir}, "
            f"{data_location_hint()}."
        )
    try:
        with folders_removed_on_failure(data_dir):  # a download that cannot happen leaves no folder behind
            data_dir.mkdir(parents=True, exist_ok=True)
            arrays = spec.fetch(data_dir)
    except DOWNLOAD_ERRORS as exc:
        reason = " ".join(f"{exc.__class__.__name__}: {exc}".split())
        raise DataUnavailableError(
            f"Could not download {spec.title} into {data_dir} ({reason}). Put {what} in {data_dir}, "
            f"{data_location_hint()}."
        ) from None
    try:
        write_image_npz(path, **arrays)
        source = str(path)
    except InputError:
        source = "torchvision download (cache not writable)"
    # Validate what the downloader gave, through the same checks a user's file gets.
    checked = {
        "train_x": arrays["train_x"],
        "train_y": np.asarray(arrays["train_y"], dtype=np.int64),
        "test_x": arrays["test_x"],
        "test_y": np.asarray(arrays["test_y"], dtype=np.int64),
        "classes": np.asarray([str(c) for c in arrays["classes"]]),
    }
    return checked, source


def build_image_dataset(
    name: str,
    arrays: dict[str, Any],
    *,
    source: str,
    seed: int,
    train_subset: int | None,
    val_size: int | None,
    method: str,
    train_val: tuple[np.ndarray, np.ndarray] | None = None,
) -> Dataset:
    """A Dataset from HWC uint8 arrays: train/val from the official train set, test = the official test set."""
    train_x, train_y = arrays["train_x"], arrays["train_y"]
    n_train = len(train_x)
    if val_size is None:
        val_size = default_val_size(n_train)
    if train_val is None:
        train_idx, val_idx = shuffled_split(
            n_train, val_size=val_size, seed=seed, train_subset=train_subset, what=name
        )
    else:
        train_idx, val_idx = train_val
    train = Split(images_to_tensor(train_x, train_idx), labels_to_tensor(train_y, train_idx))
    val = Split(images_to_tensor(train_x, val_idx), labels_to_tensor(train_y, val_idx))
    test = Split(images_to_tensor(arrays["test_x"]), labels_to_tensor(arrays["test_y"]))
    classes = [str(c) for c in arrays["classes"]]
    mean, std = NORMALIZATION[name]
    height, width, channels = train_x.shape[1:]
    return Dataset(
        name=name,
        kind="image",
        num_classes=len(classes),
        classes=classes,
        input_shape=(int(channels), int(height), int(width)),
        train=train,
        val=val,
        test=test,
        split_info=split_record(
            source=source, seed=seed, val_size=val_size, train_subset=train_subset,
            train_pool=n_train - int(val_size), train=train, val=val, test=test, method=method,
        ),
        extra={"mean": mean, "std": std, "augment_padding": 4},
    )


_SHUFFLE_METHOD = (
    "numpy default_rng(seed).permutation of the official training set; first val_size -> val, the rest -> train "
    "(train_subset keeps its first N); official test set -> test"
)


def _register(spec: ArrayDatasetSpec) -> None:
    @DATASETS.register(spec.name)
    def load(
        *, data_dir: Path, seed: int = 0, train_subset: int | None = None, download: bool = True,
        val_size: int | None = None
    ) -> Dataset:
        arrays, source = load_image_arrays(spec, data_dir, download=download)
        return build_image_dataset(
            spec.name, arrays, source=source, seed=seed, train_subset=train_subset, val_size=val_size,
            method=_SHUFFLE_METHOD,
        )

    load.__doc__ = f"{spec.title} from {spec.file_name} or a torchvision download (see the module docstring)."


for _spec in SPECS.values():
    _register(_spec)
