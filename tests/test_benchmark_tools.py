"""benchmarks/pack_cifar10.py: the JPEG pack that carries CIFAR-10 to a machine that cannot download it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from adacal.data import load_dataset

ROOT = Path(__file__).resolve().parents[1]
SHARED_CIFAR = ROOT.parent / "shared" / "data" / "cifar10.npz"


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pack_cifar10 = _load_script("pack_cifar10")


@pytest.fixture(scope="module")
def small_cifar(tmp_path_factory) -> Path:
    """Every 250th training and 50th test image of the real CIFAR-10 (smooth random images where it is absent)."""
    path = tmp_path_factory.mktemp("pack") / "small.npz"
    if SHARED_CIFAR.is_file():
        with np.load(SHARED_CIFAR) as npz:
            arrays = {"train_x": npz["train_x"][::250], "train_y": npz["train_y"][::250],
                      "test_x": npz["test_x"][::50], "test_y": npz["test_y"][::50], "classes": npz["classes"]}
    else:
        rng = np.random.default_rng(0)
        coarse = rng.integers(0, 256, size=(400, 8, 8, 3), dtype=np.uint8)
        images = coarse.repeat(4, axis=1).repeat(4, axis=2)  # blocky, so JPEG keeps it well
        arrays = {"train_x": images[:200], "train_y": np.arange(200) % 10, "test_x": images[200:],
                  "test_y": np.arange(200) % 10, "classes": np.array([f"c{i}" for i in range(10)])}
    np.savez(path, **arrays)
    return path


def test_pack_then_unpack_gives_the_same_labels_and_close_images_that_adacal_loads(small_cifar, tmp_path):
    packed, unpacked = tmp_path / "cifar10.jpeg.npz", tmp_path / "data" / "cifar10.npz"
    assert pack_cifar10.main(["pack", str(small_cifar), str(packed)]) == 0
    assert packed.stat().st_size < small_cifar.stat().st_size / 2
    assert pack_cifar10.main(["unpack", str(packed), str(unpacked)]) == 0
    with np.load(small_cifar) as before, np.load(unpacked) as after:
        assert sorted(after.files) == sorted(before.files)
        for key in ("train_y", "test_y", "classes"):
            np.testing.assert_array_equal(after[key], before[key])
        for key in ("train_x", "test_x"):
            assert after[key].dtype == np.uint8 and after[key].shape == before[key].shape
            assert pack_cifar10.psnr(before[key], after[key]) > 33.0
    dataset = load_dataset("cifar10", data_dir=unpacked.parent, download=False, val_size=20)
    assert len(dataset.train.labels) + len(dataset.val.labels) == 200


def test_decoding_a_subset_matches_decoding_everything(small_cifar):
    with np.load(small_cifar) as npz:
        images = npz["test_x"]
    data, offsets = pack_cifar10.encode_images(images, quality=85)
    picks = np.array([3, 0, 17])
    np.testing.assert_array_equal(pack_cifar10.decode_images(data, offsets, picks),
                                  pack_cifar10.decode_images(data, offsets)[picks])


def test_bad_input_is_one_error_line_and_writes_nothing(small_cifar, tmp_path, capsys):
    target = tmp_path / "out.npz"
    assert pack_cifar10.main(["unpack", str(small_cifar), str(target)]) == 2  # not a packed file
    assert pack_cifar10.main(["pack", str(tmp_path / "missing.npz"), str(target)]) == 2
    assert pack_cifar10.main(["pack", str(small_cifar), str(target), "--quality", "0"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 3 and all(line.startswith("Error: ") for line in errors)
    assert list(tmp_path.iterdir()) == []
