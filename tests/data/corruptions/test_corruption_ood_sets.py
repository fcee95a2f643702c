"""Gaussian noise (byte for byte as before the suite), the OOD sets behind `adacal ood`, and Hendrycks' CIFAR-C
files."""

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

from corruption_helpers import write_hendrycks


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
    assert "gaussian_noise" in corruption_names()


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
    assert torch.equal(split.labels, torch.arange(12)) and not np.array_equal(
        split.inputs.numpy().transpose(0, 2, 3, 1), images)


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
    # A real corruption that only Hendrycks' files hold: the error says where they were looked for, and why adacal
    # cannot make it.
    with pytest.raises(InputError, match=r"Expected corruption 'frost' from Hendrycks' CIFAR-10-C.*not found under "
                                         r".*; adacal cannot generate it: it needs Hendrycks' frost images"):
        load_ood_split("cifar10-c", data_dir=cifar_dir, corruption="frost")
    with pytest.raises(InputError, match=r"--corruption to be one adacal generates for cifar10 \(gaussian_noise, "
                                         r"shot_noise, .*\), got 'snow', which needs ImageMagick.*: it comes only"):
        load_ood_split("cifar10", data_dir=cifar_dir, corruption="snow")
    with pytest.raises(InputError, match="image dataset"):
        load_ood_split("digits", corruption="gaussian_noise")


# ------------------------------------------------------------------------ Hendrycks' CIFAR-10-C layout (.npy files)

HENDRYCKS_19 = [
    "brightness", "contrast", "defocus_blur", "elastic_transform", "fog", "frost", "gaussian_blur", "gaussian_noise",
    "glass_blur", "impulse_noise", "jpeg_compression", "motion_blur", "pixelate", "saturate", "shot_noise", "snow",
    "spatter", "speckle_noise", "zoom_blur",
]


def test_every_hendrycks_corruption_name_is_known_and_a_typo_gets_a_suggestion():
    from adacal.data import CIFAR_C_CORRUPTIONS, check_corruption, known_corruptions

    assert sorted(CIFAR_C_CORRUPTIONS) == HENDRYCKS_19 and len(set(CIFAR_C_CORRUPTIONS)) == 19
    assert set(HENDRYCKS_19) <= set(known_corruptions())
    assert check_corruption("Motion_Blur") == "motion_blur"
    with pytest.raises(UnknownNameError, match="Did you mean 'jpeg_compression'"):
        check_corruption("jpeg_compresion")


