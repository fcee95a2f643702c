"""An image folder in torchvision's ImageFolder layout as a dataset (`adacal train --dataset <folder>`).

Layouts: `<root>/train/<class>/...` with optional `val/` and `test/` holding the same class folders, or
`<root>/<class>/...` (one folder, split by the rules of `adacal.data.user_data`). Classes are the visible sub-folders,
sorted; files are found at any depth below a class folder (as ImageFolder does); hidden files and folders, and the
operating systems' Thumbs.db and desktop.ini, are skipped. Every other file must be an image PIL can read.

Images are decoded once to uint8 at a common size: the most common (width, height) of the training images (a tie goes
to the larger area); others are resized to it (bilinear, aspect not kept). They are kept grayscale (1 channel) when
every image is grayscale (PIL modes 1, L, LA, I, I;16, F), else RGB (alpha dropped). Normalisation: the per-channel
mean and std of the training split, recorded in the split record.
"""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.data.base import Dataset, Split
from adacal.data.user_data import fingerprint, make_dataset, split_pool
from adacal.errors import InputError

PARTS = ("train", "val", "test")
IGNORED_FILES = frozenset({"thumbs.db", "desktop.ini"})
GRAY_MODES = frozenset({"1", "L", "LA", "I", "I;16", "I;16L", "I;16B", "I;16N", "F"})


def _visible(name: str) -> bool:
    return not name.startswith(".")


def _class_folders(folder: Path) -> list[str]:
    return sorted(entry.name for entry in os.scandir(folder) if entry.is_dir() and _visible(entry.name))


def _files_of(folder: Path) -> list[Path]:
    found = []
    seen = set()  # real folders walked: a symlink back up the tree is followed once, not forever
    for directory, subdirs, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(directory)
        if real in seen:
            subdirs[:] = []
            continue
        seen.add(real)
        subdirs[:] = sorted(d for d in subdirs if _visible(d))
        found += [Path(directory) / n for n in sorted(names) if _visible(n) and n.lower() not in IGNORED_FILES]
    return found


def find_layout(root: Path) -> dict[str, Path]:
    """{"train": folder, "val"?: folder, "test"?: folder} for the split layout, {"all": root} for one folder.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     for part in ("train/cat", "train/dog", "test/cat", "test/dog"):
    ...         (Path(folder) / part).mkdir(parents=True)
    ...     sorted(find_layout(Path(folder)))
    ['test', 'train']
    """
    folders = _class_folders(root)
    if "train" in folders:
        others = [f for f in folders if f not in PARTS]
        if others:
            raise InputError(
                f"Expected {root} to hold train/ (with optional val/ and test/) or class folders, not both: it has "
                f"train/ and {others[0]}/ (move the class folders into train/, or rename a class called train)."
            )
        return {part: root / part for part in PARTS if part in folders}
    return {"all": root}


def read_part(folder: Path) -> tuple[list[str], list[list[Path]]]:
    """A part's class names and the files of each class; one-line errors for no, one or empty classes."""
    classes = _class_folders(folder)
    if not classes:
        loose = [f for f in _files_of(folder) if f.parent == folder]
        hint = f" (it holds files such as {loose[0].name}: put each class's images in a folder named after it)" \
            if loose else ""
        raise InputError(f"Expected class folders of images in {folder}, got none{hint}.")
    files = [_files_of(folder / name) for name in classes]
    empty = [name for name, found in zip(classes, files) if not found]
    if empty:
        raise InputError(f"Expected images in every class folder of {folder}, but {folder / empty[0]} holds none: "
                         "add images or remove the folder.")
    return classes, files


def _probe(path: Path) -> tuple[tuple[int, int], str]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            return image.size, image.mode
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise InputError(f"Expected only images in the class folders, but {path} is not one PIL can read "
                         f"({exc.__class__.__name__}): remove it or replace it.") from None


def _decode(path: Path, size: tuple[int, int], channels: int) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    from adacal.data.folders import _to_rgb

    try:
        with Image.open(path) as image:
            rgb = _to_rgb(image)
            if rgb.size != size:
                rgb = rgb.resize(size, Image.BILINEAR)
            array = np.asarray(rgb, dtype=np.uint8)
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise InputError(f"Cannot read the image {path} ({exc.__class__.__name__}): remove it or replace it.") from None
    return array[..., :1] if channels == 1 else array


