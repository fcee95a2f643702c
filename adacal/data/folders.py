"""Tiny-ImageNet and ImageNet from their usual folder layouts (torchvision ImageFolder); no downloader exists.

Tiny-ImageNet (`<data-dir>/tiny-imagenet-200/`, or `<data-dir>` itself): train/<wnid>/images/*.JPEG and
val/images/*.JPEG with val/val_annotations.txt. Paper split: 50 images per class of the official training set
(seeded, class-stratified; `val_size` total, default a tenth) are the validation split, the official val set
(10,000) is the test split; 90,000 / 10,000 / 10,000. Images are decoded once (on `workers` threads) into uint8 64x64
arrays (resized when a file is another size) and cached as `<data-dir>/tiny-imagenet.npz` (the prepared-array format)
when the folder is writable, so later runs load in seconds; that .npz, when present, is used instead of the folder
unless the folder changed after it was written (images, classes or annotations added, removed or rewritten: decoded
again).

ImageNet (`<data-dir>/imagenet/` or `<data-dir>`): train/<wnid>/*.JPEG and val/<wnid>/*.JPEG (the val images sorted
into class folders, as torchvision's ImageFolder and the usual `valprep.sh` expect). Paper split: the official train
set is the training split; the official val set (50,000) is shuffled with the seed and halved: 25,000 val / 25,000
test. ImageNet does not fit in memory, so its splits hold `LazyImages`: files are decoded when a batch asks for them
(resize the shorter side to 256, centre crop 224, uint8). Limitation: there is no RandomResizedCrop; the BatchLoader's
training augmentation (flip + 4-pixel shifted crop) is applied to the centre crops.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from adacal.data.base import (
    data_location_hint,
    DATASETS,
    NORMALIZATION,
    Dataset,
    Split,
    check_int,
    default_val_size,
    split_record,
    stratified_split,
    take_subset,
)
from adacal.data.image_arrays import describe_image_npz, read_image_npz, write_image_npz
from adacal.data.vision import build_image_dataset
from adacal.errors import DataUnavailableError, InputError

TINY_SIZE = 64


def _decode_workers(workers: int | None = None) -> int:
    return max(1, workers) if workers else max(1, min(8, os.cpu_count() or 1))


def decode_image(path: str | os.PathLike, *, size: int | None = None, resize: int | None = None) -> np.ndarray:
    """One image file → uint8 (H, W, 3) RGB.

    `resize` scales the shorter side to that many pixels, then `size` centre-crops a square; with `size` alone the
    image is resized to size x size when it is not that already.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image = _to_rgb(image)
            if resize is not None:
                width, height = image.size
                scale = resize / min(width, height)
                new = (max(size or 1, round(width * scale)), max(size or 1, round(height * scale)))
                image = image.resize(new, Image.BILINEAR)
                if size is not None:
                    left = (image.size[0] - size) // 2
                    top = (image.size[1] - size) // 2
                    image = image.crop((left, top, left + size, top + size))
            elif size is not None and image.size != (size, size):
                image = image.resize((size, size), Image.BILINEAR)
            return np.asarray(image, dtype=np.uint8)
    except (OSError, UnidentifiedImageError) as exc:
        raise InputError(f"Cannot read the image {path} ({exc.__class__.__name__}).") from None


def _to_rgb(image):
    """A PIL image as 8-bit RGB. PIL's own convert("RGB") clips 16-bit grayscale (mode I;16, a 16-bit PNG) and 32-bit
    integer (I) images at 255, turning them nearly white, and float (F) images in [0, 1] nearly black: those are
    scaled to 0-255 first (16-bit: / 257; float: x 255 when within [0, 1])."""
    from PIL import Image

    mode = image.mode
    if mode.startswith("I;16") or mode == "I" or mode == "F":
        values = np.asarray(image, dtype=np.float64)
        if mode.startswith("I;16"):
            values = values / 257.0
        elif mode == "I" and values.size and values.max() > 255:
            values = np.clip(values, 0, 65535) / 257.0  # 16-bit samples, as older PIL opens 16-bit PNGs
        elif mode == "F" and values.size and values.min() >= 0 and values.max() <= 1:
            values = values * 255.0
        gray = np.clip(np.rint(values), 0, 255).astype(np.uint8)
        return Image.fromarray(gray, mode="L").convert("RGB")
    return image.convert("RGB")


