"""Digital corruptions of Hendrycks & Dietterich (2019): brightness, contrast, saturate, pixelate, JPEG compression and
the elastic transform, with their CIFAR or Tiny-ImageNet severities (`adacal.data.corruptions.tables`).

Brightness and saturate go through HSV as scikit-image's rgb2hsv / hsv2rgb define it (`rgb_to_hsv`, `hsv_to_rgb`,
vectorised here); pixelate and JPEG use PIL as their script does, image by image; the elastic transform replaces
OpenCV's affine warp with an exact bilinear one (`bilinear_sample`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.ndimage as ndi
from PIL import Image

from adacal.data.corruptions.suite import corrupt_images, jpeg_round_trip, register_corruption, severity_parameter
from adacal.data.corruptions.tables import DEFAULT_TABLE


def _hsv_planes(red: np.ndarray, green: np.ndarray, blue: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """rgb2hsv on three planes (contiguous arrays are faster than a strided last axis)."""
    value = np.maximum(np.maximum(red, green), blue)
    delta = value - np.minimum(np.minimum(red, green), blue)
    grey = delta == 0
    saturation = np.divide(delta, value, out=np.zeros_like(delta), where=~grey)
    blue_max, green_max = blue == value, green == value
    # skimage assigns red's formula, then green's, then blue's: the last that applies wins.
    numerator = np.where(blue_max, red - green, np.where(green_max, blue - red, green - blue))
    hue = np.where(blue_max, 4.0, np.where(green_max, 2.0, 0.0)) + numerator / np.where(grey, 1.0, delta)
    hue /= 6.0
    hue = np.where(hue < 0, hue + 1.0, hue)  # (hue / 6) % 1 for hue / 6 in (-1/6, 1)
    hue[grey] = 0
    return hue, saturation, value


def _rgb_planes(hue: np.ndarray, saturation: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, ...]:
    """hsv2rgb on three planes: sector i = floor(6 h) mod 6 takes (R, G, B) = (v, t, p), (q, v, p), (p, v, t),
    (p, q, v), (t, p, v), (v, p, q)."""
    sector = np.floor(hue * 6)
    fraction = hue * 6 - sector
    sector = sector.astype(np.int8) % 6
    p = value * (1 - saturation)
    q = value * (1 - fraction * saturation)
    t = value * (1 - (1 - fraction) * saturation)
    masks = [sector == index for index in range(6)]

    def pick(*choices: np.ndarray) -> np.ndarray:
        out = choices[0].copy()
        for mask, choice in zip(masks[1:], choices[1:]):
            np.copyto(out, choice, where=mask)
        return out

    return pick(value, q, p, p, t, value), pick(t, value, value, q, p, p), pick(p, p, t, value, value, q)


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    """skimage.color.rgb2hsv on (..., 3) values in [0, 1]: H in [0, 1) (0 for greys), S = (max - min) / max (0 for
    greys), V = max; where two channels tie for the maximum, blue's formula wins over green's over red's, as there.

    Args:
        rgb: (..., 3) floats in [0, 1].

    Returns:
        (..., 3) hue, saturation, value of the same float dtype.

    >>> rgb_to_hsv(np.array([[1.0, 0.5, 0.0]])).round(4).tolist()
    [[0.0833, 1.0, 1.0]]
    """
    planes = np.moveaxis(np.asarray(rgb), -1, 0)
    return np.stack(_hsv_planes(*planes), axis=-1).astype(rgb.dtype, copy=False)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """skimage.color.hsv2rgb on (..., 3) hue, saturation, value in [0, 1]: the inverse of `rgb_to_hsv`.

    Args:
        hsv: (..., 3) floats in [0, 1].

    Returns:
        (..., 3) red, green, blue of the same float dtype.

    >>> hsv_to_rgb(rgb_to_hsv(np.array([[0.2, 0.4, 0.6]]))).round(6).tolist()
    [[0.2, 0.4, 0.6]]
    """
    planes = np.moveaxis(np.asarray(hsv), -1, 0)
    return np.stack(_rgb_planes(*planes), axis=-1).astype(hsv.dtype, copy=False)


@register_corruption("brightness", version="1")
def brightness(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Brightness: V (HSV) + c, clipped to [0, 1], c = 0.05, 0.1, 0.15, 0.2, 0.3 for severities 1-5 (tiny-imagenet:
    0.1, 0.2, 0.3, 0.4, 0.5).

    Not random. Single-channel images are their own V (a grey's hue and saturation are 0). Arguments and result as
    `gaussian_noise`.

    >>> brightness(np.array([[[[0, 0, 0], [255, 0, 0]]]], np.uint8), severity=4).tolist()  # black turns grey
    [[[[51, 51, 51], [255, 0, 0]]]]
    """
    shift = float(severity_parameter("brightness", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if block.shape[-1] == 1:
            return block / 255.0 + shift
        hue, saturation, value = _hsv_planes(*np.moveaxis(block, -1, 0) / 255.0)
        return np.stack(_rgb_planes(hue, saturation, np.clip(value + shift, 0, 1)), axis=-1)

    return corrupt_images(images, transform, seed=seed, layout=layout, name="brightness", table=table, weight=4)


@register_corruption("contrast", version="1")
def contrast(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Contrast: (x - m) * c + m, m each image's mean per channel, c = 0.75, 0.5, 0.4, 0.3, 0.15 (severities 1-5;
    tiny-imagenet: 0.4, 0.3, 0.2, 0.1, 0.05).

    Not random. Arguments and result as `gaussian_noise`.

    >>> contrast(np.array([[[[0], [255]]]], np.uint8), severity=2)[0, 0, :, 0].tolist()  # mean 127.5, half as far
    [64, 191]
    """
    factor = float(severity_parameter("contrast", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        values = block / 255.0
        means = values.mean(axis=(1, 2), keepdims=True)
        return (values - means) * factor + means

    return corrupt_images(images, transform, seed=seed, layout=layout, name="contrast", table=table)


@register_corruption("saturate", version="1")
def saturate(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Saturate: S (HSV) * a + b, clipped to [0, 1], (a, b) = (0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2) for
    severities 1-5 (tiny-imagenet: (0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (30, 0.2)): the first two wash colours out,
    the last three strengthen them.

    Not random; RGB images only. Arguments and result as `gaussian_noise`.

    >>> saturate(np.array([[[[200, 100, 100]]]], np.uint8), severity=2).tolist()  # S 0.5 -> 0.05
    [[[[200, 190, 190]]]]
    """
    scale, offset = severity_parameter("saturate", severity, table)

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        hue, saturation, value = _hsv_planes(*np.moveaxis(block, -1, 0) / 255.0)
        return np.stack(_rgb_planes(hue, np.clip(saturation * scale + offset, 0, 1), value), axis=-1)

    return corrupt_images(images, transform, seed=seed, layout=layout, name="saturate", table=table, weight=4,
                          rgb_only=True)


def _pil_images(block: np.ndarray, convert: Any) -> np.ndarray:
    """Apply `convert(PIL image) -> PIL image` to each image of a uint8 chunk (n, H, W, C); uint8 of the same shape."""
    out = np.empty_like(block)
    for index, image in enumerate(block):
        picture = Image.fromarray(image[..., 0] if image.shape[-1] == 1 else image)
        out[index] = np.asarray(convert(picture)).reshape(image.shape)
    return out


@register_corruption("pixelate", version="1")
def pixelate(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Pixelate: PIL box resize to int(c * size), then back, c = 0.95, 0.9, 0.85, 0.75, 0.65 (severities 1-5;
    tiny-imagenet: 0.9, 0.8, 0.7, 0.6, 0.5).

    Not random. Arguments and result as `gaussian_noise`.

    >>> pixelate(np.full((1, 32, 32, 3), 77, np.uint8), severity=5).max()  # a constant image is unchanged
    np.uint8(77)
    """
    factor = float(severity_parameter("pixelate", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        height, width = block.shape[1:3]
        small = (max(1, int(width * factor)), max(1, int(height * factor)))
        return _pil_images(block, lambda picture: picture.resize(small, Image.Resampling.BOX).resize(
            (width, height), Image.Resampling.BOX))

    return corrupt_images(images, transform, seed=seed, layout=layout, name="pixelate", table=table)


@register_corruption("jpeg_compression", version="1")
def jpeg_compression(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """JPEG compression: each image saved by PIL as JPEG at quality 80, 65, 58, 50, 40 (severities 1-5; tiny-imagenet:
    65, 58, 50, 40, 25), decoded (`jpeg_round_trip`).

    Not random. PIL's default chroma subsampling (4:2:0) applies, as in their script. With the tiny-imagenet table
    the result is saved at quality 85 once more, as every Tiny-ImageNet-C file was. Arguments and result as
    `gaussian_noise`.

    >>> int(np.abs(jpeg_compression(np.full((1, 32, 32, 3), 90, np.uint8), severity=5).astype(int) - 90).max()) <= 1
    True
    """
    quality = int(severity_parameter("jpeg_compression", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return jpeg_round_trip(block, quality)

    return corrupt_images(images, transform, seed=seed, layout=layout, name="jpeg_compression", table=table)


def _fold(index: np.ndarray, size: int, mode: str) -> np.ndarray:
    """Indices outside 0 ... size - 1 folded back in: "reflect" repeats the edge pixel (d c b a | a b c d, scipy's
    reflect), "mirror" does not (d c b | a b c d, scipy's mirror, OpenCV's BORDER_REFLECT_101)."""
    if mode == "mirror" and size == 1:
        return np.zeros_like(index)
    period, far = (2 * size - 2, 2 * size - 2) if mode == "mirror" else (2 * size, 2 * size - 1)
    low, high = (int(index.min()), int(index.max())) if index.size else (0, 0)
    if low >= 0 and high < size:
        return index
    if low > -size and high < period:  # within one reflection of the image (always, at CIFAR's displacements)
        index = np.where(index < 0, -index if mode == "mirror" else -1 - index, index)
    else:
        index = np.mod(index, period)
    return np.where(index >= size, far - index, index)


def bilinear_sample(images: np.ndarray, rows: np.ndarray, cols: np.ndarray, *, mode: str) -> np.ndarray:
    """Each image of a batch sampled bilinearly at its own coordinates: out[k, i, j] interpolates images[k] at
    (rows[k, i, j], cols[k, i, j]), every channel alike; taps outside the image folded back by `mode` ("reflect" or
    "mirror", `_fold`). scipy.ndimage.map_coordinates(order=1) per image and channel, for a whole chunk at once.

    Args:
        images: (n, H, W, C) floats.
        rows: (n, h, w) row coordinates.
        cols: (n, h, w) column coordinates.
        mode: "reflect" or "mirror".

    Returns:
        (n, h, w, C) values, images' dtype.

    >>> image = np.arange(4.0).reshape(1, 2, 2, 1)
    >>> bilinear_sample(image, np.array([[[0.5]]]), np.array([[[0.5]]]), mode="reflect").ravel().tolist()
    [1.5]
    """
    n, height, width, channels = images.shape
    row0, col0 = np.floor(rows), np.floor(cols)
    row_frac = (rows - row0).astype(images.dtype)[..., None]
    col_frac = (cols - col0).astype(images.dtype)[..., None]
    row0, col0 = row0.astype(np.int64), col0.astype(np.int64)
    flat = images.reshape(n * height * width, channels)
    base = (np.arange(n, dtype=np.int64) * (height * width))[:, None, None]
    top, bottom = base + _fold(row0, height, mode) * width, base + _fold(row0 + 1, height, mode) * width
    left, right = _fold(col0, width, mode), _fold(col0 + 1, width, mode)

    def tap(row_start: np.ndarray, col: np.ndarray) -> np.ndarray:
        return np.take(flat, row_start + col, axis=0)

    upper = tap(top, left)
    upper += (tap(top, right) - upper) * col_frac
    lower = tap(bottom, left)
    lower += (tap(bottom, right) - lower) * col_frac
    upper += (lower - upper) * row_frac
    return upper


def elastic_draws(height: int, width: int) -> int:
    """Uniform numbers one image of the elastic transform uses: 6 for the affine corners, H x W per displacement axis.

    >>> elastic_draws(32, 32)
    2054
    """
    return 6 + 2 * height * width


@register_corruption("elastic_transform", version="1")
def elastic_transform(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Elastic transform: a random affine warp, then a smooth random displacement field, as Hendrycks' code.

    (alpha, sigma, affine) = (0, 0, 0.08), (0.05, 0.2, 0.07), (0.08, 0.06, 0.06), (0.1, 0.04, 0.05), (0.1, 0.03, 0.03)
    (tiny-imagenet: (0, 0, 0.08), (0.05, 0.3, 0.06), (0.1, 0.08, 0.06), (0.1, 0.03, 0.03), (0.16, 0.03, 0.02)) times
    the image's side (their IMSIZE: 32, 64). Affine: the three corners (c + s, c + s), (c + s, c - s), (c - s, c - s) (c
    the centre, s a third of the size) each moved by U(-affine, affine) per coordinate; the image is warped so they land
    there (bilinear, reflect-101 borders, as cv2.warpAffine). Displacement: dx, dy = gaussian(U(-1, 1) per pixel, sigma,
    reflect borders, truncate 3) * alpha, sampled bilinearly (scipy map_coordinates order 1, reflect). Severity 1 has
    alpha 0: only the affine warp. Arguments and result as `gaussian_noise`.

    >>> elastic_transform(np.full((2, 32, 32, 3), 140, np.uint8), severity=3, seed=0).max()
    np.uint8(140)
    """
    alpha_share, sigma_share, affine_share = severity_parameter("elastic_transform", severity, table)

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, height, width, _ = block.shape
        size = min(height, width)
        alpha, sigma, affine = alpha_share * size, sigma_share * size, affine_share * size
        draws = rng.random((n, elastic_draws(height, width)))
        centre_x, centre_y, side = width // 2, height // 2, size // 3
        corners = np.array([[centre_x + side, centre_y + side], [centre_x + side, centre_y - side],
                            [centre_x - side, centre_y - side]], dtype=np.float32)
        moved = corners + (-affine + (2 * affine) * draws[:, :6].reshape(n, 3, 2)).astype(np.float32)
        # The inverse map (where each output pixel comes from): the affine taking the moved corners to the originals.
        inverse = np.linalg.solve(np.concatenate([moved, np.ones((n, 3, 1), np.float32)], axis=2).astype(np.float64),
                                  np.broadcast_to(corners.astype(np.float64), (n, 3, 2)))
        ys, xs = np.meshgrid(np.arange(height, dtype=np.float64), np.arange(width, dtype=np.float64), indexing="ij")
        source_x = inverse[:, 0, 0, None, None] * xs + inverse[:, 1, 0, None, None] * ys + inverse[:, 2, 0, None, None]
        source_y = inverse[:, 0, 1, None, None] * xs + inverse[:, 1, 1, None, None] * ys + inverse[:, 2, 1, None, None]
        warped = bilinear_sample(block.astype(np.float32) / 255.0, source_y, source_x, mode="mirror")
        if alpha == 0:
            return warped
        fields = -1.0 + 2.0 * draws[:, 6:].reshape(n, 2, height, width)
        smooth = ndi.gaussian_filter(fields, sigma=(0, 0, sigma, sigma), mode="reflect", truncate=3.0)
        shift = (smooth * alpha).astype(np.float32)
        return bilinear_sample(warped, ys + shift[:, 1], xs + shift[:, 0], mode="reflect")

    return corrupt_images(images, transform, seed=seed, layout=layout, name="elastic_transform", table=table,
                          weight=4)