def load_image_folder(path: Path, *, seed: int, train_subset: int | None, val_size: int | None,
                      workers: int | None = None) -> Dataset:
    """The dataset of an image folder (see the module doc)."""
    layout = find_layout(path)
    pool_name = "all" if "all" in layout else "train"
    classes, pool_files = read_part(layout[pool_name])
    if len(classes) < 2:
        raise InputError(f"Expected at least 2 class folders in {layout[pool_name]}, got one ({classes[0]}/): a "
                         "classifier needs two classes or more.")
    parts = {pool_name: pool_files}
    for part in ("val", "test"):
        if part in layout:
            names, files = read_part(layout[part])
            if names != classes:
                extra = sorted(set(names) - set(classes))
                missing = sorted(set(classes) - set(names))
                detail = f"{extra[0]}/ is not in {pool_name}/" if extra else f"it lacks {missing[0]}/"
                raise InputError(f"Expected the class folders of {layout[part]} to be those of {layout[pool_name]}, "
                                 f"but {detail}: give every part the same classes.")
            parts[part] = files
    every_file = [f for files in parts.values() for per_class in files for f in per_class]
    probes = {f: _probe(f) for f in every_file}
    sizes = Counter(probes[f][0] for per_class in pool_files for f in per_class)
    size = max(sizes, key=lambda s: (sizes[s], s[0] * s[1], s))
    channels = 1 if all(mode in GRAY_MODES for _, mode in probes.values()) else 3
    threads = max(1, workers) if workers else max(1, min(8, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        decoded = dict(zip(every_file, pool.map(lambda f: _decode(f, size, channels), every_file)))
    arrays = {}
    for part, files in parts.items():
        flat = [f for per_class in files for f in per_class]
        labels = np.concatenate([np.full(len(per_class), k, dtype=np.int64) for k, per_class in enumerate(files)])
        arrays[part] = (np.stack([decoded[f] for f in flat]), labels)
    resized = sum(count for s, count in sizes.items() if s != size)
    details = {
        "kind": "image-folder",
        "layout": "+".join(f"{p}/" for p in layout) if pool_name == "train" else "class folders",
        "fingerprint": fingerprint(path, every_file), "files": len(every_file), "classes": list(classes),
        "image_size": [int(size[1]), int(size[0])], "channels": channels, "resized": int(resized),
    }
    return image_dataset(path, arrays, classes, seed=seed, train_subset=train_subset, val_size=val_size,
                         details=details)


def image_dataset(
    path: Path, parts: dict[str, tuple[np.ndarray, np.ndarray]], classes: list[str], *, seed: int,
    train_subset: int | None, val_size: int | None, details: dict[str, Any],
) -> Dataset:
    """uint8 (N, H, W, C) images and labels by part, split by the rules, with the training split's per-channel mean
    and std as the normalisation."""
    pool_name = "all" if "all" in parts else "train"
    images, labels = parts[pool_name]
    given = {name: y for name, (_, y) in parts.items() if name in ("val", "test")}
    index, split_details = split_pool(labels, classes, given=given, seed=seed, val_size=val_size,
                                      train_subset=train_subset, what=str(path))
    arrays = {name: (images[rows], labels[rows]) for name, rows in index.items()}
    arrays.update({name: parts[name] for name in given})
    train = arrays["train"][0].astype(np.float64) / 255.0
    mean = tuple(float(v) for v in train.mean(axis=(0, 1, 2)))
    std = tuple(max(float(v), 1e-3) for v in train.std(axis=(0, 1, 2)))  # a blank channel: no division by 0
    splits = {name: Split(torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))), torch.from_numpy(y))
              for name, (x, y) in arrays.items()}
    height, width, channels = images.shape[1:]
    return make_dataset(
        path, kind="image", classes=classes, input_shape=(int(channels), int(height), int(width)), splits=splits,
        seed=seed, train_subset=train_subset, details={**details, "mean": list(mean), "std": list(std)},
        split_details=split_details,
        extra={"mean": mean, "std": std, "augment_padding": max(1, min(height, width) // 8)},
    )


def read_ood_images(folder: Path, *, size: tuple[int, int], channels: int) -> Split:
    """Every image under `folder` (class folders or not; hidden files skipped), decoded at `size` (width, height) with
    `channels`, labels -1 (OOD scoring needs none)."""
    files = _files_of(folder)
    if not files:
        raise InputError(f"Expected images in the OOD folder {folder}, got none.")
    for file in files:
        _probe(file)
    images = np.stack([_decode(file, size, channels) for file in files])
    return Split(torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))),
                 torch.full((len(files),), -1, dtype=torch.int64))
