"""Each generator against an independent, slow re-implementation of Hendrycks' make_cifar_c.py (one image, mostly one
pixel, at a time: corruption_references.py), fed with the same random numbers; or, where no such reference can be
written (JPEG, impulse noise), against the published definition's statistics. Values may differ by one grey level
where float arithmetic of another order puts a value on the other side of a rounding half."""

from __future__ import annotations

import numpy as np
import pytest

import corruption_references as ref
from adacal.data.corruptions import (
    SEVERITIES,
    brightness,
    contrast,
    defocus_blur,
    elastic_transform,
    fog,
    gaussian_blur,
    gaussian_noise,
    glass_blur,
    jpeg_compression,
    motion_blur,
    pixelate,
    saturate,
    shot_noise,
    speckle_noise,
    zoom_blur,
)
from adacal.data.corruptions.blur import zoom_factors

SEVERITY = [1, 3, 5]


def close(generated, expected, *, exact_share=0.97, mean=0.05):
    """uint8 results within one grey level of the reference rounded to the nearest, almost all exactly equal."""
    expected = np.rint(np.asarray(expected, dtype=np.float64))
    difference = np.abs(generated.astype(np.float64) - expected)
    assert difference.max() <= 1, f"differs by up to {difference.max()} grey levels"
    assert (difference == 0).mean() >= exact_share, f"only {(difference == 0).mean():.3f} of the values agree"
    assert difference.mean() <= mean


@pytest.fixture(scope="module")
def few(photos):
    return photos[:3]


@pytest.mark.parametrize("severity", SEVERITY)
def test_shot_noise_is_their_poisson_formula_value_for_value(few, severity):
    c = SEVERITIES["shot_noise"][severity - 1]
    expected = ref.shot_noise(few, c, np.random.default_rng(4))
    assert np.array_equal(shot_noise(few, severity=severity, seed=4), np.rint(np.stack(expected)))


@pytest.mark.parametrize("severity", SEVERITY)
def test_speckle_noise_is_their_formula(few, severity):
    c = SEVERITIES["speckle_noise"][severity - 1]
    close(speckle_noise(few, severity=severity, seed=2), ref.speckle_noise(few, c, np.random.default_rng(2)))


@pytest.mark.parametrize("severity", [1, 5])
def test_noise_statistics_match_the_published_definitions(severity):
    grey = np.full((16, 32, 32, 3), 128, np.uint8)
    x = 128 / 255
    sigma = SEVERITIES["gaussian_noise"][severity - 1]
    residual = gaussian_noise(grey, severity=severity).astype(np.float64) / 255 - x
    assert residual.std() == pytest.approx(np.hypot(sigma, 1 / 255 / np.sqrt(12)), rel=0.03)
    c = SEVERITIES["shot_noise"][severity - 1]  # Poisson(x c) / c: variance x / c
    residual = shot_noise(grey, severity=severity).astype(np.float64) / 255 - x
    assert residual.std() == pytest.approx(np.hypot(np.sqrt(x / c), 1 / 255 / np.sqrt(12)), rel=0.03)
    assert abs(residual.mean()) < 0.002
    c = SEVERITIES["speckle_noise"][severity - 1]  # x + x N(0, c^2): standard deviation x c
    residual = speckle_noise(grey, severity=severity).astype(np.float64) / 255 - x
    assert residual.std() == pytest.approx(np.hypot(x * c, 1 / 255 / np.sqrt(12)), rel=0.03)


@pytest.mark.parametrize("severity", [1, 4, 5])
def test_defocus_blur_is_their_disk_through_filter2d(few, severity):
    radius, alias_blur = SEVERITIES["defocus_blur"][severity - 1]
    close(defocus_blur(few[:1], severity=severity), [ref.defocus_blur(few[0], radius, alias_blur)])


@pytest.mark.parametrize("severity", SEVERITY)
def test_gaussian_blur_is_scikit_images_gaussian(few, severity):
    sigma = SEVERITIES["gaussian_blur"][severity - 1]
    expected = [np.clip(ref.gaussian_filter(image / 255.0, sigma), 0, 1) * 255 for image in few[:2]]
    close(gaussian_blur(few[:2], severity=severity), expected)


