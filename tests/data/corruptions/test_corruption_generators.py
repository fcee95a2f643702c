"""Every generated corruption: one contract (uint8 in, uint8 of the same layout and type out, deterministic for a
seed, independent of the chunk size), worked small cases, and severities that hurt more as they grow."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import adacal.data.corruptions.suite as suite
from adacal.data import corrupt, corruption_names
from adacal.data.corruptions import (
    CIFAR_C_CORRUPTIONS,
    CORRUPTIONS,
    SEVERITIES,
    UNAVAILABLE,
    brightness,
    check_corruption,
    contrast,
    defocus_blur,
    impulse_noise,
    jpeg_compression,
    known_corruptions,
    pixelate,
    saturate,
    shift_corruptions,
)
from adacal.errors import InputError, UnknownNameError

from corruption_helpers import psnr

GENERATED = shift_corruptions()
RANDOM = {"gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "glass_blur", "motion_blur", "fog",
          "elastic_transform"}


def test_the_suite_is_hendrycks_list_less_the_three_it_cannot_make():
    assert GENERATED == [name for name in CIFAR_C_CORRUPTIONS if name not in ("snow", "frost", "spatter")]
    assert sorted(GENERATED) == corruption_names() and len(GENERATED) == 16
    assert sorted(UNAVAILABLE) == ["frost", "snow", "spatter"]
    assert set(SEVERITIES) == set(GENERATED) and all(len(values) == 5 for values in SEVERITIES.values())
    assert set(known_corruptions()) == set(CIFAR_C_CORRUPTIONS)


@pytest.mark.parametrize("name", ["frost", "snow", "spatter"])
def test_a_corruption_it_cannot_make_says_why(name):
    assert check_corruption(name) == name  # a known name: Hendrycks' files have it
    with pytest.raises(InputError, match=rf"^'{name}' needs .*; use their CIFAR-10-C files with --data-dir\.$"):
        check_corruption(name, generated=True)
    with pytest.raises(InputError, match=f"'{name}' needs"):
        corrupt(np.zeros((1, 8, 8, 3), np.uint8), name, severity=1)
    with pytest.raises(UnknownNameError, match="Did you mean 'frost'"):
        check_corruption("forst", generated=True)


@pytest.mark.parametrize("name", GENERATED)
def test_contract_layouts_types_and_determinism(name, photos):
    images = photos[:6]
    generator = CORRUPTIONS.get(name)
    out = generator(images, severity=3, seed=5)
    assert out.dtype == np.uint8 and out.shape == images.shape and isinstance(out, np.ndarray)
    assert np.array_equal(out, generator(images, severity=3, seed=5))
    assert np.array_equal(out, corrupt(images, name, severity=3, seed=5))
    nchw = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))
    from_torch = generator(nchw, severity=3, seed=5)
    assert isinstance(from_torch, torch.Tensor) and from_torch.dtype == torch.uint8 and from_torch.shape == nchw.shape
    assert np.array_equal(from_torch.numpy().transpose(0, 2, 3, 1), out)
    assert np.array_equal(generator(images.transpose(0, 3, 1, 2), severity=3, seed=5, layout="nchw"),
                          out.transpose(0, 3, 1, 2))
    other_seed = generator(images, severity=3, seed=6)
    assert (not np.array_equal(out, other_seed)) if name in RANDOM else np.array_equal(out, other_seed)
    assert not np.array_equal(out, images)  # it does something to every kind of image
    assert generator(images[:0], severity=1).shape == (0, 32, 32, 3)


@pytest.mark.parametrize("name", GENERATED)
def test_the_chunk_size_does_not_change_a_byte(name, photos, monkeypatch):
    images = photos[:7]
    whole = CORRUPTIONS.get(name)(images, severity=4, seed=3)
    monkeypatch.setattr(suite, "VALUES_PER_CHUNK", 2 * 32 * 32 * 3)  # chunks of 2, 1 or fewer images
    assert np.array_equal(CORRUPTIONS.get(name)(images, severity=4, seed=3), whole)


@pytest.mark.parametrize("name", GENERATED)
def test_bad_arguments_are_one_clear_error(name):
    generator = CORRUPTIONS.get(name)
    grey = np.full((2, 8, 8, 3), 100, np.uint8)
    for severity in (0, 6, 2.5, "5", True):
        with pytest.raises(InputError, match="severity to be an integer from 1 to 5"):
            generator(grey, severity=severity)
    with pytest.raises(InputError, match="uint8"):
        generator(grey.astype(np.float32), severity=1)
    with pytest.raises(InputError, match="4 axes"):
        generator(grey[0], severity=1)
    with pytest.raises(InputError, match="C = 1 or 3"):
        generator(np.zeros((2, 8, 8, 5), np.uint8), severity=1)
    with pytest.raises(InputError, match="seed to be a non-negative integer"):
        generator(grey, severity=1, seed=-1)


@pytest.mark.parametrize("name", GENERATED)
def test_single_channel_images_work_where_the_corruption_has_a_meaning_for_them(name):
    grey = np.random.default_rng(0).integers(0, 256, (3, 16, 16, 1), dtype=np.uint8)
    if name == "saturate":
        with pytest.raises(InputError, match="RGB images"):
            saturate(grey, severity=1)
        return
    out = CORRUPTIONS.get(name)(grey, severity=2, seed=1)
    assert out.shape == grey.shape and out.dtype == np.uint8


# ----------------------------------------------------------------------------------------- cases worked by hand


def test_brightness_and_contrast_of_a_2x2_image_by_hand():
    image = np.array([[[[0, 0, 0], [255, 255, 255]], [[100, 50, 0], [200, 200, 100]]]], np.uint8)
    # Brightness 4 adds 0.2 to V = max channel, keeping hue and saturation: each channel scales by (V + 0.2) / V.
    # black: grey 0.2 -> 51; white stays; (100, 50, 0): V 100/255 -> 151/255, x1.51 -> (151, 75.5, 0);
    # (200, 200, 100): V 200 -> 251, x1.255 -> (251, 251, 125.5). Halves round to even.
    assert brightness(image, severity=4).tolist() == [[[[51, 51, 51], [255, 255, 255]],
                                                       [[151, 76, 0], [251, 251, 126]]]]
    # Contrast 3 (c = 0.4) pulls each channel towards its mean: R mean (0 + 255 + 100 + 200) / 4 = 138.75,
    # so R = 138.75 + 0.4 (R - 138.75) = 83.25, 185.25, 123.25, 163.25; G mean 126.25; B mean 88.75.
    expected_r = [83, 185, 123, 163]
    expected_g = [76, 178, 96, 156]
    expected_b = [53, 155, 53, 93]
    got = contrast(image, severity=3).reshape(4, 3).T.tolist()
    assert got == [expected_r, expected_g, expected_b]


def test_saturate_by_hand():
    # (200, 100, 100): V 200, S 0.5, hue 0. Severity 1: S 0.15 -> G = B = 200 (1 - 0.15) = 170.
    # Severity 4: S = 0.5 * 2 + 0.1 = 1.1 -> 1: G = B = 0.
    image = np.array([[[[200, 100, 100]]]], np.uint8)
    assert saturate(image, severity=1).tolist() == [[[[200, 170, 170]]]]
    assert saturate(image, severity=4).tolist() == [[[[200, 0, 0]]]]


@pytest.mark.parametrize("severity", [1, 2, 3, 4, 5])
def test_constant_images_stay_constant_under_blurs_pixelate_zoom_and_nearly_under_jpeg(severity):
    constant = np.full((2, 32, 32, 3), 87, np.uint8)
    for name in ("defocus_blur", "gaussian_blur", "glass_blur", "motion_blur", "zoom_blur", "pixelate",
                 "elastic_transform"):
        assert np.array_equal(CORRUPTIONS.get(name)(constant, severity=severity, seed=1), constant), name
    assert np.abs(jpeg_compression(constant, severity=severity).astype(int) - 87).max() <= 1


def test_defocus_at_low_severity_barely_spreads_a_point_and_pixelate_keeps_a_constant_grey_image():
    point = np.zeros((1, 9, 9, 1), np.uint8)
    point[0, 4, 4] = 255
    # Radius 0.3: the disk is its centre pixel, blurred by a 3 x 3 Gaussian of sigma 0.4: centre weight
    # 1 / (1 + 2 exp(-1 / 0.32))^2 = 0.841, edge neighbours 0.0371, corners 0.0016.
    assert defocus_blur(point, severity=1)[0, 3:6, 3:6, 0].tolist() == [[0, 9, 0], [9, 215, 9], [0, 9, 0]]
    assert np.array_equal(pixelate(np.full((1, 9, 9, 1), 3, np.uint8), severity=5), np.full((1, 9, 9, 1), 3))


@pytest.mark.parametrize("severity", [1, 5])
def test_impulse_noise_sets_about_amount_of_the_values_to_0_or_255(severity):
    grey = np.full((32, 32, 32, 3), 128, np.uint8)
    noisy = impulse_noise(grey, severity=severity, seed=0)
    amount = SEVERITIES["impulse_noise"][severity - 1]
    total = grey.size
    zeros, full = int((noisy == 0).sum()), int((noisy == 255).sum())
    assert abs(zeros - amount / 2 * total) < 4 * np.sqrt(amount / 2 * total)
    assert abs(full - amount / 2 * total) < 4 * np.sqrt(amount / 2 * total)
    assert zeros + full + int((noisy == 128).sum()) == total  # the others are untouched
    flipped = noisy != 128
    # channels flip independently: a pixel has all three flipped about amount^3 of the time
    assert flipped.all(axis=-1).mean() < 5 * amount**3 + 0.001


# ------------------------------------------------------------------------------------------- severity ordering

# Hendrycks' parameters do not all grow with the severity: saturate washes colours out at 1-2 and strengthens them
# at 3-5; glass blur's sharper severities 1-2 differ more from the image than the blurred 3; motion blur's
# severities 3 and 4 share sigma 2 (the wider radius adds taps of weight < 0.003); the elastic transform's affine
# jitter shrinks (0.08 to 0.03 of the size) while its displacement field grows, so its PSNR rises.
STEP_EXCEPTIONS = {"saturate", "glass_blur", "motion_blur", "elastic_transform"}


@pytest.fixture(scope="module")
def psnr_by_severity(photos):
    images = photos
    return {name: [psnr(images, CORRUPTIONS.get(name)(images, severity=s, seed=0)) for s in range(1, 6)]
            for name in GENERATED}


@pytest.mark.parametrize("name", GENERATED)
def test_psnr_falls_from_severity_1_to_5(name, psnr_by_severity):
    values = psnr_by_severity[name]
    if name == "elastic_transform":
        assert values[4] > values[0]  # documented above
        return
    assert values[4] < values[0] - 1.0, values
    if name not in STEP_EXCEPTIONS:
        assert all(later < earlier for earlier, later in zip(values, values[1:])), values
    if name == "motion_blur":
        assert all(later < earlier + 0.3 for earlier, later in zip(values, values[1:])), values
    if name == "glass_blur":
        assert max(values[3:]) < min(values[:3]), values
    if name == "saturate":
        assert values[4] < values[3] < min(values[:3]) and values[1] < values[0], values
