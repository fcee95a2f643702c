"""Corrupted test sets by name (`load_shifted_set`): Hendrycks' CIFAR-10-C / CIFAR-100-C files where a user has them,
else generated here from the dataset's clean test split and cached on disk.

A generated set is made with the dataset's severity table (`severity_table_for`: "cifar" for cifar10, cifar100 and
svhn, "tiny-imagenet" for tiny-imagenet; another dataset, or images of another size, is refused) and kept as one uint8
(N, H, W, C) .npy file, `<cache>/corruptions/<dataset>/<corruption>-s<severity>-seed<seed>-<fingerprint>.npy`
(`<corruption>-<table>-s...` for a table other than "cifar"), the fingerprint hashing the generator's version
(`GENERATOR_VERSIONS`), the table (other than "cifar", whose key is as it was before there were tables) and the
clean test images' bytes: a changed test set, generator or table never reads a stale file. Files are written
atomically (`adacal.writing.write_file`: temp file, then os.replace), so a reader sees a whole file or none; one that
cannot be read as uint8 images of the test set's shape is regenerated and replaced, never trusted. Where the cache
folder cannot be written the set is generated and returned uncached.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.data.base import DATASETS, Split
from adacal.data.corruptions.hendrycks import CORRUPTED_SETS, cifar_c_folder, load_cifar_c, missing_files_message
from adacal.data.corruptions.ood_sets import OODSet, check_corruptible, clean_test_split
from adacal.data.corruptions.suite import (
    CORRUPTIONS,
    GENERATOR_VERSIONS,
    UNAVAILABLE,
    check_corruption,
    check_severity,
    corrupt,
    shift_corruptions,
)
from adacal.data.corruptions.tables import DEFAULT_TABLE, check_table, severity_table_for
from adacal.errors import AdacalError, InputError, unknown_name

CACHE_FORMAT = "1"  # bump when the cache files' layout changes


def default_cache_dir() -> Path:
    """Where generated sets are cached when no cache_dir is given: $ADACAL_CACHE, else ~/.cache/adacal (~/.cache
    being $XDG_CACHE_HOME where that is set, as for the data folder).

    Returns:
        The folder (it may not exist yet).

    >>> default_cache_dir().name in ("adacal", os.environ.get("ADACAL_CACHE", "adacal").rstrip("/").split("/")[-1])
    True
    """
    env = os.environ.get("ADACAL_CACHE")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache") / "adacal"


def corruption_fingerprint(corruption: str, images: np.ndarray, table: str = DEFAULT_TABLE) -> str:
    """16 hex digits hashing the generator's version, the severity table and the clean images (shape and bytes): what
    a cached set was made from. The "cifar" table adds nothing to the hash (keys made before there were tables stay
    valid); any other adds its name.

    Args:
        corruption: a generated corruption.
        images: the clean uint8 (N, H, W, C) images.
        table: the severity table.

    Returns:
        The fingerprint.

    >>> zeros = np.zeros((2, 4, 4, 3), np.uint8)
    >>> len(corruption_fingerprint("fog", zeros)), corruption_fingerprint("fog", zeros, "tiny-imagenet") != (
    ...     corruption_fingerprint("fog", zeros))
    (16, True)
    """
    check_table(table)
    tag = "" if table == DEFAULT_TABLE else f"table={table}:"
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"adacal-corruption-cache:{CACHE_FORMAT}:{corruption}:{GENERATOR_VERSIONS[corruption]}:{tag}"
                  f"{images.dtype}:{tuple(images.shape)}:".encode())
    digest.update(np.ascontiguousarray(images).data)
    return digest.hexdigest()


def shifted_cache_file(dataset: str, corruption: str, severity: int, seed: int, images: np.ndarray,
                       cache_dir: str | os.PathLike | None = None, *, table: str = DEFAULT_TABLE) -> Path:
    """The cache file of a generated set (module docstring).

    Args:
        dataset: the dataset's name.
        corruption: a generated corruption.
        severity: 1 to 5.
        seed: the generator's seed.
        images: the clean uint8 (N, H, W, C) test images it is made from.
        cache_dir: the cache folder (None: `default_cache_dir()`).
        table: the severity table it is made with.

    Returns:
        The path (it may not exist).

    >>> path = shifted_cache_file("cifar10", "fog", 5, 0, np.zeros((1, 2, 2, 3), np.uint8), "/c")
    >>> path.parent.as_posix(), path.name.startswith("fog-s5-seed0-")
    ('/c/corruptions/cifar10', True)
    """
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    stem = corruption if table == DEFAULT_TABLE else f"{corruption}-{table}"
    name = f"{stem}-s{int(severity)}-seed{int(seed)}-{corruption_fingerprint(corruption, images, table)}.npy"
    return root / "corruptions" / dataset / name


def _read_cached(path: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    """The cached images, or None when there is no file or it is not uint8 images of `shape` (damaged, truncated,
    another set's): such a file is regenerated, never trusted."""
    from adacal.sources.files import read_npy

    if not path.is_file():
        return None
    try:
        array = read_npy(path, "a cached corrupted set")
    except (AdacalError, OSError, ValueError):
        return None
    return array if array.dtype == np.uint8 and tuple(array.shape) == tuple(shape) else None


def _write_cached(path: Path, images: np.ndarray) -> bool:
    """Write the cache file atomically; False (nothing written) where the folder cannot be written."""
    from adacal.writing import write_file

    try:
        write_file(path, lambda handle: np.save(handle, images, allow_pickle=False), binary=True)
    except (AdacalError, OSError):
        return False
    return True


def load_shifted_set(
    dataset: str,
    corruption: str,
    severity: int,
    *,
    data_dir: str | os.PathLike | None = None,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    download: bool = False,
    test_labels: np.ndarray | None = None,
    test_source: str | None = None,
) -> OODSet:
    """The test set of `dataset` under `corruption` at `severity`, whole and in test-set order.

    For cifar10 / cifar100, Hendrycks' files are read where `cifar_c_folder` finds `<corruption>.npy` (source
    "hendrycks-files", table "cifar"; checked against `test_labels` as `load_cifar_c` does). Otherwise the corruption
    is generated from the dataset's clean test split with `seed` and the dataset's severity table
    (`severity_table_for`; source "generated") and cached (module docstring): the same arguments give the same bytes,
    from the cache or not. A dataset without a table (imagenet), or whose images are not its table's size, is
    refused. Frost, snow and spatter exist only as Hendrycks' files
    (`UNAVAILABLE`); asked for without them, the InputError says why.

    Args:
        dataset: a registered image dataset (cifar10, cifar100, svhn, ...).
        corruption: a corruption name (`known_corruptions()`).
        severity: 1 to 5.
        data_dir: the dataset's folder, which may hold Hendrycks' CIFAR-10-C / CIFAR-100-C folder.
        seed: the generator's seed.
        cache_dir: the cache folder (None: `default_cache_dir()`).
        download: whether a missing clean dataset may be downloaded.
        test_labels: the clean test labels Hendrycks' files must hold in order (`cifar_test_labels`).
        test_source: where `test_labels` came from, for messages.

    Returns:
        OODSet: split (uint8 NCHW images, the test labels), per-image shape, size, source, files (Hendrycks' two
        files, or the cache file; none when it could not be written), table ("cifar" or "tiny-imagenet").

    >>> from adacal.data import write_image_npz
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = write_image_npz(root / "cifar10.npz", train_x=np.zeros((10, 32, 32, 3), np.uint8),
    ...                     train_y=np.arange(10), test_x=np.full((4, 32, 32, 3), 99, np.uint8),
    ...                     test_y=np.arange(4), classes=list("abcdefghij"))
    >>> shifted = load_shifted_set("cifar10", "contrast", 5, data_dir=root, cache_dir=root / "cache")
    >>> shifted.source, tuple(shifted.split.inputs.shape), Path(shifted.files[0]).parent.name, shifted.table
    ('generated', (4, 3, 32, 32), 'cifar10', 'cifar')
    """
    key = str(dataset).strip().lower()
    if key not in DATASETS:
        raise unknown_name("dataset", str(dataset), DATASETS.names())
    corruption = check_corruption(corruption)
    severity = check_severity(severity)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"Expected seed to be a non-negative integer, got {seed!r}.")
    corrupted_name = f"{key}-c"
    if corrupted_name in CORRUPTED_SETS:
        folder = cifar_c_folder(corrupted_name, data_dir)
        if folder is not None and (folder / f"{corruption}.npy").is_file():
            split, size = load_cifar_c(folder, corruption, severity=severity, dataset=key, test_labels=test_labels,
                                       test_source=test_source)
            files = (str(folder / f"{corruption}.npy"), str(folder / "labels.npy"))
            return OODSet(split, tuple(int(v) for v in split.inputs.shape[1:]), size, "hendrycks-files", files,
                          table="cifar")
        if corruption not in CORRUPTIONS:
            raise InputError(missing_files_message(corrupted_name, corruption, data_dir))
    elif corruption not in CORRUPTIONS:
        raise InputError(
            f"Expected a corruption adacal generates for {key} ({', '.join(shift_corruptions())}), got "
            f"'{corruption}', which {UNAVAILABLE[corruption]}; Hendrycks' files hold it for CIFAR-10 and CIFAR-100 "
            "only."
        )
    check_corruptible(key)  # a dataset without a table, before it is loaded
    split, shape, kind = clean_test_split(key, data_dir=data_dir, download=download)
    if kind != "image":
        raise InputError(f"Expected an image dataset for corruption '{corruption}', got the {kind} dataset {key}.")
    table = severity_table_for(key, shape)
    if not isinstance(split.inputs, torch.Tensor):
        raise InputError(f"Corruptions need in-memory images; {key} is loaded lazily.")
    images = np.ascontiguousarray(split.inputs.numpy().transpose(0, 2, 3, 1))
    path = shifted_cache_file(key, corruption, severity, int(seed), images, cache_dir, table=table)
    corrupted = _read_cached(path, images.shape)
    files: tuple[str, ...] = (str(path),)
    if corrupted is None:
        corrupted = _generate(images, corruption, severity, int(seed), table)
        if not _write_cached(path, corrupted):
            files = ()
    inputs = torch.from_numpy(np.ascontiguousarray(corrupted.transpose(0, 3, 1, 2)))
    return OODSet(Split(inputs, split.labels), tuple(int(v) for v in shape), len(split), "generated", files,
                  table=table)


def _generate(images: np.ndarray, corruption: str, severity: int, seed: int, table: str = DEFAULT_TABLE) -> Any:
    """The generator's output for the whole clean set (NHWC); one place, so tests can count the calls."""
    return corrupt(images, corruption, severity=severity, seed=seed, layout="nhwc", table=table)