@pytest.mark.parametrize("severity", [1, 4, 5])
def test_glass_blur_is_their_sequential_shuffle(few, severity):
    """The one-gather shuffle equals their pixel-by-pixel loop (with its swap statement) on the same moves."""
    import scipy.ndimage as ndi

    sigma, _, iterations = SEVERITIES["glass_blur"][severity - 1]
    moves = np.random.default_rng(8).random((len(few), iterations, 30, 30, 2)) < 0.5  # True: -1, else 0
    expected = []
    for image, image_moves in zip(few, moves):
        shuffled = ref.glass_blur_shuffle(image, sigma, iterations, -image_moves.astype(int))
        blurred = ndi.gaussian_filter(shuffled / 255.0, sigma=(sigma, sigma, 0), mode="nearest")
        expected.append(np.clip(blurred, 0, 1) * 255)
    close(glass_blur(few, severity=severity, seed=8), expected, exact_share=0.99)


@pytest.mark.parametrize("severity", SEVERITY)
def test_motion_blur_is_imagemagicks_kernel(few, severity):
    radius, sigma = SEVERITIES["motion_blur"][severity - 1]
    angles = np.random.default_rng(6).uniform(-45, 45, len(few))
    expected = [ref.motion_blur(image, radius, sigma, angle) for image, angle in zip(few, angles)]
    close(motion_blur(few, severity=severity, seed=6), expected)


@pytest.mark.parametrize("severity", SEVERITY)
def test_zoom_blur_is_their_clipped_zoom_average(few, severity):
    close(zoom_blur(few, severity=severity), [ref.zoom_blur(image, zoom_factors(severity)) for image in few])


def test_zoom_factors_are_their_aranges():
    assert [len(zoom_factors(s)) for s in range(1, 6)] == [7, 12, 16, 21, 26]


@pytest.mark.parametrize("severity", SEVERITY)
def test_fog_is_their_plasma_fractal(few, severity):
    strength, decay = SEVERITIES["fog"][severity - 1]
    uniforms = np.random.default_rng(3).random((len(few), 1023))
    expected = [ref.fog(image, strength, decay, draws) for image, draws in zip(few, uniforms)]
    close(fog(few, severity=severity, seed=3), expected)


@pytest.mark.parametrize("severity", [1, 2, 5])
def test_brightness_is_colorsys_hsv_plus_c(few, severity):
    c = SEVERITIES["brightness"][severity - 1]
    expected = [ref.hsv_map(image, lambda h, s, v: (h, s, min(v + c, 1.0))) for image in few[:1]]
    # c = 0.1 and 0.3 add 25.5 and 76.5 grey levels to the brightest channel: exact halves, which float rounding of
    # another order sends either way.
    close(brightness(few[:1], severity=severity), expected, exact_share=0.5, mean=0.5)


@pytest.mark.parametrize("severity", SEVERITY)
def test_saturate_is_colorsys_hsv_times_a_plus_b(few, severity):
    a, b = SEVERITIES["saturate"][severity - 1]
    expected = [ref.hsv_map(image, lambda h, s, v: (h, min(max(s * a + b, 0.0), 1.0), v)) for image in few[:1]]
    close(saturate(few[:1], severity=severity), expected)


@pytest.mark.parametrize("severity", SEVERITY)
def test_contrast_is_their_formula(few, severity):
    c = SEVERITIES["contrast"][severity - 1]
    close(contrast(few, severity=severity), [ref.contrast(image, c) for image in few])


@pytest.mark.parametrize("severity", SEVERITY)
def test_pixelate_is_pils_box_resampling_down_and_up(few, severity):
    c = SEVERITIES["pixelate"][severity - 1]
    expected = [ref.pixelate(image, c) for image in few[:2]]
    # PIL rounds to uint8 after each of its four passes (and uses fixed-point weights): within 2 grey levels.
    difference = np.abs(pixelate(few[:2], severity=severity).astype(np.float64) - np.stack(expected))
    assert difference.max() <= 2 and difference.mean() < 0.5


def test_jpeg_compression_loses_more_as_quality_falls_and_stays_close(photos):
    errors = [np.abs(jpeg_compression(photos[:16], severity=s).astype(np.float64) - photos[:16]).mean()
              for s in range(1, 6)]
    assert all(later > earlier for earlier, later in zip(errors, errors[1:])), errors
    assert 0.3 < errors[0] < errors[-1] < 6, errors


@pytest.mark.parametrize("severity", [1, 2, 5])
def test_elastic_transform_is_their_affine_then_displacement(few, severity):
    parameters = SEVERITIES["elastic_transform"][severity - 1]
    draws = np.random.default_rng(9).random((2, 6 + 2 * 32 * 32))
    expected = [ref.elastic_transform(image, parameters, row) for image, row in zip(few[:2], draws)]
    close(elastic_transform(few[:2], severity=severity, seed=9), expected)
