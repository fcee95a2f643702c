"""The prepared-array format for image datasets: `<name>.npz` with train_x, train_y, test_x, test_y, classes.

train_x / test_x are uint8 (N, H, W, C) RGB images (HWC, as numpy / PIL / torchvision's CIFAR hold them), train_y /
test_y integer labels (N,), classes a (K,) string array. Written uncompressed (loads in about a second; CIFAR images
hardly compress). This is the format of /work/shared/data/cifar10.npz and of the cache adacal writes after a download.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

from adacal.writing import write_file
from adacal.errors import InputError

IMAGE_NPZ_KEYS = ("train_x", "train_y", "test_x", "test_y", "classes")


def describe_image_npz(file_name: str) -> str:
    return f"{file_name} (keys {', '.join(IMAGE_NPZ_KEYS)})"


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """All arrays of an .npz file, without pickle; an unreadable file is an InputError naming it."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise InputError(f"Cannot read {path} ({exc.strerror or exc}).") from None
    if magic[:2] != b"PK":
        raise InputError(f"Cannot read {path} as an .npz file (it is not a zip archive of .npy arrays).")
    # The predictions files' reader: each member's declared shape is checked against its zip entry and the memory
    # before anything is allocated (a header declaring 10^7 images is refused, not a MemoryError), never a pickle.
    from adacal.sources.files import NpzArchive

    try:
        with NpzArchive(path, "a dataset file (.npz)") as archive:
            return {key: archive[key] for key in archive.files}
    except InputError:
        raise
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, KeyError, zlib.error) as exc:
        raise InputError(f"Cannot read {path} as an .npz file ({exc.__class__.__name__}: {exc}).") from None


# Other libraries' names for the prepared arrays (Keras' `load_data()` returns x_train, y_train, ...).
_OTHER_KEY_NAMES = {"x_train": "train_x", "y_train": "train_y", "x_test": "test_x", "y_test": "test_y",
                    "train_images": "train_x", "train_labels": "train_y", "test_images": "test_x",
                    "test_labels": "test_y", "class_names": "classes"}


def read_image_npz(
    path: Path,
    *,
    num_classes: int | None = None,
    image_size: tuple[int, int] | None = None,
) -> dict[str, np.ndarray]:
    """Read and validate a prepared image dataset; returns arrays with labels as int64 and classes as list-able str."""
    arrays = read_npz(path)
    missing = [key for key in IMAGE_NPZ_KEYS if key not in arrays]
    if missing:
        renames = [f"{theirs} → {ours}" for theirs, ours in _OTHER_KEY_NAMES.items() if theirs in arrays
                   and ours in missing]
        hint = f"; rename {', '.join(renames)}" if renames else ""
        raise InputError(
            f"Expected {path} to hold the keys {', '.join(IMAGE_NPZ_KEYS)}; missing {', '.join(missing)} (it has "
            f"{', '.join(sorted(arrays)) or 'nothing'}){hint}."
        )
    classes = arrays["classes"]
    if classes.ndim != 1 or classes.dtype.kind not in "US":
        raise InputError(f"Expected 'classes' in {path} to be a 1-D array of names, got {classes.dtype} "
                         f"{classes.shape}.")
    if num_classes is not None and len(classes) != num_classes:
        raise InputError(f"Expected {num_classes} class names in 'classes' of {path}, got {len(classes)}.")
    k = len(classes)
    for part in ("train", "test"):
        images = check_images(arrays[f"{part}_x"], name=f"'{part}_x' in {path}", image_size=image_size)
        arrays[f"{part}_x"] = images
        arrays[f"{part}_y"] = check_image_labels(
            arrays[f"{part}_y"], n=len(images), num_classes=k, name=f"'{part}_y' in {path}"
        )
    if arrays["train_x"].shape[1:] != arrays["test_x"].shape[1:]:
        raise InputError(
            f"Expected train_x and test_x in {path} to have the same image shape, "
            f"got {arrays['train_x'].shape[1:]} and {arrays['test_x'].shape[1:]}."
        )
    arrays["classes"] = classes.astype(str)
    return arrays


def check_images(images: np.ndarray, *, name: str, image_size: tuple[int, int] | None = None) -> np.ndarray:
    """uint8 (N, H, W, C) with C in {1, 3}; a grayscale (N, H, W) array gets a channel axis."""
    if images.dtype != np.uint8:
        hint = (": scale to 0-255 and convert, e.g. (x * 255).round().astype(np.uint8) for values in [0, 1]"
                if images.dtype.kind == "f" else "")
        raise InputError(f"Expected {name} to be uint8 images (N, H, W, C), got dtype {images.dtype}{hint}.")
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4 or images.shape[-1] not in (1, 3):
        hint = (": channels first (N, C, H, W), it seems; store x.transpose(0, 2, 3, 1)"
                if images.ndim == 4 and images.shape[1] in (1, 3) else "")
        raise InputError(f"Expected {name} to be images of shape (N, H, W, C) with C = 1 or 3, got "
                         f"{images.shape}{hint}.")
    if len(images) == 0:
        raise InputError(f"Expected {name} to hold at least one image, got shape {images.shape}.")
    if image_size is not None and tuple(images.shape[1:3]) != tuple(image_size):
        expected = (*image_size, images.shape[-1])
        raise InputError(f"Expected {name} to have images of shape {expected} (HWC), got {images.shape[1:]}.")
    return images


def check_image_labels(labels: np.ndarray, *, n: int, num_classes: int | None, name: str) -> np.ndarray:
    """Integer labels (N,) as int64; a column (N, 1) is read as 1-D (Keras' `cifar10.load_data()` holds its labels
    so)."""
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise InputError(f"Expected {name} to be 1-D integer labels, got dtype {labels.dtype} shape {labels.shape}.")
    if len(labels) != n:
        raise InputError(f"Expected {name} to have {n} labels (one per image), got {len(labels)}.")
    # The range is checked before the cast to int64: uint64 labels beyond 2**63 would wrap to negative numbers and
    # the message would name values the file does not hold.
    limit = num_classes if num_classes is not None else np.iinfo(np.int64).max
    if len(labels) and (labels.min() < 0 or labels.max() >= limit):
        upper = num_classes - 1 if num_classes is not None else "..."
        raise InputError(f"Expected {name} in [0, {upper}], got values from {labels.min()} to {labels.max()}.")
    return labels.astype(np.int64)


def write_image_npz(
    path: Path,
    *,
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    classes: list[str],
) -> Path:
    """Write the prepared-array format atomically (temp file + os.replace), uncompressed; InputError if it cannot."""
    arrays = {
        "train_x": np.ascontiguousarray(train_x, dtype=np.uint8),
        "train_y": np.asarray(train_y, dtype=np.int64),
        "test_x": np.ascontiguousarray(test_x, dtype=np.uint8),
        "test_y": np.asarray(test_y, dtype=np.int64),
        "classes": np.asarray([str(c) for c in classes]),
    }
    return write_file(path, lambda handle: np.savez(handle, **arrays), binary=True)
