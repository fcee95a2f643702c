"""The tiny-imagenet severity table: each generator at 64 x 64 with Tiny-ImageNet-C's parameters against the same slow
re-implementations of Hendrycks' code (corruption_references.py, which take the parameters and read the image size
as make_tinyimagenet_c.py's constants), fed the same random numbers, with the tolerances of the CIFAR reference tests
(test_corruption_references.py). The table's last step, their JPEG save at quality 85, is switched off here
(`unsaved`) so values can be compared before it; test_corruption_tables.py checks that step on its own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.ndimage as ndi

import corruption_references as ref
from adacal.data.corruptions import (
    SEVERITY_TABLES,
    TINY_IMAGENET_SEVERITIES,
    brightness,
    contrast,
    defocus_blur,
    elastic_transform,
    fog,
    gaussian_blur,
    gaussian_noise,
    glass_blur,
    impulse_noise,
    jpeg_compression,
    motion_blur,
    pixelate,
    saturate,
    shot_noise,
    speckle_noise,
    zoom_blur,
)
from adacal.data.corruptions.blur import glass_shuffle, zoom_factors
from adacal.data.corruptions.weather import plasma_draws

from test_corruption_references import close

TINY = "tiny-imagenet"
P = TINY_IMAGENET_SEVERITIES


@pytest.fixture(autouse=True)
def unsaved(monkeypatch):
    """The tiny-imagenet table without its final JPEG save, for value-for-value comparisons."""
    monkeypatch.setitem(SEVERITY_TABLES, TINY, dataclasses.replace(SEVERITY_TABLES[TINY], saved_quality=None))


@pytest.fixture(scope="module")
def few(tiny_photos):
    return tiny_photos[:2]


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_shot_noise_is_their_poisson_formula_value_for_value(few, severity):
    expected = ref.shot_noise(few, P["shot_noise"][severity - 1], np.random.default_rng(4))
    assert np.array_equal(shot_noise(few, severity=severity, seed=4, table=TINY), np.rint(np.stack(expected)))


@pytest.mark.parametrize("severity", [1, 5])
def test_speckle_noise_is_their_formula(few, severity):
    c = P["speckle_noise"][severity - 1]
    close(speckle_noise(few, severity=severity, seed=2, table=TINY),
          ref.speckle_noise(few, c, np.random.default_rng(2)))


@pytest.mark.parametrize("severity", [1, 5])
def test_gaussian_and_impulse_noise_statistics_are_the_tables(severity):
    grey = np.full((4, 64, 64, 3), 128, np.uint8)
    sigma = P["gaussian_noise"][severity - 1]
    residual = gaussian_noise(grey, severity=severity, table=TINY).astype(np.float64) / 255 - 128 / 255
    # clipping at 0 and 1 trims nothing that matters up to sigma 0.18 (128 / 255 is 2.8 sigma from either end)
    assert residual.std() == pytest.approx(np.hypot(sigma, 1 / 255 / np.sqrt(12)), rel=0.03)
    amount = P["impulse_noise"][severity - 1]
    flipped = np.isin(impulse_noise(grey, severity=severity, table=TINY), (0, 255)).mean()
    assert flipped == pytest.approx(amount, abs=4 * np.sqrt(amount / grey.size))


@pytest.mark.parametrize("severity", [2, 5])
def test_defocus_blur_is_their_disk_through_filter2d(few, severity):
    radius, alias_blur = P["defocus_blur"][severity - 1]
    close(defocus_blur(few[:1], severity=severity, table=TINY), [ref.defocus_blur(few[0], radius, alias_blur)])


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_gaussian_blur_is_scikit_images_gaussian(few, severity):
    sigma = P["gaussian_blur"][severity - 1]
    expected = [np.clip(ref.gaussian_filter(few[0] / 255.0, sigma), 0, 1) * 255]
    close(gaussian_blur(few[:1], severity=severity, table=TINY), expected)


@pytest.mark.parametrize("severity", [1, 3, 4, 5])
def test_glass_blur_is_their_sequential_shuffle(few, severity):
    """Severities 4 and 5 shuffle with max delta 2: a source below or right of its pixel was visited before it."""
    sigma, max_delta, iterations = P["glass_blur"][severity - 1]
    inner = 64 - 2 * max_delta
    draws = np.random.default_rng(8).random((len(few), iterations, inner, inner, 2))
    offsets = np.floor(draws * 2 * max_delta).astype(int) - max_delta  # np.random.randint(-max_delta, max_delta)
    expected = []
    for image, image_offsets in zip(few, offsets):
        shuffled = ref.glass_blur_shuffle(image, sigma, iterations, image_offsets, max_delta)
        blurred = ndi.gaussian_filter(shuffled / 255.0, sigma=(sigma, sigma, 0), mode="nearest")
        expected.append(np.clip(blurred, 0, 1) * 255)
    close(glass_blur(few, severity=severity, seed=8, table=TINY), expected, exact_share=0.99)


@pytest.mark.parametrize("severity", [1, 5])
def test_motion_blur_is_imagemagicks_kernel(few, severity):
    radius, sigma = P["motion_blur"][severity - 1]
    angle = np.random.default_rng(6).uniform(-45, 45, 1)[0]
    close(motion_blur(few[:1], severity=severity, seed=6, table=TINY), [ref.motion_blur(few[0], radius, sigma, angle)])


@pytest.mark.parametrize("severity", [1, 5])
def test_zoom_blur_is_their_clipped_zoom_average(few, severity):
    factors = zoom_factors(severity, TINY)
    close(zoom_blur(few[:1], severity=severity, table=TINY), [ref.zoom_blur(few[0], factors)])


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_fog_is_their_plasma_fractal_of_side_64(few, severity):
    strength, decay = P["fog"][severity - 1]
    uniforms = np.random.default_rng(3).random((len(few), plasma_draws(64)))
    expected = [ref.fog(image, strength, decay, draws, mapsize=64) for image, draws in zip(few, uniforms)]
    close(fog(few, severity=severity, seed=3, table=TINY), expected)


@pytest.mark.parametrize("severity", [1, 2, 5])
def test_brightness_is_colorsys_hsv_plus_c(few, severity):
    c = P["brightness"][severity - 1]
    expected = [ref.hsv_map(few[0], lambda h, s, v: (h, s, min(v + c, 1.0)))]
    # c = 0.1, 0.3 and 0.5 add 25.5, 76.5 and 127.5 grey levels to the brightest channel: exact halves, which float
    # rounding of another order sends either way (as for CIFAR's 0.1 and 0.3).
    close(brightness(few[:1], severity=severity, table=TINY), expected, exact_share=0.5, mean=0.5)


@pytest.mark.parametrize("severity", [3, 5])
def test_saturate_is_colorsys_hsv_times_a_plus_b(few, severity):
    a, b = P["saturate"][severity - 1]
    expected = [ref.hsv_map(few[0], lambda h, s, v: (h, min(max(s * a + b, 0.0), 1.0), v))]
    close(saturate(few[:1], severity=severity, table=TINY), expected)


@pytest.mark.parametrize("severity", [1, 5])
def test_contrast_is_their_formula(few, severity):
    c = P["contrast"][severity - 1]
    close(contrast(few, severity=severity, table=TINY), [ref.contrast(image, c) for image in few])


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_pixelate_is_pils_box_resampling_down_to_int_64c_and_up(few, severity):
    c = P["pixelate"][severity - 1]
    difference = np.abs(pixelate(few[:1], severity=severity, table=TINY).astype(np.float64) - ref.pixelate(few[0], c))
    assert difference.max() <= 2 and difference.mean() < 0.5


def test_jpeg_compression_loses_more_as_quality_falls(tiny_photos):
    errors = [np.abs(jpeg_compression(tiny_photos[:8], severity=s, table=TINY).astype(np.float64)
                     - tiny_photos[:8]).mean() for s in range(1, 6)]
    assert all(later > earlier for earlier, later in zip(errors, errors[1:])), errors


@pytest.mark.parametrize("severity", [1, 2, 5])
def test_elastic_transform_is_their_affine_then_displacement_with_imsize_64(few, severity):
    parameters = P["elastic_transform"][severity - 1]
    draws = np.random.default_rng(9).random((len(few), 6 + 2 * 64 * 64))
    expected = [ref.elastic_transform(image, parameters, row) for image, row in zip(few, draws)]
    close(elastic_transform(few, severity=severity, seed=9, table=TINY), expected)


@pytest.mark.parametrize("max_delta", [1, 2])
def test_glass_shuffle_equals_their_loop_exactly(few, max_delta):
    """The shuffle alone (sigma 0: no blur), byte for byte, for both max deltas the tables use."""
    inner = 64 - 2 * max_delta
    draws = np.random.default_rng(max_delta).random((len(few), inner, inner, 2))
    offsets = np.floor(draws * 2 * max_delta).astype(int) - max_delta
    expected = [ref.glass_blur_shuffle(image, 0, 1, image_offsets[None], max_delta)
                for image, image_offsets in zip(few, offsets)]
    assert np.array_equal(glass_shuffle(few, offsets, max_delta), np.stack(expected))
