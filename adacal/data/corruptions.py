"""Image corruptions (CIFAR-10-C style) and the out-of-distribution sets `adacal ood` scores against.

gaussian_noise follows Hendrycks & Dietterich (2019): x in [0, 1], add N(0, sigma^2) per pixel and channel with
sigma = 0.04, 0.06, 0.08, 0.09, 0.10 for severities 1-5 (their CIFAR values), clip to [0, 1], scale by 255. Rounding:
we round to the nearest grey level (np.rint); their script casts with np.uint8, which truncates and darkens images by
half a grey level on average. The noise is generated in HWC order from numpy's default_rng(seed), so the same seed
corrupts an image identically whether it is passed as NHWC or NCHW.

Hendrycks' published CIFAR-10-C / CIFAR-100-C (https://zenodo.org/records/2535967) are read where a user has them:
`<data-dir>/CIFAR-10-C/<corruption>.npy` (50,000 x 32 x 32 x 3 uint8: severities 1-5 one after another, 10,000
images each, in the order of the CIFAR-10 test set) and `labels.npy` (50,000 labels); the folder may also be
`<data-dir>` itself. All 19 corruptions work from the files; without them gaussian_noise is generated here. The files
are checked before use (`check_cifar_c_arrays`): 5 x 10,000 uint8 32x32x3 images, and labels whose every severity
block equals the test labels of `<data-dir>/cifar10.npz` (cifar100.npz) in order when that file is there (else the
five blocks must agree), all below the set's number of classes — so CIFAR-100-C files in a CIFAR-10-C folder, or files
of another test-set order, are refused rather than scored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.data.base import (
    DATASETS,
    Split,
    check_data_file,
    default_data_dir,
    images_to_tensor,
    labels_to_tensor,
    load_dataset,
)
from adacal.data.image_arrays import check_image_labels, check_images, describe_image_npz, read_npz
from adacal.data.vision import SPECS, load_image_arrays
from adacal.errors import InputError, unknown_name
from adacal.registry import Registry

CORRUPTIONS: Registry[Any] = Registry("corruption")

GAUSSIAN_NOISE_SIGMAS = (0.04, 0.06, 0.08, 0.09, 0.10)
# The corruptions of Hendrycks & Dietterich's published CIFAR-10-C / CIFAR-100-C (15 main + 4 extra), as file stems.
CIFAR_C_CORRUPTIONS = (
    "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur", "motion_blur", "zoom_blur",
    "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate", "jpeg_compression",
    "speckle_noise", "gaussian_blur", "spatter", "saturate",
)
CIFAR_C_SEVERITIES = 5
_CHUNK = 1024  # images per noise draw: bounds the float32 working memory (~12 MB for 32x32x3 images)


def _check_severity(severity: Any) -> int:
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or not 1 <= severity <= 5:
        raise InputError(f"Expected severity to be an integer from 1 to 5, got {severity!r}.")
    return int(severity)


def _layout(shape: tuple[int, ...], layout: str) -> str:
    if layout in ("nhwc", "nchw"):
        return layout
    if layout != "auto":
        raise InputError(f"Expected layout auto, nhwc or nchw, got {layout!r}.")
    if shape[-1] in (1, 3):
        return "nhwc"
    if shape[1] in (1, 3):
        return "nchw"
    raise InputError(f"Expected images (N, H, W, C) or (N, C, H, W) with C = 1 or 3, got shape {shape}.")


@CORRUPTIONS.register("gaussian_noise")
def gaussian_noise(images: Any, *, severity: int, seed: int = 0, layout: str = "auto") -> Any:
    """Gaussian noise on uint8 images (N, C, H, W) or (N, H, W, C); returns uint8 in the same layout and type.

    Deterministic for a seed; labels are not touched (pass only the images). `layout` resolves an ambiguous shape
    (auto: channels last when the last axis is 1 or 3, else channels first).
    """
    severity = _check_severity(severity)
    is_torch = isinstance(images, torch.Tensor)
    array = images.detach().cpu().numpy() if is_torch else np.asarray(images)
    if array.dtype != np.uint8:
        raise InputError(f"Expected uint8 images, got dtype {array.dtype}.")
    if array.ndim != 4:
        raise InputError("Expected a batch of images with 4 axes (N, H, W, C) or (N, C, H, W), got shape "
                         f"{array.shape}.")
    order = _layout(array.shape, layout)
    hwc = array if order == "nhwc" else array.transpose(0, 2, 3, 1)
    sigma = GAUSSIAN_NOISE_SIGMAS[severity - 1]
    rng = np.random.default_rng(seed)
    out = np.empty(hwc.shape, dtype=np.uint8)
    for start in range(0, len(hwc), _CHUNK):
        block = hwc[start : start + _CHUNK].astype(np.float32) / 255.0
        block += rng.standard_normal(block.shape, dtype=np.float32) * np.float32(sigma)
        np.clip(block, 0.0, 1.0, out=block)
        out[start : start + _CHUNK] = np.rint(block * 255.0).astype(np.uint8)
    if order == "nchw":
        out = np.ascontiguousarray(out.transpose(0, 3, 1, 2))
    return torch.from_numpy(out) if is_torch else out


def corruption_names() -> list[str]:
    """The registered CIFAR-10-C corruption names, as `corrupt` and `adacal ood --corruption` take them."""
    return CORRUPTIONS.names()


def corrupt(images: Any, name: str, *, severity: int, seed: int = 0) -> Any:
    """Apply the corruption registered as `name`."""
    return CORRUPTIONS.get(name)(images, severity=severity, seed=seed)


# ------------------------------------------------------------------------------------------------------ OOD sets

_CORRUPTED_SETS = {"cifar10-c": "cifar10", "cifar100-c": "cifar100"}
_CORRUPTED_FOLDERS = {"cifar10-c": "CIFAR-10-C", "cifar100-c": "CIFAR-100-C"}


def ood_names() -> list[str]:
    """Names load_ood_split accepts (besides a path to an .npz file)."""
    return sorted({*_CORRUPTED_SETS, *DATASETS.names()})


# What the registered sets hold besides the .npz-backed image sets (SPECS), known without loading them: (kind,
# per-sample input shape, or None where it follows loader options: ImageNet's image_size, 20 Newsgroups' max_length).
_SET_INPUTS: dict[str, tuple[str, tuple[int, ...] | None]] = {
    "digits": ("vector", (64,)),
    "tiny-imagenet": ("image", (3, 64, 64)),
    "imagenet": ("image", None),
    "20newsgroups": ("text", None),
}


def ood_set_input(name: str) -> tuple[str, tuple[int, ...] | None] | None:
    """(kind, per-sample input shape or None) of the OOD set called `name` ("image", "vector" or "text"), from the
    dataset's spec alone — nothing is read or downloaded; None for a file or a set it does not know."""
    key = str(name).lower()
    base = _CORRUPTED_SETS.get(key, key)
    if base in SPECS:
        return "image", (3, *SPECS[base].image_size)
    return _SET_INPUTS.get(base)


