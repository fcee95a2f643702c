"""Tiny-ImageNet and ImageNet folder layouts, from tiny synthetic folders of solid-colour images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from adacal.data import BatchLoader, LazyImages, load_dataset
from adacal.errors import DataUnavailableError, InputError

WNIDS = ["n01443537", "n01629819", "n01641577"]
COLOURS = [(200, 10, 10), (10, 200, 10), (10, 10, 200)]


def solid(path: Path, colour, size=(16, 12)):
    path.parent.mkdir(parents=True, exist_ok=True)
    # PNG content under the dataset's own file names: PIL reads by content, ImageFolder filters by extension.
    Image.new("RGB", size, colour).save(path, format="PNG")


def make_tiny(root: Path, per_class=10, val_per_class=2) -> Path:
    base = root / "tiny-imagenet-200"
    lines = []
    for c, wnid in enumerate(WNIDS):
        for i in range(per_class):
            solid(base / "train" / wnid / "images" / f"{wnid}_{i}.JPEG", COLOURS[c])
        for i in range(val_per_class):
            name = f"val_{c * val_per_class + i}.JPEG"
            solid(base / "val" / "images" / name, COLOURS[c], size=(64, 64))
            lines.append(f"{name}\t{wnid}\t0\t0\t10\t10")
    (base / "val" / "val_annotations.txt").write_text("\n".join(lines) + "\n")
    (base / "words.txt").write_text("\n".join(f"{w}\tname{i}, other" for i, w in enumerate(WNIDS)) + "\n")
    return root


def colour_of(images: torch.Tensor) -> list[int]:
    """Index of the dominant channel of each (solid) image."""
    return images.float().mean(dim=(2, 3)).argmax(dim=1).tolist()


def test_tiny_imagenet_folder_splits_and_cache(tmp_path):
    make_tiny(tmp_path)
    data = load_dataset("tiny-imagenet", data_dir=tmp_path, seed=0, download=False)
    assert data.input_shape == (3, 64, 64) and data.num_classes == 3 and data.classes == ["name0", "name1", "name2"]
    assert (len(data.train), len(data.val), len(data.test)) == (27, 3, 6)
    assert torch.equal(torch.bincount(data.val.labels), torch.ones(3, dtype=torch.long))  # stratified: 1 per class
    assert data.train.inputs.dtype == torch.uint8 and data.train.inputs.shape[1:] == (3, 64, 64)  # resized
    for split in (data.train, data.val, data.test):
        assert colour_of(split.inputs) == split.labels.tolist()  # images carry their own labels
    assert (tmp_path / "tiny-imagenet.npz").is_file()
    again = load_dataset("tiny-imagenet", data_dir=tmp_path, seed=0, download=False)
    assert again.split_info["source"].endswith("tiny-imagenet.npz")
    assert torch.equal(again.train.inputs, data.train.inputs) and torch.equal(again.test.labels, data.test.labels)
    # The folder changed after the cache was written (more val images, annotations rewritten): decoded again, not
    # the stale arrays (which kept failing a --test-subset the fixed folder satisfies)
    import os

    cache_time = (tmp_path / "tiny-imagenet.npz").stat().st_mtime
    make_tiny(tmp_path, val_per_class=3)
    for path in (tmp_path / "tiny-imagenet-200" / "val" / "images",
                 tmp_path / "tiny-imagenet-200" / "val" / "val_annotations.txt"):
        os.utime(path, (cache_time + 10, cache_time + 10))
    fresh = load_dataset("tiny-imagenet", data_dir=tmp_path, seed=0, download=False)
    assert len(fresh.test) == 9 and not fresh.split_info["source"].endswith(".npz")


def test_tiny_imagenet_missing_and_bad_annotations(tmp_path):
    with pytest.raises(DataUnavailableError, match="tiny-imagenet-200"):
        load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)
    make_tiny(tmp_path)
    (tmp_path / "tiny-imagenet-200" / "val" / "val_annotations.txt").write_text("val_0.JPEG\tn99999999\n")
    with pytest.raises(InputError, match="line 1 of .*val_annotations.txt"):
        load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)
    (tmp_path / "tiny-imagenet-200" / "val" / "val_annotations.txt").write_bytes(b"caf\xe9.JPEG\tn00000000\n")
    with pytest.raises(InputError, match="val_annotations.txt to be UTF-8 text"):
        load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)


def make_imagenet(root: Path, per_class=4) -> Path:
    for part in ("train", "val"):
        for c, wnid in enumerate(WNIDS):
            for i in range(per_class):
                solid(root / "imagenet" / part / wnid / f"{part}_{i}.png", COLOURS[c], size=(30, 20))
    return root


def test_imagenet_lazy_splits(tmp_path):
    make_imagenet(tmp_path)
    data = load_dataset("imagenet", data_dir=tmp_path, seed=0, image_size=16, resize_size=18, download=False)
    assert data.input_shape == (3, 16, 16) and data.num_classes == 3
    assert (len(data.train), len(data.val), len(data.test)) == (12, 6, 6)
    assert isinstance(data.val.inputs, LazyImages) and data.val.inputs.shape == (6, 3, 16, 16)
    assert colour_of(data.val.inputs[torch.arange(6)]) == data.val.labels.tolist()
    assert data.test.inputs[0].shape == (3, 16, 16)
    loader = BatchLoader(data.train, 5, dataset=data, shuffle=True, augment=True, device="cpu")
    batches = list(loader)
    assert [x.shape[0] for x, _ in batches] == [5, 5, 2] and batches[0][0].dtype == torch.float32
    subset = data.train.subset([0, 3])
    assert isinstance(subset.inputs, LazyImages) and len(subset) == 2
    other = load_dataset("imagenet", data_dir=tmp_path, seed=1, image_size=16, resize_size=18, download=False)
    assert other.val.inputs.paths != data.val.inputs.paths
    small = load_dataset("imagenet", data_dir=tmp_path, seed=0, train_subset=5, image_size=16, resize_size=18,
                         workers=1)
    assert small.train.inputs.workers == 1
    assert len(small.train) == 5


def test_imagenet_missing_folder(tmp_path):
    with pytest.raises(DataUnavailableError, match="val sorted into class folders"):
        load_dataset("imagenet", data_dir=tmp_path, download=False)
    (tmp_path / "imagenet" / "train").mkdir(parents=True)
    (tmp_path / "imagenet" / "val").mkdir()
    with pytest.raises(InputError, match="class folders"):
        load_dataset("imagenet", data_dir=tmp_path, download=False)


def test_unreadable_image_is_an_input_error(tmp_path):
    make_tiny(tmp_path, per_class=2, val_per_class=1)
    (tmp_path / "tiny-imagenet-200" / "train" / WNIDS[0] / "images" / "broken.JPEG").write_bytes(b"nope")
    with pytest.raises(InputError, match="Cannot read the image .*broken.JPEG"):
        load_dataset("tiny-imagenet", data_dir=tmp_path, download=False)
    np.testing.assert_equal(len(list((tmp_path).glob("*.npz"))), 0)