def decode_images(
    paths: Sequence[str], *, size: int | None, resize: int | None = None, workers: int | None = None
) -> np.ndarray:
    """Many files → uint8 (N, H, W, 3), decoded on a small thread pool (PIL releases the GIL while decoding)."""
    if len(paths) == 0:
        side = size or 0
        return np.empty((0, side, side, 3), dtype=np.uint8)
    with ThreadPoolExecutor(max_workers=_decode_workers(workers)) as pool:
        images = list(pool.map(lambda p: decode_image(p, size=size, resize=resize), paths, chunksize=64))
    return np.stack(images)


class LazyImages:
    """Image files that act like a uint8 (N, 3, size, size) tensor: `len`, `.shape`, `.dtype`, `x[indices]`.

    Indexing decodes just those files (shorter side → `resize`, centre crop `size`). `select(indices)` gives a lazy
    subset without decoding anything.
    """

    dtype = torch.uint8

    def __init__(self, paths: Sequence[str], *, size: int = 224, resize: int = 256, workers: int | None = None) -> None:
        self.paths = list(paths)
        self.size = size
        self.resize = resize
        self.workers = workers

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (len(self.paths), 3, self.size, self.size)

    def _positions(self, index) -> list[int]:
        if isinstance(index, slice):
            return list(range(len(self.paths)))[index]
        return [int(i) for i in np.asarray(index.cpu() if isinstance(index, torch.Tensor) else index).reshape(-1)]

    def select(self, index) -> LazyImages:
        chosen = [self.paths[i] for i in self._positions(index)]
        return LazyImages(chosen, size=self.size, resize=self.resize, workers=self.workers)

    def __getitem__(self, index) -> torch.Tensor:
        if isinstance(index, (int, np.integer)):
            return self[[int(index)]][0]
        chosen = [self.paths[i] for i in self._positions(index)]
        images = decode_images(chosen, size=self.size, resize=self.resize, workers=self.workers)
        return torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))


def _check_workers(workers: object) -> None:
    if workers is not None:
        check_int("workers", workers, minimum=0)  # 0 (like None): as many as the CPUs, up to 8


def _find_root(data_dir: Path, folder: str, required: Sequence[str]) -> Path | None:
    for candidate in (data_dir / folder, data_dir):
        if all((candidate / part).is_dir() for part in required):
            return candidate
    return None


def _image_folder(path: Path):
    from torchvision.datasets import ImageFolder
    from torchvision.datasets.folder import IMG_EXTENSIONS

    class VisibleImageFolder(ImageFolder):
        """ImageFolder whose classes are the visible sub-folders: `.ipynb_checkpoints`, `.DS_Store`-style and other
        hidden entries that tools leave behind are not classes (torchvision would make them one, or fail on them)."""

        def find_classes(self, directory):
            classes = sorted(entry.name for entry in os.scandir(directory)
                             if entry.is_dir() and not entry.name.startswith("."))
            if not classes:
                raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
            return classes, {name: i for i, name in enumerate(classes)}

    def visible_image(file: str) -> bool:
        # macOS archives carry an AppleDouble "._name.JPEG" beside each image: an image extension, but no image.
        name = os.path.basename(file)
        return not name.startswith(".") and name.lower().endswith(IMG_EXTENSIONS)

    try:
        return VisibleImageFolder(str(path), is_valid_file=visible_image)
    except (FileNotFoundError, OSError) as exc:
        raise InputError(f"Cannot read {path} as class folders of images ({' '.join(str(exc).split())}).") from None


def _changed_since(root: Path, moment: float) -> bool:
    """Whether the Tiny-ImageNet folder changed after `moment` (the cache's mtime): images or classes added or
    removed (their folders' mtimes) or the val annotations rewritten. Then the cached arrays are stale: decode again."""
    paths = [root / "train", root / "val", root / "val" / "images", root / "val" / "val_annotations.txt"]
    train = root / "train"
    if train.is_dir():
        for entry in os.scandir(train):
            if entry.is_dir():
                paths += [Path(entry.path), Path(entry.path) / "images"]
    return any(path.exists() and path.stat().st_mtime > moment for path in paths)