@pytest.mark.parametrize("severity", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("nested", [True, False], ids=["CIFAR-10-C folder", "data-dir itself"])
def test_hendrycks_files_give_the_severity_slice_and_its_labels(tmp_path, severity, nested):
    from adacal.data import load_ood_set

    folder = tmp_path / "CIFAR-10-C" if nested else tmp_path
    images, labels = write_hendrycks(folder, names=("fog", "snow"))
    ood = load_ood_set("cifar10-c", data_dir=tmp_path, corruption="fog", severity=severity, download=False)
    assert ood.source == "hendrycks-files" and ood.size == 20 and ood.shape == (3, 32, 32)
    assert ood.files[0] == str(folder / "fog.npy")
    rows = slice((severity - 1) * 20, severity * 20)
    assert ood.split.inputs.dtype == torch.uint8 and ood.split.inputs.shape == (20, 3, 32, 32)
    np.testing.assert_array_equal(ood.split.inputs.numpy().transpose(0, 2, 3, 1), images[rows])
    np.testing.assert_array_equal(ood.split.labels.numpy(), labels[rows])
    assert int(ood.split.inputs[7, 0, 0, 0]) == severity * 10 + 7


def test_hendrycks_selection_reads_only_the_selected_rows(tmp_path):
    from adacal.data import load_cifar_c

    images, labels = write_hendrycks(tmp_path, names=("zoom_blur",), n=20)
    seen = []

    def select(n, severity_labels):
        seen.append(n)
        np.testing.assert_array_equal(severity_labels, labels[20:40])  # the labels of that severity's images
        return np.array([3, 0, 19])

    split, per_severity = load_cifar_c(tmp_path, "zoom_blur", severity=2, select=select)
    assert seen == [20] and per_severity == 20
    np.testing.assert_array_equal(split.inputs.numpy().transpose(0, 2, 3, 1), images[[23, 20, 39]])
    np.testing.assert_array_equal(split.labels.numpy(), labels[[23, 20, 39]])


def test_without_the_files_every_suite_corruption_is_generated_and_says_so(cifar_dir, tmp_path):
    from adacal.data import load_ood_set

    ood = load_ood_set("cifar10-c", data_dir=cifar_dir, download=False)
    assert ood.source == "generated" and ood.files == () and ood.size == 30
    clean = load_dataset("cifar10", data_dir=cifar_dir, download=False).test.inputs
    for name in ("fog", "motion_blur", "jpeg_compression"):
        ood = load_ood_set("cifar10-c", data_dir=cifar_dir, corruption=name, severity=2, seed=3, download=False)
        assert ood.source == "generated" and ood.split.inputs.shape == clean.shape
        assert torch.equal(ood.split.inputs, corrupt(clean, name, severity=2, seed=3, layout="nchw"))
    # A folder holding other corruptions only: those not there are still generated, not an error.
    write_hendrycks(cifar_dir / "CIFAR-10-C", names=("fog",), n=30)
    try:
        assert load_ood_set("cifar10-c", data_dir=cifar_dir, download=False).source == "generated"
        assert load_ood_set("cifar10-c", data_dir=cifar_dir, corruption="fog",
                            download=False).source == "hendrycks-files"
        assert load_ood_set("cifar10-c", data_dir=cifar_dir, corruption="zoom_blur",
                            download=False).source == "generated"
        with pytest.raises(InputError, match=r"CIFAR-10-C has no snow\.npy; adacal cannot generate it: it needs "
                                             r"ImageMagick"):
            load_ood_set("cifar10-c", data_dir=cifar_dir, corruption="snow", download=False)
    finally:
        for path in (cifar_dir / "CIFAR-10-C").iterdir():
            path.unlink()
        (cifar_dir / "CIFAR-10-C").rmdir()


def test_generated_corruption_applies_to_the_selected_images_only(cifar_dir):
    from adacal.data import load_ood_set

    clean = load_dataset("cifar10", data_dir=cifar_dir, download=False).test
    ood = load_ood_set("cifar10-c", data_dir=cifar_dir, severity=3, seed=4, download=False,
                       select=lambda n, labels: np.array([5, 1, 2]))
    assert ood.size == 30 and len(ood.split) == 3
    expected = gaussian_noise(clean.inputs[[5, 1, 2]], severity=3, seed=4, layout="nchw")
    assert torch.equal(ood.split.inputs, expected) and torch.equal(ood.split.labels, clean.labels[[5, 1, 2]])


def _bad_layouts(folder):
    good = np.zeros((100, 32, 32, 3), dtype=np.uint8)
    return {
        "float": (good.astype(np.float32), np.zeros(100, dtype=np.int64), r"uint8 images \(N, H, W, 3\), got float32"),
        "channels first": (good.transpose(0, 3, 1, 2), np.zeros(100, dtype=np.int64), r"got uint8 \(100, 3, 32, 32\)"),
        "labels short": (good, np.zeros(99, dtype=np.int64), r"hold 100 integer labels .* got int64 \(99,\)"),
        "float labels": (good, np.zeros(100), "integer labels"),
        "not 5 severities": (good[:98], np.zeros(98, dtype=np.int64), "5 severities of equally many images, got 98"),
    }


@pytest.mark.parametrize("case", ["float", "channels first", "labels short", "float labels", "not 5 severities"])
def test_hendrycks_files_of_the_wrong_layout_are_one_clear_error(tmp_path, case):
    from adacal.data import load_cifar_c

    images, labels, match = _bad_layouts(tmp_path)[case]
    np.save(tmp_path / "fog.npy", images)
    np.save(tmp_path / "labels.npy", labels)
    with pytest.raises(InputError, match=match):
        load_cifar_c(tmp_path, "fog", severity=1)


def test_a_damaged_npy_file_is_an_input_error(tmp_path):
    from adacal.data import load_cifar_c

    write_hendrycks(tmp_path, names=("fog",))
    (tmp_path / "fog.npy").write_bytes(b"not an array")
    with pytest.raises(InputError, match=r"fog\.npy to be a \.npy array file"):
        load_cifar_c(tmp_path, "fog", severity=1)


def test_the_clean_test_split_is_read_once_until_its_file_changes(tmp_path, monkeypatch):
    from adacal.data.corruptions import ood_sets

    reads = []
    load = ood_sets.load_image_arrays

    def counting(*args, **kwargs):
        reads.append(1)
        return load(*args, **kwargs)

    monkeypatch.setattr(ood_sets, "load_image_arrays", counting)
    monkeypatch.setattr(ood_sets, "_CLEAN_TESTS", {})
    rng = np.random.default_rng(3)

    def write(test_x):
        write_image_npz(tmp_path / "cifar10.npz", train_x=rng.integers(0, 256, (20, 32, 32, 3), dtype=np.uint8),
                        train_y=np.arange(20) % 10, test_x=test_x, test_y=np.arange(len(test_x)) % 10,
                        classes=[f"c{i}" for i in range(10)])

    first_images = rng.integers(0, 256, (12, 32, 32, 3), dtype=np.uint8)
    write(first_images)
    first, shape, kind = ood_sets.clean_test_split("cifar10", data_dir=tmp_path, download=False)
    again, _, _ = ood_sets.clean_test_split("cifar10", data_dir=tmp_path, download=False)
    assert len(reads) == 1 and again is first and shape == (3, 32, 32) and kind == "image"
    assert np.array_equal(first.inputs.numpy().transpose(0, 2, 3, 1), first_images)
    # A replaced file (another size here; a rewrite changes its mtime too) is read again, never served stale.
    second_images = rng.integers(0, 256, (14, 32, 32, 3), dtype=np.uint8)
    write(second_images)
    second, _, _ = ood_sets.clean_test_split("cifar10", data_dir=tmp_path, download=False)
    assert len(reads) == 2 and np.array_equal(second.inputs.numpy().transpose(0, 2, 3, 1), second_images)
    # Corrupting the kept split leaves it as it was: the next reader gets the clean images.
    load_ood_split("cifar10-c", data_dir=tmp_path, download=False)
    assert np.array_equal(second.inputs.numpy().transpose(0, 2, 3, 1), second_images) and len(reads) == 2
