"""`load_shifted_set`: Hendrycks' files where present, else generated and cached — a hit gives the same bytes without
generating, a changed generator or test set never reads a stale file, a damaged file is regenerated, and an
unwritable cache folder only costs the caching."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
import torch

from adacal.data import corrupt, load_ood_set, write_image_npz
from adacal.data.corruptions import GENERATOR_VERSIONS, default_cache_dir, load_shifted_set
from adacal.errors import InputError, UnknownNameError

from corruption_helpers import natural_images, write_cifar, write_hendrycks

N_TEST = 30


@pytest.fixture
def data(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    write_cifar(root, n_test=N_TEST)
    return root


def cached_files(cache_dir):
    return sorted(path.name for path in (cache_dir / "corruptions" / "cifar10").glob("*"))


def test_a_generated_set_is_the_corrupted_test_set_cached_under_its_fingerprint(data, tmp_path, calls):
    clean = np.load(data / "cifar10.npz")["test_x"]
    shifted = load_shifted_set("cifar10", "fog", 3, data_dir=data, seed=2, cache_dir=tmp_path / "cache")
    assert shifted.source == "generated" and shifted.size == N_TEST and shifted.shape == (3, 32, 32)
    assert shifted.table == "cifar"
    assert shifted.split.inputs.dtype == torch.uint8 and shifted.split.inputs.shape == (N_TEST, 3, 32, 32)
    expected = corrupt(clean, "fog", severity=3, seed=2)
    assert np.array_equal(shifted.split.inputs.numpy().transpose(0, 2, 3, 1), expected)
    assert torch.equal(shifted.split.labels, torch.arange(N_TEST) % 10)
    (name,) = cached_files(tmp_path / "cache")
    assert re.fullmatch(r"fog-s3-seed2-[0-9a-f]{16}\.npy", name), name
    assert shifted.files == (str(tmp_path / "cache" / "corruptions" / "cifar10" / name),)
    assert np.array_equal(np.load(shifted.files[0]), expected) and calls == [("fog", "cifar")]
    # The same set as `adacal ood --out cifar10-c` generates from the whole test set.
    ood = load_ood_set("cifar10-c", data_dir=data, corruption="fog", severity=3, seed=2, download=False)
    assert ood.source == "generated" and torch.equal(ood.split.inputs, shifted.split.inputs)


def test_a_cache_hit_gives_the_same_bytes_without_generating(data, tmp_path, calls):
    first = load_shifted_set("cifar10", "motion_blur", 4, data_dir=data, cache_dir=tmp_path / "cache")
    second = load_shifted_set("cifar10", "motion_blur", 4, data_dir=data, cache_dir=tmp_path / "cache")
    assert calls == [("motion_blur", "cifar")] and torch.equal(first.split.inputs, second.split.inputs)
    assert second.files == first.files
    # Another severity, seed or corruption is another file.
    load_shifted_set("cifar10", "motion_blur", 5, data_dir=data, cache_dir=tmp_path / "cache")
    load_shifted_set("cifar10", "motion_blur", 4, data_dir=data, seed=1, cache_dir=tmp_path / "cache")
    assert calls == [("motion_blur", "cifar")] * 3 and len(cached_files(tmp_path / "cache")) == 3
    assert not [name for name in cached_files(tmp_path / "cache") if name.endswith(".tmp")]


def test_a_new_generator_version_or_test_set_never_reads_a_stale_file(data, tmp_path, calls, monkeypatch):
    load_shifted_set("cifar10", "contrast", 2, data_dir=data, cache_dir=tmp_path / "cache")
    monkeypatch.setitem(GENERATOR_VERSIONS, "contrast", "2-test")
    load_shifted_set("cifar10", "contrast", 2, data_dir=data, cache_dir=tmp_path / "cache")
    assert calls == [("contrast", "cifar")] * 2 and len(cached_files(tmp_path / "cache")) == 2
    write_cifar(data, n_test=N_TEST, seed=1)  # other test images, same shape and labels
    changed = load_shifted_set("cifar10", "contrast", 2, data_dir=data, cache_dir=tmp_path / "cache")
    assert calls == [("contrast", "cifar")] * 3 and len(cached_files(tmp_path / "cache")) == 3
    clean = np.load(data / "cifar10.npz")["test_x"]
    assert np.array_equal(changed.split.inputs.numpy().transpose(0, 2, 3, 1), corrupt(clean, "contrast", severity=2))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other shape", "other dtype", "a folder"])
def test_a_damaged_cache_file_is_regenerated_and_replaced(data, tmp_path, calls, damage):
    good = load_shifted_set("cifar10", "pixelate", 5, data_dir=data, cache_dir=tmp_path / "cache")
    path = good.files[0]
    os.remove(path)
    if damage == "garbage":
        with open(path, "wb") as handle:
            handle.write(b"not an array at all")
    elif damage == "truncated":
        np.save(path, good.split.inputs.numpy().transpose(0, 2, 3, 1))
        with open(path, "r+b") as handle:
            handle.truncate(os.path.getsize(path) - 100)
    elif damage == "other shape":
        np.save(path, np.zeros((N_TEST - 1, 32, 32, 3), np.uint8))
    elif damage == "other dtype":
        np.save(path, np.zeros((N_TEST, 32, 32, 3), np.float32))
    else:
        os.mkdir(path)
    again = load_shifted_set("cifar10", "pixelate", 5, data_dir=data, cache_dir=tmp_path / "cache")
    assert calls == [("pixelate", "cifar")] * 2 and torch.equal(again.split.inputs, good.split.inputs)
    if damage != "a folder":  # a folder in the way is left alone (the set comes back uncached)
        assert np.array_equal(np.load(path), good.split.inputs.numpy().transpose(0, 2, 3, 1))


def test_an_unwritable_cache_folder_generates_without_caching(data, tmp_path, calls):
    blocked = tmp_path / "a-file"
    blocked.write_text("in the way")
    shifted = load_shifted_set("cifar10", "zoom_blur", 1, data_dir=data, cache_dir=blocked / "cache")
    assert shifted.source == "generated" and shifted.files == () and len(shifted.split) == N_TEST
    read_only = tmp_path / "read-only"
    (read_only / "corruptions" / "cifar10").mkdir(parents=True)
    for folder in (read_only / "corruptions" / "cifar10", read_only / "corruptions", read_only):
        folder.chmod(0o555)
    try:
        again = load_shifted_set("cifar10", "zoom_blur", 1, data_dir=data, cache_dir=read_only)
        assert torch.equal(again.split.inputs, shifted.split.inputs)
        if os.geteuid() != 0:  # root writes anyway
            assert again.files == () and not cached_files(read_only)
    finally:
        for folder in (read_only, read_only / "corruptions", read_only / "corruptions" / "cifar10"):
            folder.chmod(0o755)


def test_hendrycks_files_are_preferred_where_present(data, tmp_path, calls):
    images, labels = write_hendrycks(data / "CIFAR-10-C", names=("fog", "frost"), n=N_TEST,
                                     labels=np.arange(N_TEST) % 10)
    for name in ("fog", "frost"):
        shifted = load_shifted_set("cifar10", name, 2, data_dir=data, cache_dir=tmp_path / "cache",
                                   test_labels=np.arange(N_TEST) % 10, test_source="cifar10.npz")
        assert shifted.source == "hendrycks-files" and shifted.table == "cifar"
        assert shifted.files == (str(data / "CIFAR-10-C" / f"{name}.npy"), str(data / "CIFAR-10-C" / "labels.npy"))
        assert np.array_equal(shifted.split.inputs.numpy().transpose(0, 2, 3, 1), images[N_TEST : 2 * N_TEST])
        assert np.array_equal(shifted.split.labels.numpy(), labels[N_TEST : 2 * N_TEST])
    assert calls == [] and not (tmp_path / "cache").exists()
    # Files of another test-set order are refused, not scored.
    with pytest.raises(InputError, match="severity 1 differs"):
        load_shifted_set("cifar10", "fog", 2, data_dir=data, cache_dir=tmp_path / "cache",
                         test_labels=(np.arange(N_TEST) + 1) % 10)
    # One the folder does not hold is generated.
    assert load_shifted_set("cifar10", "brightness", 2, data_dir=data,
                            cache_dir=tmp_path / "cache").source == "generated"


@pytest.mark.parametrize("name", ["frost", "snow", "spatter"])
def test_a_corruption_it_cannot_make_without_files_says_why(data, tmp_path, name):
    with pytest.raises(InputError, match=rf"Expected corruption '{name}' from Hendrycks' CIFAR-10-C .*not found under "
                                         rf".*adacal cannot generate it: it needs"):
        load_shifted_set("cifar10", name, 1, data_dir=data, cache_dir=tmp_path / "cache")


def test_any_registered_image_dataset_and_one_clear_error_otherwise(tmp_path):
    test_x = natural_images(8)
    write_image_npz(tmp_path / "svhn.npz", train_x=test_x, train_y=np.arange(8), test_x=test_x,
                    test_y=np.arange(8), classes=[str(i) for i in range(10)])
    shifted = load_shifted_set("SVHN", "saturate", 5, data_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert shifted.source == "generated" and (tmp_path / "cache" / "corruptions" / "svhn").is_dir()
    assert np.array_equal(shifted.split.inputs.numpy().transpose(0, 2, 3, 1), corrupt(test_x, "saturate", severity=5))
    with pytest.raises(InputError, match="got 'frost', which needs Hendrycks' frost images.*CIFAR-10 and CIFAR-100"):
        load_shifted_set("svhn", "frost", 1, data_dir=tmp_path, cache_dir=tmp_path / "cache")
    with pytest.raises(InputError, match="Expected an image dataset for corruption 'fog', got the vector dataset"):
        load_shifted_set("digits", "fog", 1, cache_dir=tmp_path / "cache")
    with pytest.raises(UnknownNameError, match="Unknown dataset 'cifar1O'"):
        load_shifted_set("cifar1O", "fog", 1)
    with pytest.raises(UnknownNameError, match="Did you mean 'zoom_blur'"):
        load_shifted_set("cifar10", "zoom_blurr", 1)
    with pytest.raises(InputError, match="severity to be an integer from 1 to 5, got 6"):
        load_shifted_set("cifar10", "fog", 6)
    with pytest.raises(InputError, match="seed to be a non-negative integer"):
        load_shifted_set("cifar10", "fog", 1, seed=-2)


def test_the_default_cache_folder_is_adacal_cache_then_the_user_cache(tmp_path, monkeypatch, data):
    monkeypatch.setenv("ADACAL_CACHE", str(tmp_path / "env-cache"))
    assert default_cache_dir() == tmp_path / "env-cache"
    shifted = load_shifted_set("cifar10", "contrast", 1, data_dir=data)
    assert shifted.files[0].startswith(str(tmp_path / "env-cache" / "corruptions" / "cifar10"))
    monkeypatch.delenv("ADACAL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "adacal"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "adacal"