def known_corruptions() -> list[str]:
    """Every corruption name --corruption accepts: the generated ones and those of Hendrycks' CIFAR-C files."""
    return sorted({*CIFAR_C_CORRUPTIONS, *CORRUPTIONS.names()})


def check_corruption(name: Any) -> str:
    """A known corruption name (lower case); an unknown one is an error listing the names and the closest."""
    key = str(name).strip().lower()
    if key not in known_corruptions():
        raise unknown_name("corruption", str(name), known_corruptions())
    return key


def _looks_like_path(name: str) -> bool:
    return name.lower().endswith(".npz") or os.sep in name or "/" in name or Path(name).is_file()


@dataclass(frozen=True)
class OODSet:
    """An out-of-distribution set: the (possibly subsampled) split, the per-sample input shape, how many samples the
    whole set holds, and where its images came from (`source`: "dataset", "file", "hendrycks-files" or
    "generated"; `files`: the .npy files read, if any)."""

    split: Split
    shape: tuple[int, ...]
    size: int
    source: str
    files: tuple[str, ...] = ()


def cifar_c_folder(name: str, data_dir: str | os.PathLike | None) -> Path | None:
    """The folder holding Hendrycks' files for "cifar10-c" / "cifar100-c" (one with labels.npy):
    `<data-dir>/CIFAR-10-C`, else `<data-dir>` itself; None when neither has them."""
    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    for folder in (root / _CORRUPTED_FOLDERS[name], root):
        if (folder / "labels.npy").is_file():
            return folder
    return None


