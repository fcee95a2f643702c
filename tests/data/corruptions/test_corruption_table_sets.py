"""Corrupted sets take their dataset's severity table: `load_shifted_set` and `load_ood_set` on a 64 x 64 fake
tiny-imagenet use Tiny-ImageNet-C's (cached apart from any CIFAR-table set, recorded as `OODSet.table`), a file's
images the table of their size, and a dataset without a table or of another size is refused before any work."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import adacal.data.corruptions.cache as cache
from adacal.data import Split, corrupt, load_ood_set, write_image_npz
from adacal.data.corruptions import load_shifted_set, shifted_cache_file
from adacal.errors import InputError

from corruption_helpers import natural_images, write_cifar

TINY = "tiny-imagenet"
N_TEST = 6


@pytest.fixture
def tiny_data(tmp_path):
    """A fake tiny-imagenet.npz (the prepared-array file the loader reads first): 64 x 64 images, 4 classes."""
    root = tmp_path / "data"
    root.mkdir()
    write_image_npz(root / "tiny-imagenet.npz", train_x=natural_images(8, size=64, seed=2),
                    train_y=np.arange(8) % 4, test_x=natural_images(N_TEST, size=64, seed=3),
                    test_y=np.arange(N_TEST) % 4, classes=[f"c{i}" for i in range(4)])
    return root


def test_tiny_imagenet_takes_the_tiny_table_and_is_cached_apart(tiny_data, tmp_path, calls):
    clean = np.load(tiny_data / "tiny-imagenet.npz")["test_x"]
    shifted = load_shifted_set(TINY, "glass_blur", 5, data_dir=tiny_data, seed=1, cache_dir=tmp_path / "cache")
    assert (shifted.table, shifted.source, shifted.shape, shifted.size) == (TINY, "generated", (3, 64, 64), N_TEST)
    expected = corrupt(clean, "glass_blur", severity=5, seed=1, table=TINY)
    assert np.array_equal(shifted.split.inputs.numpy().transpose(0, 2, 3, 1), expected)
    assert not np.array_equal(expected, corrupt(clean, "glass_blur", severity=5, seed=1))  # not CIFAR's parameters
    folder = tmp_path / "cache" / "corruptions" / TINY
    (name,) = sorted(path.name for path in folder.iterdir())
    assert re.fullmatch(r"glass_blur-tiny-imagenet-s5-seed1-[0-9a-f]{16}\.npy", name), name
    assert shifted.files == (str(folder / name),) and np.array_equal(np.load(shifted.files[0]), expected)
    # The key differs from a CIFAR-table set of the same images; a second call reads the cache.
    assert shifted_cache_file(TINY, "glass_blur", 5, 1, clean, tmp_path / "cache").name != name
    again = load_shifted_set(TINY, "glass_blur", 5, data_dir=tiny_data, seed=1, cache_dir=tmp_path / "cache")
    assert torch.equal(again.split.inputs, shifted.split.inputs) and again.table == TINY
    assert calls == [("glass_blur", TINY)]
    # `adacal ood --out tiny-imagenet --corruption ...` makes the same bytes with the same table.
    ood = load_ood_set(TINY, data_dir=tiny_data, corruption="glass_blur", severity=5, seed=1, download=False)
    assert ood.table == TINY and ood.source == "generated" and torch.equal(ood.split.inputs, shifted.split.inputs)
    assert load_ood_set(TINY, data_dir=tiny_data, download=False).table is None  # not corrupted


def test_a_dataset_without_a_table_or_of_another_size_is_refused_before_generating(tmp_path, calls, monkeypatch):
    with pytest.raises(InputError, match="got imagenet; adacal has the tables cifar"):
        load_shifted_set("imagenet", "fog", 1, data_dir=tmp_path, cache_dir=tmp_path / "cache")
    with pytest.raises(InputError, match="got imagenet; adacal has the tables cifar"):
        load_ood_set("imagenet", data_dir=tmp_path, corruption="fog", severity=1, download=False)
    # cifar10 images that are not 32 x 32 (a loader that resizes, say) get no parameters made for another size.
    images = torch.from_numpy(np.ascontiguousarray(natural_images(4, size=48).transpose(0, 3, 1, 2)))
    monkeypatch.setattr(cache, "clean_test_split",
                        lambda *a, **k: (Split(images, torch.arange(4)), (3, 48, 48), "image"))
    with pytest.raises(InputError, match=r"^Expected 32x32 images for cifar10 .*got 48x48; adacal has the tables "
                                         r"cifar \(32x32: cifar10, cifar100, svhn\) and tiny-imagenet"):
        load_shifted_set("cifar10", "fog", 1, data_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert calls == [] and not (tmp_path / "cache").exists()


def test_cifar_sets_keep_the_cifar_table(tmp_path):
    write_cifar(tmp_path, n_test=8)
    assert load_shifted_set("cifar10", "fog", 2, data_dir=tmp_path, cache_dir=tmp_path / "cache").table == "cifar"
    ood = load_ood_set("cifar10-c", data_dir=tmp_path, corruption="fog", severity=2, download=False)
    assert ood.table == "cifar" and ood.source == "generated"
    assert load_ood_set("cifar10", data_dir=tmp_path, download=False).table is None


@pytest.mark.parametrize("size, table", [(32, "cifar"), (64, TINY)])
def test_a_files_images_take_the_table_of_their_size(tmp_path, size, table):
    images = natural_images(4, size=size)
    np.savez(tmp_path / "set.npz", x=images)
    ood = load_ood_set(str(tmp_path / "set.npz"), corruption="contrast", severity=3)
    assert ood.table == table
    assert np.array_equal(ood.split.inputs.numpy().transpose(0, 2, 3, 1),
                          corrupt(images, "contrast", severity=3, table=table))
    assert load_ood_set(str(tmp_path / "set.npz")).table is None


def test_a_file_of_another_size_is_refused_naming_it(tmp_path):
    np.savez(tmp_path / "odd.npz", x=natural_images(2, size=28))
    with pytest.raises(InputError, match=r"got 28x28 images in .*odd\.npz; adacal has the tables cifar"):
        load_ood_set(str(tmp_path / "odd.npz"), corruption="fog", severity=1)
    assert load_ood_set(str(tmp_path / "odd.npz")).shape == (3, 28, 28)  # uncorrupted, read as it is
