"""Image corruptions (CIFAR-10-C style) and the out-of-distribution sets `adacal ood` scores against.

gaussian_noise follows Hendrycks & Dietterich (2019): x in [0, 1], add N(0, sigma^2) per pixel and channel with
sigma = 0.04, 0.06, 0.08, 0.09, 0.10 for severities 1-5 (their CIFAR values), clip to [0, 1], scale by 255. Rounding:
we round to the nearest grey level (np.rint); their script casts with np.uint8, which truncates and darkens images by
half a grey level on average. The noise is generated in HWC order from numpy's default_rng(seed), so the same seed
corrupts an image identically whether it is passed as NHWC or NCHW.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.data.base import DATASETS, Split, default_data_dir, images_to_tensor, labels_to_tensor, load_dataset
from adacal.data.image_arrays import check_image_labels, check_images, read_npz
from adacal.data.vision import SPECS, load_image_arrays
from adacal.errors import InputError, unknown_name
from adacal.registry import Registry

CORRUPTIONS: Registry[Any] = Registry("corruption")

GAUSSIAN_NOISE_SIGMAS = (0.04, 0.06, 0.08, 0.09, 0.10)
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
        raise InputError(f"Expected a batch of images with 4 axes (N, H, W, C) or (N, C, H, W), got shape {array.shape}.")
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
    return CORRUPTIONS.names()


def corrupt(images: Any, name: str, *, severity: int, seed: int = 0) -> Any:
    """Apply the corruption registered as `name`."""
    return CORRUPTIONS.get(name)(images, severity=severity, seed=seed)


# ------------------------------------------------------------------------------------------------------ OOD sets

_CORRUPTED_SETS = {"cifar10-c": "cifar10", "cifar100-c": "cifar100"}


def ood_names() -> list[str]:
    """Names load_ood_split accepts (besides a path to an .npz file)."""
    return sorted({*_CORRUPTED_SETS, *DATASETS.names()})


def _looks_like_path(name: str) -> bool:
    return name.lower().endswith(".npz") or os.sep in name or "/" in name or Path(name).is_file()


def load_ood_split(
    name: str,
    *,
    data_dir: str | os.PathLike | None = None,
    corruption: str | None = None,
    severity: int | None = None,
    seed: int = 0,
    download: bool = True,
) -> tuple[Split, tuple[int, ...]]:
    """An out-of-distribution set as (Split, per-sample input shape).

    - "cifar10-c" / "cifar100-c": the test set corrupted (corruption default gaussian_noise, severity default 5).
    - any registered dataset name: its test split (corrupted when `corruption` or `severity` is given).
    - a path to an .npz: images under key `x` or `test_x` (uint8 HWC), labels under `y` / `test_y` when present
      (else -1: OOD scoring needs none), corrupted when asked.
    Images come back uint8 NCHW; feed them through `BatchLoader(split, ..., dataset=<training dataset>)` so they get
    the in-distribution normalisation.
    """
    text = str(name)
    corrupted_by_default = text.lower() in _CORRUPTED_SETS
    if corruption is not None or severity is not None or corrupted_by_default:
        corruption = corruption or "gaussian_noise"
        CORRUPTIONS.get(corruption)  # unknown → UnknownNameError with suggestions, before loading anything
        severity = _check_severity(5 if severity is None else severity)

    if _looks_like_path(text):
        split = _load_npz_images(Path(text).expanduser())
        shape = tuple(split.inputs.shape[1:])
    else:
        key = text.lower()
        base = _CORRUPTED_SETS.get(key, key)
        if base not in DATASETS:
            raise unknown_name("OOD dataset", text, ood_names())
        split, shape, kind = _test_split(base, data_dir=data_dir, download=download)
        if corruption is not None and kind != "image":
            raise InputError(f"Expected an image dataset for corruption '{corruption}', got the {kind} dataset {base}.")
    if corruption is not None:
        if not isinstance(split.inputs, torch.Tensor):
            raise InputError(f"Corruptions need in-memory images; {text} is loaded lazily.")
        corrupt_fn: Callable[..., Any] = CORRUPTIONS.get(corruption)
        split = Split(corrupt_fn(split.inputs, severity=severity, seed=seed, layout="nchw"), split.labels)
    return split, tuple(int(s) for s in shape)


def _test_split(name: str, *, data_dir, download: bool) -> tuple[Split, tuple[int, ...], str]:
    """The test split of a registered dataset; for the .npz-backed ones without building train/val at all."""
    if name in SPECS:
        root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        arrays, _ = load_image_arrays(SPECS[name], root, download=download)
        split = Split(images_to_tensor(arrays["test_x"]), labels_to_tensor(arrays["test_y"]))
        return split, tuple(split.inputs.shape[1:]), "image"
    dataset = load_dataset(name, data_dir=data_dir, seed=0, download=download)
    return dataset.test, dataset.input_shape, dataset.kind


def _load_npz_images(path: Path) -> Split:
    if not path.is_file():
        raise InputError(f"Expected an .npz file of OOD images at {path}, but it does not exist.")
    arrays = read_npz(path)
    image_key = "x" if "x" in arrays else "test_x" if "test_x" in arrays else None
    if image_key is None:
        raise InputError(
            f"Expected {path} to hold OOD images under key 'x' or 'test_x'; it has {', '.join(sorted(arrays)) or 'no arrays'}."
        )
    images = check_images(arrays[image_key], name=f"'{image_key}' in {path}")
    label_key = "y" if image_key == "x" else "test_y"
    if label_key in arrays:
        labels = check_image_labels(arrays[label_key], n=len(images), num_classes=None, name=f"'{label_key}' in {path}")
    else:
        labels = np.full(len(images), -1, dtype=np.int64)
    inputs = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))
    return Split(inputs, torch.from_numpy(labels))