def hendrycks_file(name: str, corruption: str | None, data_dir: str | os.PathLike | None) -> Path | None:
    """The `<corruption>.npy` of Hendrycks' files that `load_ood_set(name, corruption=...)` reads, or None when it
    would not read one (another set, no corruption, no such file)."""
    key = str(name).lower()
    if key not in _CORRUPTED_SETS or corruption is None:
        return None
    folder = cifar_c_folder(key, data_dir)
    path = None if folder is None else folder / f"{check_corruption(corruption)}.npy"
    return path if path is not None and path.is_file() else None


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
    severity = _check_severity(severity)
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


def load_ood_split(
    name: str,
    *,
    data_dir: str | os.PathLike | None = None,
    corruption: str | None = None,
    severity: int | None = None,
    seed: int = 0,
    download: bool = True,
) -> tuple[Split, tuple[int, ...]]:
    """An out-of-distribution set as (Split, per-sample input shape); `load_ood_set` with its provenance."""
    ood = load_ood_set(name, data_dir=data_dir, corruption=corruption, severity=severity, seed=seed, download=download)
    return ood.split, ood.shape


def load_ood_set(
    name: str,
    *,
    data_dir: str | os.PathLike | None = None,
    corruption: str | None = None,
    severity: int | None = None,
    seed: int = 0,
    download: bool = True,
    select: Callable[[int, np.ndarray], np.ndarray | None] | None = None,
    input_kind: str = "image",
    input_shape: Sequence[int] | None = None,
    test_labels: np.ndarray | None = None,
    test_source: str | None = None,
) -> OODSet:
    """An out-of-distribution set.

    - "cifar10-c" / "cifar100-c": corruption (default gaussian_noise) at severity (default 5) of the test set — read
      from Hendrycks' files when `cifar_c_folder` finds them (every one of the 19 corruptions), else generated
      (gaussian_noise only; source "generated").
    - any registered dataset name: its test split (corrupted by a generator when `corruption` or `severity` is given).
    - a path to an .npz: the inputs under key `x` or `test_x`, labels under `y` / `test_y` when present (else -1: OOD
      scoring needs none). What the inputs must be follows `input_kind`, what the model reads: "image" (the
      default), uint8 HWC images, corrupted when asked; "vector", float feature vectors (N, *input_shape) in the
      training dataset's own representation (digits: the 64 pixel intensities 0-16 divided by 16), scored as given;
      "text" is refused (token ids of the model's training vocabulary, which a checkpoint does not keep).
    `select(n, labels)` (the set's n labels) may return indices into its n samples to keep (None: all); they are taken
    before any corruption is generated. `test_labels`, the clean test set's labels (`cifar_test_labels` reads them from
    `<data-dir>/cifar10.npz`; `test_source` says where they came from, for messages), are what each severity of
    Hendrycks' files must hold in order (`check_cifar_c_arrays`); without them those files are checked for shape,
    label range and five equal severities only. Images come back uint8 NCHW, vectors float32; feed them through
    `BatchLoader(split, ..., dataset=<training dataset>)` so images get the in-distribution normalisation.
    """
    text = str(name)
    key = text.lower()
    corrupted_by_default = key in _CORRUPTED_SETS
    if corruption is not None or severity is not None or corrupted_by_default:
        corruption = check_corruption(corruption or "gaussian_noise")
        severity = _check_severity(5 if severity is None else severity)

    if corrupted_by_default:
        folder = cifar_c_folder(key, data_dir)
        if folder is not None and (folder / f"{corruption}.npy").is_file():
            split, size = load_cifar_c(folder, corruption, severity=severity, select=select,
                                       dataset=_CORRUPTED_SETS[key], test_labels=test_labels, test_source=test_source)
            files = (str(folder / f"{corruption}.npy"), str(folder / "labels.npy"))
            return OODSet(split, tuple(int(v) for v in split.inputs.shape[1:]), size, "hendrycks-files", files)
    if corruption is not None and corruption not in CORRUPTIONS:
        generated = ", ".join(CORRUPTIONS.names())
        if not corrupted_by_default:
            raise InputError(
                f"Expected --corruption {generated} for {text} (the corruptions adacal generates), got '{corruption}'; "
                f"'{corruption}' comes only from Hendrycks' files, with --out cifar10-c or cifar100-c."
            )
        where = cifar_c_folder(key, data_dir)
        hint = (f"{where} has no {corruption}.npy" if where is not None else
                f"Hendrycks' CIFAR-C files were not found under {data_dir or default_data_dir()}")
        raise InputError(
            f"Expected corruption '{corruption}' from Hendrycks' CIFAR-10-C / CIFAR-100-C files (--data-dir DIR with "
            f"DIR/{_CORRUPTED_FOLDERS[key]}/{corruption}.npy and labels.npy), but {hint}; only {generated} can be "
            "generated without them."
        )

    if _looks_like_path(text):
        path = Path(text).expanduser()
        if input_kind not in _FILE_KINDS:
            raise InputError(f"Expected input_kind to be one of {', '.join(_FILE_KINDS)}, got {input_kind!r}.")
        if input_kind == "text":
            raise InputError(_TEXT_FILE_MESSAGE.format(path=path, shape=_shape_text(input_shape, "L")))
        if input_kind == "vector":
            if corruption is not None:
                raise InputError(f"Expected images for corruption '{corruption}', but {path} is read as feature "
                                 "vectors (the model reads vectors): leave out --corruption and --severity.")
            split = _load_npz_vectors(path, input_shape)
        else:
            split = _load_npz_images(path)
        shape, source = tuple(split.inputs.shape[1:]), "file"
    else:
        base = _CORRUPTED_SETS.get(key, key)
        if base not in DATASETS:
            raise unknown_name("OOD dataset", text, ood_names())
        split, shape, kind = _test_split(base, data_dir=data_dir, download=download)
        source = "dataset"
        if corruption is not None and kind != "image":
            raise InputError(f"Expected an image dataset for corruption '{corruption}', got the {kind} dataset {base}.")
    size = len(split)
    rows = select(size, split.labels.numpy()) if select is not None else None
    if rows is not None:
        split = split.subset(np.asarray(rows, dtype=np.int64))
    if corruption is not None:
        if not isinstance(split.inputs, torch.Tensor):
            raise InputError(f"Corruptions need in-memory images; {text} is loaded lazily.")
        corrupt_fn: Callable[..., Any] = CORRUPTIONS.get(corruption)
        split = Split(corrupt_fn(split.inputs, severity=severity, seed=seed, layout="nchw"), split.labels)
        source = "generated"
    return OODSet(split, tuple(int(s) for s in shape), size, source)


