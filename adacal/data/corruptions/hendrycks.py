"""Hendrycks & Dietterich's published CIFAR-10-C / CIFAR-100-C files (https://zenodo.org/records/2535967), read and
checked where a user has them.

`<data-dir>/CIFAR-10-C/<corruption>.npy` (50,000 x 32 x 32 x 3 uint8: severities 1-5 one after another, 10,000
images each, in the order of the CIFAR-10 test set) and `labels.npy` (50,000 labels); the folder may also be
`<data-dir>` itself. All 19 corruptions work from the files. The files are checked before use
(`check_cifar_c_arrays`): 5 x 10,000 uint8 32x32x3 images, and labels whose every severity block equals the test
labels of `<data-dir>/cifar10.npz` (cifar100.npz) in order when that file is there (else the five blocks must agree),
all below the set's number of classes — so CIFAR-100-C files in a CIFAR-10-C folder, or files of another test-set
order, are refused rather than scored.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from adacal.data.base import Split, check_data_file, default_data_dir
from adacal.data.corruptions.suite import CIFAR_C_SEVERITIES, UNAVAILABLE, check_corruption, check_severity
from adacal.data.image_arrays import describe_image_npz
from adacal.data.vision import SPECS
from adacal.errors import InputError

# The corrupted sets `adacal ood --out` names, their clean dataset and the folder of Hendrycks' files.
CORRUPTED_SETS = {"cifar10-c": "cifar10", "cifar100-c": "cifar100"}
CORRUPTED_FOLDERS = {"cifar10-c": "CIFAR-10-C", "cifar100-c": "CIFAR-100-C"}


def cifar_c_folder(name: str, data_dir: str | os.PathLike | None) -> Path | None:
    """The folder holding Hendrycks' files for "cifar10-c" / "cifar100-c" (one with labels.npy):
    `<data-dir>/CIFAR-10-C`, else `<data-dir>` itself; None when neither has them."""
    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    for folder in (root / CORRUPTED_FOLDERS[name], root):
        if (folder / "labels.npy").is_file():
            return folder
    return None


def hendrycks_file(name: str, corruption: str | None, data_dir: str | os.PathLike | None) -> Path | None:
    """The `<corruption>.npy` of Hendrycks' files that `load_ood_set(name, corruption=...)` reads, or None when it
    would not read one (another set, no corruption, no such file)."""
    key = str(name).lower()
    if key not in CORRUPTED_SETS or corruption is None:
        return None
    folder = cifar_c_folder(key, data_dir)
    path = None if folder is None else folder / f"{check_corruption(corruption)}.npy"
    return path if path is not None and path.is_file() else None


def missing_files_message(name: str, corruption: str, data_dir: str | os.PathLike | None) -> str:
    """The one-line refusal for a corruption of "cifar10-c" / "cifar100-c" that adacal cannot generate (`UNAVAILABLE`)
    and whose file is not there: where it was looked for, and why it cannot be made instead."""
    where = cifar_c_folder(name, data_dir)
    hint = (f"{where} has no {corruption}.npy" if where is not None else
            f"Hendrycks' CIFAR-C files were not found under {data_dir or default_data_dir()}")
    return (
        f"Expected corruption '{corruption}' from Hendrycks' CIFAR-10-C / CIFAR-100-C files (--data-dir DIR with "
        f"DIR/{CORRUPTED_FOLDERS[name]}/{corruption}.npy and labels.npy), but {hint}; adacal cannot generate it: it "
        f"{UNAVAILABLE.get(corruption, 'is not one adacal generates')}."
    )


def _load_npy(path: Path) -> np.ndarray:
    """A memory-mapped .npy (only the rows indexed later are read); a damaged file is an InputError."""
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, OverflowError) as exc:  # OverflowError: a declared shape past any index
        raise InputError(f"Expected {path} to be a .npy array file, but it could not be read ({exc}).") from None


def load_cifar_c(
    folder: str | os.PathLike,
    corruption: str,
    *,
    severity: int,
    select: Callable[[int, np.ndarray], np.ndarray | None] | None = None,
    dataset: str = "cifar10",
    test_labels: np.ndarray | None = None,
    test_source: str | None = None,
) -> tuple[Split, int]:
    """Images of one corruption and severity from Hendrycks' layout: (Split uint8 NCHW, images per severity).

    `<folder>/<corruption>.npy` holds 5 x n images (severity s = rows (s-1)n ... sn-1) and `<folder>/labels.npy` their
    5 x n labels. `check_cifar_c_arrays` checks them first against `dataset` ("cifar10" or "cifar100"): shapes, labels
    below its number of classes, and each severity's labels equal to `test_labels` (the clean test set's, so n is
    its size and the rows are its images in order) when given, else to the first severity's. `select(n, labels)` (the
    severity's n labels) may return the indices (into its n images) to keep; only those rows are read from disk, so
    memory follows the selection, not the file.
    """
    folder = Path(folder)
    corruption = check_corruption(corruption)
    severity = check_severity(severity)
    images_path, labels_path = folder / f"{corruption}.npy", folder / "labels.npy"
    if not images_path.is_file():
        raise InputError(
            f"Expected {images_path} (Hendrycks' CIFAR-C layout) for corruption '{corruption}', but it does not exist."
        )
    images, labels = _load_npy(images_path), _load_npy(labels_path)
    labels = check_cifar_c_arrays(images, labels, dataset=dataset, test_labels=test_labels, test_source=test_source,
                                  images_path=images_path, labels_path=labels_path)
    n = len(images) // CIFAR_C_SEVERITIES
    start = (severity - 1) * n
    rows = np.arange(n) if select is None else select(n, labels[start:start + n])
    rows = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
    picked = np.ascontiguousarray(images[start + rows])
    picked_labels = labels[start + rows]
    inputs = torch.from_numpy(np.ascontiguousarray(picked.transpose(0, 3, 1, 2)))
    return Split(inputs, torch.from_numpy(picked_labels)), n


def check_cifar_c_arrays(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    dataset: str = "cifar10",
    test_labels: np.ndarray | None = None,
    test_source: str | None = None,
    images_path: str | os.PathLike = "<corruption>.npy",
    labels_path: str | os.PathLike = "labels.npy",
) -> np.ndarray:
    """Check Hendrycks' CIFAR-C arrays of `dataset` ("cifar10" or "cifar100") and return the labels as int64.

    `images` (only its header is looked at; memory-map it) must be uint8 (5n, 32, 32, 3) and `labels` integers (5n,)
    in 0 ... K-1, K the dataset's classes. With the clean `test_labels` (the dataset's test set, e.g. `test_y` of
    cifar10.npz; `test_source` names where they came from), n must be their number and each severity's n labels must
    equal them in order — the rows are then the corrupted test images in the test set's order; without them, each
    severity's labels must equal the first severity's. Anything else is a one-line InputError naming the file and what
    differs.
    """
    spec = SPECS[dataset]
    title = spec.title
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise InputError(
            f"Expected {images_path} to hold uint8 images (N, H, W, 3), got {images.dtype} {tuple(images.shape)}."
        )
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer) or len(labels) != len(images):
        raise InputError(
            f"Expected {labels_path} to hold {len(images)} integer labels (one per image in {Path(images_path).name}), "
            f"got {labels.dtype} {tuple(labels.shape)}."
        )
    if len(images) == 0 or len(images) % CIFAR_C_SEVERITIES:
        raise InputError(
            f"Expected {images_path} to hold {CIFAR_C_SEVERITIES} severities of equally many images, "
            f"got {len(images)} images."
        )
    values = np.asarray(labels)  # 5 x 10,000 integers: cheap to read whole
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= spec.num_classes:
        raise InputError(
            f"Expected {labels_path} to hold {title} labels 0 ... {spec.num_classes - 1}, got values from {low} to "
            f"{high} (the files of another dataset, such as CIFAR-100-C in a CIFAR-10-C folder?)."
        )
    n = len(images) // CIFAR_C_SEVERITIES
    if test_labels is not None:
        test_labels = np.asarray(test_labels).reshape(-1)
    of = f" of {test_source}" if test_source else ""
    size = n if test_labels is None else len(test_labels)
    expected = (CIFAR_C_SEVERITIES * size, *spec.image_size, 3)
    if tuple(images.shape) != expected:
        per = f"{size:,} {title} test images" if test_labels is None else f"the {size:,} {title} test images{of}"
        raise InputError(
            f"Expected {images_path} to hold {CIFAR_C_SEVERITIES} severities of {per}, uint8 of shape {expected}, "
            f"got {tuple(images.shape)} ({n:,} images of {images.shape[1]}x{images.shape[2]} per severity)."
        )
    values = values.astype(np.int64)
    if test_labels is not None and (not np.issubdtype(test_labels.dtype, np.integer) or len(test_labels) == 0):
        raise InputError(f"Expected the {title} test labels to compare {labels_path} with to be integers, got "
                         f"{test_labels.dtype} of shape {test_labels.shape}.")
    reference = values[:n] if test_labels is None else test_labels.astype(np.int64)
    against = "the first severity's labels" if test_labels is None else f"the {title} test labels{of}"
    for severity in range(1, CIFAR_C_SEVERITIES + 1):
        block = values[(severity - 1) * n : severity * n]
        differ = np.flatnonzero(block != reference)
        if differ.size:
            first = int(differ[0])
            raise InputError(
                f"Expected each severity of {labels_path} to hold {against} in order, but severity {severity} differs "
                f"in {differ.size:,} of {n:,} rows (row {(severity - 1) * n + first} is {block[first]}, not "
                f"{reference[first]}): the files do not hold the {title} test images in order."
            )
    return values


def cifar_test_labels(dataset: str, data_dir: str | os.PathLike | None) -> tuple[np.ndarray, Path] | None:
    """(test labels, file) of `<data-dir>/<dataset>.npz` ("cifar10" or "cifar100"), reading only its `test_y`;
    None when the file is not there (nothing is downloaded for this check)."""
    from adacal.sources.files import NpzArchive

    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    path = root / SPECS[dataset].file_name
    check_data_file(path, describe_image_npz(path.name))
    if not path.is_file():
        return None
    with NpzArchive(path, "a dataset file (.npz)") as archive:
        if "test_y" not in archive.files:
            raise InputError(f"Expected {path} to hold the test labels under 'test_y', but it has none.")
        test_y = archive["test_y"]
    if not np.issubdtype(test_y.dtype, np.integer) or test_y.ndim not in (1, 2) or (
        test_y.ndim == 2 and test_y.shape[1] != 1
    ):
        raise InputError(f"Expected 'test_y' in {path} to be integer labels (N,), got {test_y.dtype} {test_y.shape}.")
    return test_y.reshape(-1), path
