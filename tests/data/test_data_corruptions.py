"""Gaussian-noise corruption (CIFAR-10-C style) and the OOD sets behind `adacal ood`."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.data import (
    BatchLoader,
    GAUSSIAN_NOISE_SIGMAS,
    corrupt,
    corruption_names,
    gaussian_noise,
    load_dataset,
    load_ood_split,
    write_image_npz,
)
from adacal.errors import InputError, UnknownNameError


def grey_images(n=64, value=128):
    return np.full((n, 32, 32, 3), value, dtype=np.uint8)


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_sigma_matches_hendrycks_values(severity):
    noisy = gaussian_noise(grey_images(), severity=severity, seed=0)
    residual = (noisy.astype(np.float64) - 128) / 255
    sigma = GAUSSIAN_NOISE_SIGMAS[severity - 1]
    assert abs(residual.std() - sigma) < 0.02 * sigma + 0.5 / 255 / np.sqrt(12)  # + rounding
    assert abs(residual.mean()) < 0.002


def test_values_reference_formula_and_rounding():
    images = np.random.default_rng(1).integers(0, 256, (5, 8, 8, 3), dtype=np.uint8)
    noise = np.random.default_rng(9).standard_normal(images.shape, dtype=np.float32) * np.float32(0.1)
    expected = np.rint(np.clip(images.astype(np.float32) / 255 + noise, 0, 1) * 255).astype(np.uint8)
    assert np.array_equal(gaussian_noise(images, severity=5, seed=9), expected)


def test_deterministic_layout_invariant_and_type_preserving():
    images = np.random.default_rng(0).integers(0, 256, (6, 32, 32, 3), dtype=np.uint8)
    a = gaussian_noise(images, severity=4, seed=2)
    assert a.dtype == np.uint8 and a.shape == images.shape
    assert np.array_equal(a, gaussian_noise(images, severity=4, seed=2))
    assert not np.array_equal(a, gaussian_noise(images, severity=4, seed=3))
    nchw = torch.from_numpy(images.transpose(0, 3, 1, 2).copy())
    b = gaussian_noise(nchw, severity=4, seed=2)
    assert isinstance(b, torch.Tensor) and b.shape == nchw.shape and b.dtype == torch.uint8
    assert np.array_equal(b.numpy().transpose(0, 2, 3, 1), a)
    assert np.array_equal(corrupt(images, "gaussian_noise", severity=4, seed=2), a)
    assert corruption_names() == ["gaussian_noise"]


@pytest.mark.parametrize("severity", [0, 6, 2.5, "5", True])
def test_bad_severity(severity):
    with pytest.raises(InputError, match="severity to be an integer from 1 to 5"):
        gaussian_noise(grey_images(2), severity=severity)


def test_bad_images():
    with pytest.raises(InputError, match="uint8"):
        gaussian_noise(grey_images(2).astype(np.float32), severity=1)
    with pytest.raises(InputError, match="4 axes"):
        gaussian_noise(grey_images(2)[0], severity=1)


@pytest.fixture(scope="module")
def cifar_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ood")
    rng = np.random.default_rng(0)
    write_image_npz(
        root / "cifar10.npz",
        train_x=rng.integers(0, 256, (100, 32, 32, 3), dtype=np.uint8), train_y=np.arange(100) % 10,
        test_x=rng.integers(0, 256, (30, 32, 32, 3), dtype=np.uint8), test_y=np.arange(30) % 10,
        classes=[f"c{i}" for i in range(10)],
    )
    return root


def test_cifar10_c_is_the_corrupted_test_set(cifar_dir):
    clean = load_dataset("cifar10", data_dir=cifar_dir, download=False)
    split, shape = load_ood_split("cifar10-c", data_dir=cifar_dir, download=False)
    assert shape == (3, 32, 32) and split.inputs.shape == clean.test.inputs.shape and split.inputs.dtype == torch.uint8
    assert torch.equal(split.labels, clean.test.labels)
    expected = gaussian_noise(clean.test.inputs, severity=5, seed=0, layout="nchw")
    assert torch.equal(split.inputs, expected)
    milder, _ = load_ood_split("cifar10-c", data_dir=cifar_dir, severity=1, download=False)
    gap = lambda s: (s.inputs.float() - clean.test.inputs.float()).abs().mean()  # noqa: E731
    assert gap(milder) < gap(split)
    plain, _ = load_ood_split("cifar10", data_dir=cifar_dir, download=False)
    assert torch.equal(plain.inputs, clean.test.inputs)
    # fed with the in-distribution normalisation
    x, _ = next(iter(BatchLoader(split, 8, dataset=clean, device="cpu")))
    assert x.dtype == torch.float32 and x.shape == (8, 3, 32, 32)


def test_ood_from_npz_path(tmp_path):
    images = np.random.default_rng(0).integers(0, 256, (12, 32, 32, 3), dtype=np.uint8)
    np.savez(tmp_path / "svhn_like.npz", x=images)
    split, shape = load_ood_split(str(tmp_path / "svhn_like.npz"))
    assert shape == (3, 32, 32) and torch.equal(split.labels, torch.full((12,), -1))
    assert np.array_equal(split.inputs.numpy().transpose(0, 2, 3, 1), images)
    np.savez(tmp_path / "with_labels.npz", test_x=images, test_y=np.arange(12))
    split, _ = load_ood_split(str(tmp_path / "with_labels.npz"), corruption="gaussian_noise", severity=2, seed=1)
    assert torch.equal(split.labels, torch.arange(12)) and not np.array_equal(split.inputs.numpy().transpose(0, 2, 3, 1), images)


def test_ood_errors(tmp_path, cifar_dir):
    with pytest.raises(UnknownNameError, match="Did you mean 'cifar10-c'"):
        load_ood_split("cifar10c", data_dir=cifar_dir)
    np.savez(tmp_path / "bad.npz", images=np.zeros((2, 32, 32, 3), dtype=np.uint8))
    with pytest.raises(InputError, match="key 'x' or 'test_x'"):
        load_ood_split(str(tmp_path / "bad.npz"))
    np.savez(tmp_path / "float.npz", x=np.zeros((2, 32, 32, 3), dtype=np.float32))
    with pytest.raises(InputError, match="uint8"):
        load_ood_split(str(tmp_path / "float.npz"))
    with pytest.raises(InputError, match="does not exist"):
        load_ood_split(str(tmp_path / "missing.npz"))
    with pytest.raises(UnknownNameError, match="Unknown corruption 'fgo'. Did you mean 'fog'"):
        load_ood_split("cifar10-c", data_dir=cifar_dir, corruption="fgo")
    # A real corruption that only Hendrycks' files hold: the error says where they were looked for.
    with pytest.raises(InputError, match=r"Expected corruption 'fog' from Hendrycks' CIFAR-10-C.*not found under"):
        load_ood_split("cifar10-c", data_dir=cifar_dir, corruption="fog")
    with pytest.raises(InputError, match="image dataset"):
        load_ood_split("digits", corruption="gaussian_noise")