def _test_split(name: str, *, data_dir, download: bool) -> tuple[Split, tuple[int, ...], str]:
    """The test split of a registered dataset; for the .npz-backed ones without building train/val at all."""
    if name in SPECS:
        root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        arrays, _ = load_image_arrays(SPECS[name], root, download=download)
        split = Split(images_to_tensor(arrays["test_x"]), labels_to_tensor(arrays["test_y"]))
        return split, tuple(split.inputs.shape[1:]), "image"
    dataset = load_dataset(name, data_dir=data_dir, seed=0, download=download)
    return dataset.test, dataset.input_shape, dataset.kind


_FILE_KINDS = ("image", "vector", "text")
_TEXT_FILE_MESSAGE = (
    "Expected --out to be a dataset name for a text model, got the file {path}: an .npz of OOD inputs is read for "
    "image and feature-vector models only; a text model would need token ids {shape} of its training vocabulary, "
    "which the checkpoint does not keep (score the texts yourself and use --in-preds/--out-preds)."
)


def _shape_text(input_shape: Sequence[int] | None, name: str) -> str:
    """(N, 64) for a per-sample shape (64,); (N, L) when it is not known."""
    dims = [str(int(v)) for v in input_shape] if input_shape is not None else [name]
    return f"(N, {', '.join(dims)})"