def _read_tiny_folder(root: Path, workers: int | None) -> dict[str, np.ndarray]:
    train = _image_folder(root / "train")
    wnids = list(train.classes)
    class_index = {wnid: i for i, wnid in enumerate(wnids)}
    annotations = root / "val" / "val_annotations.txt"
    if not annotations.is_file():
        raise InputError(f"Expected {annotations} (file name and wnid per line) in the Tiny-ImageNet folder {root}.")
    val_paths, val_labels = [], []
    try:
        annotation_text = annotations.read_text(encoding="utf-8-sig")  # -sig: a byte-order mark is not a file name
    except UnicodeDecodeError as exc:
        raise InputError(f"Expected {annotations} to be UTF-8 text, but byte {exc.start} is not "
                         f"({exc.object[exc.start:exc.start + 1]!r}): save it as UTF-8.") from None
    for number, line in enumerate(annotation_text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t") if "\t" in line else line.split()  # tabs, as published; else any whitespace
        if len(fields) < 2 or fields[1].strip() not in class_index:
            raise InputError(
                f"Expected line {number} of {annotations} to be '<file>\\t<wnid>' with a wnid of train/, got "
                f"{line[:80]!r}."
            )
        image = root / "val" / "images" / fields[0].strip()
        if not image.is_file():  # found now, not after decoding the 100,000 training images
            raise InputError(f"Expected the image {image} that line {number} of {annotations} names, but it does not "
                             "exist.")
        val_paths.append(str(image))
        val_labels.append(class_index[fields[1].strip()])
    if not val_paths:
        raise InputError(f"Expected {annotations} to list the test images ('<file>\\t<wnid>' per line), got no lines.")
    names = _tiny_class_names(root, wnids)
    return {
        "train_x": decode_images([path for path, _ in train.samples], size=TINY_SIZE, workers=workers),
        "train_y": np.asarray(train.targets, dtype=np.int64),
        "test_x": decode_images(val_paths, size=TINY_SIZE, workers=workers),
        "test_y": np.asarray(val_labels, dtype=np.int64),
        "classes": np.asarray(names),
    }


def _tiny_class_names(root: Path, wnids: list[str]) -> list[str]:
    """Human-readable names from words.txt when it is there (first synonym), else the wnids."""
    words = root / "words.txt"
    if not words.is_file():
        return wnids
    lookup = {}
    for line in words.read_text(encoding="utf-8-sig", errors="replace").splitlines():
        wnid, _, text = line.partition("\t")
        lookup[wnid.strip()] = text.split(",")[0].strip()
    return [lookup.get(wnid) or wnid for wnid in wnids]


@DATASETS.register("tiny-imagenet")
def load_tiny_imagenet(
    *,
    data_dir: Path,
    seed: int = 0,
    train_subset: int | None = None,
    download: bool = True,
    val_size: int | None = None,
    workers: int | None = None,
) -> Dataset:
    """Tiny-ImageNet (200 classes, 64x64) from tiny-imagenet.npz or the tiny-imagenet-200 folder (see module doc)."""
    _check_workers(workers)
    cache = data_dir / "tiny-imagenet.npz"
    root = _find_root(data_dir, "tiny-imagenet-200", ("train", "val"))
    if cache.is_file() and not (root is not None and _changed_since(root, cache.stat().st_mtime)):
        arrays, source = read_image_npz(cache, image_size=(TINY_SIZE, TINY_SIZE)), str(cache)
    else:
        if root is None:
            raise DataUnavailableError(
                f"Tiny-ImageNet is not in {data_dir} (it has no downloader). Put the tiny-imagenet-200 folder "
                "(train/<wnid>/images/*.JPEG, val/images/, val/val_annotations.txt; from "
                f"http://cs231n.stanford.edu/tiny-imagenet-200.zip) or {describe_image_npz('tiny-imagenet.npz')} "
                f"in {data_dir}, {data_location_hint(downloadable=False)}."
            )
        arrays = _read_tiny_folder(root, workers)
        source = str(root)
        try:
            write_image_npz(cache, **arrays)
        except InputError:
            pass  # a read-only data folder only costs the decoding time next run
    n_train = len(arrays["train_y"])
    if val_size is None:
        val_size = default_val_size(n_train)
    elif n_train >= 2 and val_size >= n_train:
        raise InputError(f"Expected val_size below the {n_train} training images of tiny-imagenet, got {val_size}.")
    rest, val_idx = stratified_split(arrays["train_y"], take=val_size, seed=seed, what="tiny-imagenet")
    train_idx = take_subset(rest, train_subset, "tiny-imagenet")
    return build_image_dataset(
        "tiny-imagenet", arrays, source=source, seed=seed, train_subset=train_subset, val_size=val_size,
        method="seeded class-stratified val_size images of the official train set -> val (50 per class by default); "
        "the rest (seeded order, train_subset keeps its first N) -> train; official val set -> test",
        train_val=(train_idx, val_idx),
    )


@DATASETS.register("imagenet")
def load_imagenet(
    *,
    data_dir: Path,
    seed: int = 0,
    train_subset: int | None = None,
    download: bool = True,
    val_size: int | None = None,
    image_size: int = 224,
    resize_size: int = 256,
    workers: int | None = None,
) -> Dataset:
    """ImageNet from train/ and val/ class folders, decoded lazily (see module doc)."""
    _check_workers(workers)
    check_int("image_size", image_size, minimum=1)
    check_int("resize_size", resize_size, minimum=1)
    image_size, resize_size = int(image_size), int(resize_size)
    if image_size < 8 or resize_size < image_size:
        raise InputError(
            f"Expected image_size >= 8 and resize_size >= image_size, got {image_size} and {resize_size}."
        )
    root = _find_root(data_dir, "imagenet", ("train", "val"))
    if root is None:
        raise DataUnavailableError(
            f"ImageNet is not in {data_dir} (it has no downloader). Put an imagenet folder with train/<wnid>/*.JPEG "
            f"and val/<wnid>/*.JPEG (val sorted into class folders) in {data_dir}, "
            f"{data_location_hint(downloadable=False)}."
        )
    train = _image_folder(root / "train")
    val = _image_folder(root / "val")
    unknown = sorted(set(val.classes) - set(train.classes))
    if unknown:
        raise InputError(
            f"Expected the class folders of {root / 'val'} to be those of {root / 'train'}; "
            f"{len(unknown)} are not, e.g. {unknown[0]}."
        )
    class_index = {wnid: i for i, wnid in enumerate(train.classes)}
    val_paths = [path for path, _ in val.samples]
    val_labels = np.asarray([class_index[val.classes[target]] for target in val.targets], dtype=np.int64)
    n_val_total = len(val_paths)
    if n_val_total < 2:
        raise InputError(f"Expected at least 2 images in {root / 'val'} (it is halved into the validation and test "
                         f"splits), got {n_val_total}.")
    if val_size is None:
        val_size = n_val_total // 2
    if not 0 < val_size < n_val_total:
        raise InputError(f"Expected val_size below the {n_val_total} images of {root / 'val'}, got {val_size}.")
    order = np.random.default_rng(seed).permutation(n_val_total)
    val_idx, test_idx = order[:val_size], order[val_size:]
    train_order = np.random.default_rng(seed).permutation(len(train.samples))
    if train_subset:
        train_idx = np.sort(take_subset(train_order, train_subset, "imagenet"))
    else:
        train_idx = np.arange(len(train.samples))
    train_paths = [train.samples[i][0] for i in train_idx]
    train_labels = np.asarray(train.targets, dtype=np.int64)[train_idx]

    def lazy(paths: list[str]) -> LazyImages:
        return LazyImages(paths, size=image_size, resize=resize_size, workers=workers)

    splits = {
        "train": Split(lazy(train_paths), torch.from_numpy(train_labels)),
        "val": Split(lazy([val_paths[i] for i in val_idx]), torch.from_numpy(val_labels[val_idx])),
        "test": Split(lazy([val_paths[i] for i in test_idx]), torch.from_numpy(val_labels[test_idx])),
    }
    mean, std = NORMALIZATION["imagenet"]
    return Dataset(
        name="imagenet",
        kind="image",
        num_classes=len(train.classes),
        classes=list(train.classes),
        input_shape=(3, image_size, image_size),
        train=splits["train"],
        val=splits["val"],
        test=splits["test"],
        split_info=split_record(
            source=str(root), seed=seed, val_size=val_size, train_subset=train_subset,
            train_pool=len(train.samples), **splits,
            method="official train set -> train (train_subset: a seeded sample of N); official val set shuffled "
            "with numpy default_rng(seed): first val_size -> val, the rest -> test",
            image_size=image_size,
            resize_size=resize_size,
        ),
        extra={"mean": mean, "std": std, "augment_padding": 4, "lazy": True},
    )
