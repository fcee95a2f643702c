"""The out-of-distribution sets `adacal ood` scores against: a registered dataset's test split (corrupted on request),
Hendrycks' CIFAR-10-C / CIFAR-100-C (their files, else generated here) or an .npz file of inputs (`load_ood_set`).
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
from adacal.data.corruptions.hendrycks import CORRUPTED_SETS, cifar_c_folder, load_cifar_c, missing_files_message
from adacal.data.corruptions.suite import CORRUPTIONS, UNAVAILABLE, check_corruption, check_severity, shift_corruptions
from adacal.data.corruptions.tables import severity_table_for
from adacal.data.image_arrays import check_image_labels, check_images, read_npz
from adacal.data.vision import SPECS, load_image_arrays
from adacal.errors import InputError, unknown_name


def _looks_like_path(name: str) -> bool:
    return name.lower().endswith(".npz") or os.sep in name or "/" in name or Path(name).is_file()


@dataclass(frozen=True)
class OODSet:
    """An out-of-distribution set: the (possibly subsampled) split, the per-sample input shape, how many samples the
    whole set holds, and where its images came from (`source`: "dataset", "file", "hendrycks-files" or
    "generated"; `files`: the .npy files read, if any — for a set `load_shifted_set` generated, its cache file;
    `table`: the severity table of its corruption — "cifar" for Hendrycks' CIFAR-C files, the one
    `severity_table_for` chose for a generated set, None for a set not corrupted)."""

    split: Split
    shape: tuple[int, ...]
    size: int
    source: str
    files: tuple[str, ...] = ()
    table: str | None = None


def ood_names() -> list[str]:
    """Names load_ood_split accepts (besides a path to an .npz file)."""
    return sorted({*CORRUPTED_SETS, *DATASETS.names()})


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
    base = CORRUPTED_SETS.get(key, key)
    if base in SPECS:
        return "image", (3, *SPECS[base].image_size)
    return _SET_INPUTS.get(base)


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
      from Hendrycks' files when `cifar_c_folder` finds them (every one of the 19 corruptions), else generated from
      the clean test set (source "generated"): every corruption of `shift_corruptions()`; frost, snow and spatter
      need the files (`UNAVAILABLE` says why; without them, an InputError naming where they were looked for).
    - any registered dataset name: its test split (corrupted by a generator when `corruption` or `severity` is given).
    - a path to an .npz: the inputs under key `x` or `test_x`, labels under `y` / `test_y` when present (else -1: OOD
      scoring needs none). What the inputs must be follows `input_kind`, what the model reads: "image" (the
      default), uint8 HWC images, corrupted when asked; "vector", float feature vectors (N, *input_shape) in the
      training dataset's own representation (digits: the 64 pixel intensities 0-16 divided by 16), scored as given;
      "text" is refused (token ids of the model's training vocabulary, which a checkpoint does not keep).
    `select(n, labels)` (the set's n labels) may return indices into its n samples to keep (None: all); they are taken
    before any corruption is generated (nothing is cached here: `load_shifted_set` caches whole generated sets).
    A generated corruption uses the severity table of the dataset (`severity_table_for`: cifar10, cifar100, svhn ->
    "cifar"; tiny-imagenet -> "tiny-imagenet"), or for a file the table of its images' size (32x32 or 64x64); any
    other dataset or size is refused. The table is recorded as `OODSet.table`.
    `test_labels`, the clean test set's labels (`cifar_test_labels` reads them from `<data-dir>/cifar10.npz`;
    `test_source` says where they came from, for messages), are what each severity of Hendrycks' files must hold in
    order (`check_cifar_c_arrays`); without them those files are checked for shape, label range and five equal
    severities only. Images come back uint8 NCHW, vectors float32; feed them through
    `BatchLoader(split, ..., dataset=<training dataset>)` so images get the in-distribution normalisation.
    """
    text = str(name)
    key = text.lower()
    corrupted_by_default = key in CORRUPTED_SETS
    if corruption is not None or severity is not None or corrupted_by_default:
        corruption = check_corruption(corruption or "gaussian_noise")
        severity = check_severity(5 if severity is None else severity)

    if corrupted_by_default:
        folder = cifar_c_folder(key, data_dir)
        if folder is not None and (folder / f"{corruption}.npy").is_file():
            split, size = load_cifar_c(folder, corruption, severity=severity, select=select,
                                       dataset=CORRUPTED_SETS[key], test_labels=test_labels, test_source=test_source)
            files = (str(folder / f"{corruption}.npy"), str(folder / "labels.npy"))
            return OODSet(split, tuple(int(v) for v in split.inputs.shape[1:]), size, "hendrycks-files", files,
                          table="cifar")
    if corruption is not None and corruption not in CORRUPTIONS:
        if corrupted_by_default:
            raise InputError(missing_files_message(key, corruption, data_dir))
        raise InputError(
            f"Expected --corruption to be one adacal generates for {text} ({', '.join(shift_corruptions())}), got "
            f"'{corruption}', which {UNAVAILABLE[corruption]}: it comes only from Hendrycks' files, with --out "
            "cifar10-c or cifar100-c."
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
        base = CORRUPTED_SETS.get(key, key)
        if base not in DATASETS:
            raise unknown_name("OOD dataset", text, ood_names())
        if corruption is not None:
            check_corruptible(base)
        split, shape, kind = clean_test_split(base, data_dir=data_dir, download=download)
        source = "dataset"
        if corruption is not None and kind != "image":
            raise InputError(f"Expected an image dataset for corruption '{corruption}', got the {kind} dataset {base}.")
    table = None
    if corruption is not None:
        # A dataset's images take its table; a file's, the table of their size (32x32 cifar, 64x64 tiny-imagenet).
        table = (severity_table_for(None, shape, source=str(text)) if source == "file"
                 else severity_table_for(CORRUPTED_SETS.get(key, key), shape))
    size = len(split)
    rows = select(size, split.labels.numpy()) if select is not None else None
    if rows is not None:
        split = split.subset(np.asarray(rows, dtype=np.int64))
    if corruption is not None:
        if not isinstance(split.inputs, torch.Tensor):
            raise InputError(f"Corruptions need in-memory images; {text} is loaded lazily.")
        corrupt_fn: Callable[..., Any] = CORRUPTIONS.get(corruption)
        split = Split(corrupt_fn(split.inputs, severity=severity, seed=seed, layout="nchw", table=table),
                      split.labels)
        source = "generated"
    return OODSet(split, tuple(int(s) for s in shape), size, source, table=table)


def check_corruptible(dataset: str) -> None:
    """Refuse, from its spec alone (before anything is loaded or downloaded), an image dataset that has no severity
    table of its images' size (`severity_table_for`: imagenet); other kinds are refused later, by what they are."""
    known = ood_set_input(dataset)
    if known is not None and known[0] == "image":
        severity_table_for(dataset, known[1])


# The clean test split of the last .npz-backed image set read, by (name, file stamp): `adacal shift` corrupts it once
# per set (and `adacal report` once per run), and reading CIFAR-10's 180 MB file each time cost 1.3 s a set.
_CLEAN_TESTS: dict[tuple[str, tuple[str, int, int]], Split] = {}


def _file_stamp(path: Path) -> tuple[str, int, int] | None:
    """(resolved path, size, mtime in ns) of a file, None when it is not one: a changed or replaced file is read
    again."""
    try:
        stat = path.stat()
        return (str(path.resolve()), stat.st_size, stat.st_mtime_ns) if path.is_file() else None
    except OSError:
        return None


def clean_test_split(name: str, *, data_dir: Any, download: bool) -> tuple[Split, tuple[int, ...], str]:
    """(test split, per-sample input shape, kind) of a registered dataset; for the .npz-backed image sets without
    building train/val at all. The split of the last such file read is kept (until the file changes) and shared
    between callers: read it, never modify it in place.

    Args:
        name: a registered dataset (`adacal.data.dataset_names()`).
        data_dir: its folder (None: `default_data_dir()`).
        download: whether a missing dataset may be downloaded.

    Returns:
        (Split with uint8 NCHW images or the dataset's inputs, input shape, "image" / "vector" / "text").

    >>> split, shape, kind = clean_test_split("digits", data_dir=None, download=False)
    >>> shape, kind
    ((64,), 'vector')
    """
    if name in SPECS:
        root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        stamp = _file_stamp(root / SPECS[name].file_name)
        kept = _CLEAN_TESTS.get((name, stamp)) if stamp is not None else None
        if kept is not None:
            return kept, tuple(kept.inputs.shape[1:]), "image"
        arrays, _ = load_image_arrays(SPECS[name], root, download=download)
        split = Split(images_to_tensor(arrays["test_x"]), labels_to_tensor(arrays["test_y"]))
        # The stamp from before the read (a file replaced meanwhile is read again next time); after it only when the
        # file was downloaded by this read.
        stamp = stamp or _file_stamp(root / SPECS[name].file_name)
        if stamp is not None:
            _CLEAN_TESTS.clear()  # one set kept: a shift suite or report reads the same one, set after set
            _CLEAN_TESTS[(name, stamp)] = split
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