def _read_ood_npz(path: Path, what: str) -> tuple[dict[str, np.ndarray], str, str]:
    """(arrays, inputs key, labels key) of an .npz of OOD inputs: `x` and `y`, else `test_x` and `test_y`."""
    check_data_file(path, f"of OOD {what} (.npz)")
    if not path.is_file():
        raise InputError(f"Expected an .npz file of OOD {what} at {path}, but it does not exist.")
    arrays = read_npz(path)
    key = "x" if "x" in arrays else "test_x" if "test_x" in arrays else None
    if key is None:
        raise InputError(
            f"Expected {path} to hold OOD {what} under key 'x' or 'test_x'; it has "
            f"{', '.join(sorted(arrays)) or 'no arrays'}."
        )
    return arrays, key, "y" if key == "x" else "test_y"


def _ood_labels(arrays: dict[str, np.ndarray], key: str, n: int, path: Path) -> np.ndarray:
    """The optional labels of an OOD file (int64 (N,)); -1 for each sample when there are none."""
    if key in arrays:
        return check_image_labels(arrays[key], n=n, num_classes=None, name=f"'{key}' in {path}")
    return np.full(n, -1, dtype=np.int64)


def _load_npz_images(path: Path) -> Split:
    arrays, image_key, label_key = _read_ood_npz(path, "images")
    images = check_images(arrays[image_key], name=f"'{image_key}' in {path}")
    labels = _ood_labels(arrays, label_key, len(images), path)
    inputs = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))
    return Split(inputs, torch.from_numpy(labels))


def _load_npz_vectors(path: Path, input_shape: Sequence[int] | None) -> Split:
    """Float feature vectors (N, *input_shape) of an .npz (key `x` or `test_x`), as float32; they are scored as
    given, so they must be in the representation the training dataset's loader produces (no scaling is applied)."""
    arrays, key, label_key = _read_ood_npz(path, "inputs")
    values = arrays[key]
    name = f"'{key}' in {path}"
    if input_shape is not None:
        expected = tuple(int(v) for v in input_shape)
        if values.ndim != len(expected) + 1 or tuple(values.shape[1:]) != expected:
            raise InputError(
                f"Expected {name} to be feature vectors of shape {_shape_text(expected, 'D')} like the model's input, "
                f"got {values.dtype} of shape {tuple(values.shape)}."
            )
    elif values.ndim < 2:
        raise InputError(f"Expected {name} to be feature vectors (N, D), got {values.dtype} of shape "
                         f"{tuple(values.shape)}.")
    if values.dtype.kind != "f":
        raise InputError(
            f"Expected {name} to be float features {_shape_text(values.shape[1:], 'D')} as the model's dataset loader "
            f"makes them, got dtype {values.dtype} (e.g. digits' pixel intensities 0-16 must be divided by 16)."
        )
    if len(values) == 0:
        raise InputError(f"Expected {name} to hold at least one sample, got shape {tuple(values.shape)}.")
    with np.errstate(over="ignore", invalid="ignore"):  # values beyond float32 become inf, refused below
        inputs = values.astype(np.float32)
    if not np.isfinite(inputs).all():
        raise InputError(f"Expected finite values in {name} (as float32), got NaN or infinity.")
    labels = _ood_labels(arrays, label_key, len(inputs), path)
    return Split(torch.from_numpy(np.ascontiguousarray(inputs)), torch.from_numpy(labels))
