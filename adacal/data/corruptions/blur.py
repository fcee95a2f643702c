"""Blur corruptions of Hendrycks & Dietterich (2019): defocus, gaussian, glass, motion and zoom blur, with their CIFAR
or Tiny-ImageNet severities (`adacal.data.corruptions.tables`), on whole chunks of images at once.

Where their make_cifar_c.py / make_tinyimagenet_c.py call OpenCV, scikit-image or ImageMagick, the same operation is
written with numpy/scipy: cv2.filter2D's reflect-101 border is scipy's "mirror", skimage.filters.gaussian is
scipy.ndimage.gaussian_filter (mode "nearest", truncate 4), ImageMagick's MotionBlurImage kernel is rebuilt here
(`motion_kernel`). docs/corruptions.md lists what differs and why.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import scipy.ndimage as ndi
import scipy.sparse

from adacal.data.corruptions.suite import (
    check_severity,
    corrupt_images,
    register_corruption,
    severity_parameter,
    to_uint8,
)
from adacal.data.corruptions.tables import DEFAULT_TABLE

MOTION_TAP_FLOOR = 1e-7  # motion-blur taps lighter than this share of the kernel move no value by 1e-4 grey levels


def disk_kernel(radius: float, alias_blur: float) -> np.ndarray:
    """Hendrycks' defocus kernel: a disk of `radius` (pixels whose centre lies within it), normalised, then blurred by
    a 3x3 Gaussian of sigma `alias_blur` (cv2.GaussianBlur; 5x5 above radius 8), cut to its non-zero support.

    Args:
        radius: the disk's radius in pixels.
        alias_blur: sigma of the anti-aliasing blur.

    Returns:
        A float32 (k, k) kernel summing to 1.

    >>> disk_kernel(0.3, 0.4).shape
    (3, 3)
    """
    half = 8 if radius <= 8 else int(radius)
    axis = np.arange(-half, half + 1)
    x, y = np.meshgrid(axis, axis)
    disk = (x**2 + y**2 <= radius**2).astype(np.float32)
    disk /= disk.sum()
    size = 3 if radius <= 8 else 5
    taps = np.arange(size) - (size - 1) / 2
    gauss = np.exp(-(taps**2) / (2 * alias_blur**2))
    gauss /= gauss.sum()
    kernel = ndi.correlate1d(ndi.correlate1d(disk, gauss, axis=0, mode="mirror"), gauss, axis=1, mode="mirror")
    rows = np.flatnonzero(kernel.any(axis=1))
    reach = max(half - int(rows[0]), int(rows[-1]) - half)
    return kernel[half - reach : half + reach + 1, half - reach : half + reach + 1].astype(np.float32)


def _gaussian(values: np.ndarray, sigma: float) -> np.ndarray:
    """skimage.filters.gaussian(x, sigma, multichannel=True) on a chunk (n, H, W, C): mode "nearest", truncate 4."""
    return ndi.gaussian_filter(values, sigma=(0, sigma, sigma, 0), mode="nearest", truncate=4.0)


@register_corruption("defocus_blur", version="1")
def defocus_blur(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Defocus blur: each channel correlated with `disk_kernel(radius, alias_blur)`, (radius, alias_blur) = (0.3, 0.4),
    (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1) for severities 1-5 (tiny-imagenet: (0.5, 0.6), (1, 0.1), (1.5, 0.1),
    (2.5, 0.01), (3, 0.1)), reflect-101 borders (cv2.filter2D's).

    Not random (`seed` is accepted and unused). Arguments and result as `gaussian_noise`.

    >>> defocus_blur(np.full((1, 8, 8, 3), 90, np.uint8), severity=5).min()  # a constant image stays constant
    np.uint8(90)
    """
    radius, alias_blur = severity_parameter("defocus_blur", severity, table)
    kernel = disk_kernel(radius, alias_blur)[None, :, :, None]

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return ndi.correlate(block.astype(np.float32) / 255.0, kernel, mode="mirror")

    return corrupt_images(images, transform, seed=seed, layout=layout, name="defocus_blur", table=table)


@register_corruption("gaussian_blur", version="1")
def gaussian_blur(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Gaussian blur of sigma 0.4, 0.6, 0.7, 0.8, 1 pixels (severities 1-5; tiny-imagenet: 0.5, 0.75, 1, 1.25, 1.5),
    edges extended by their nearest pixel.

    Not random. Arguments and result as `gaussian_noise`.

    >>> image = np.zeros((1, 9, 9, 1), np.uint8); image[0, 4, 4] = 255
    >>> int(gaussian_blur(image, severity=5)[0, 4, 4, 0])  # the peak spreads: 255 / (2 pi) for sigma 1
    41
    """
    sigma = float(severity_parameter("gaussian_blur", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return _gaussian(block.astype(np.float32) / 255.0, sigma)

    return corrupt_images(images, transform, seed=seed, layout=layout, name="gaussian_blur", table=table)


def glass_shuffle(images: np.ndarray, offsets: np.ndarray, max_delta: int) -> np.ndarray:
    """One round of Hendrycks' glass-blur shuffle on a chunk, exactly as their loop runs it, vectorised.

    Their loop visits (h, w) for h from H - max_delta down to max_delta + 1 and, within a row, w from W - max_delta
    down to max_delta + 1, and copies the current value of (h + dy, w + dx) into (h, w) (their swap of numpy views).
    A source not yet visited (above, left, or outside the visited block) still holds its value from the start of the
    round; a source visited earlier (below, or right in the same row: possible when max_delta > 1, dx or dy = +1)
    already holds its new value, itself copied from its own source. Each pixel therefore takes the round-start value
    at the end of its chain of earlier-visited sources, found here by pointer jumping (log2 of the longest chain
    steps). With max_delta 1 (dx, dy in {-1, 0}) no source is visited earlier: one gather.

    Args:
        images: uint8 (n, H, W, C).
        offsets: int (n, H - 2 max_delta, W - 2 max_delta, 2) per visited pixel (top-left first), its (dx, dy).
        max_delta: their c[1]: offsets lie in [-max_delta, max_delta).

    Returns:
        The shuffled uint8 images (a new array).

    >>> image = np.arange(25, dtype=np.uint8).reshape(1, 5, 5, 1)
    >>> moves = np.zeros((1, 1, 1, 2), np.int64); moves[..., 0] = -2  # (3, 3) copies (3, 1): 16
    >>> int(glass_shuffle(image, moves, 2)[0, 3, 3, 0])
    16
    """
    n, height, width, channels = images.shape
    inner_h, inner_w = max(height - 2 * max_delta, 0), max(width - 2 * max_delta, 0)
    out = images.copy()
    if n == 0 or inner_h == 0 or inner_w == 0:
        return out
    first = max_delta + 1  # the top-left visited pixel; the last visited
    rows = np.arange(first, first + inner_h)[None, :, None] + offsets[..., 1]
    cols = np.arange(first, first + inner_w)[None, None, :] + offsets[..., 0]
    if max_delta > 1:  # with offsets -1 and 0 no source is visited before its target
        # A source visited before its target: inside the visited block, and below it or right of it in its row.
        earlier = ((rows >= first) & (rows < first + inner_h) & (cols >= first) & (cols < first + inner_w)
                   & ((offsets[..., 1] > 0) | ((offsets[..., 1] == 0) & (offsets[..., 0] > 0)))).reshape(n, -1)
        own = np.broadcast_to(np.arange(inner_h * inner_w), earlier.shape)
        pointer = np.where(earlier, ((rows - first) * inner_w + (cols - first)).reshape(n, -1), own)
        while True:  # each step doubles how far along its chain every pointer reaches; chain ends point at themselves
            jumped = np.take_along_axis(pointer, pointer, axis=1)
            if np.array_equal(jumped, pointer):
                break
            pointer = jumped
        rows = np.take_along_axis(rows.reshape(n, -1), pointer, axis=1).reshape(rows.shape)
        cols = np.take_along_axis(cols.reshape(n, -1), pointer, axis=1).reshape(cols.shape)
    out[:, first : first + inner_h, first : first + inner_w] = images[np.arange(n)[:, None, None], rows, cols]
    return out


@register_corruption("glass_blur", version="1")
def glass_blur(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Glass blur: Gaussian blur (sigma), rounded to uint8, `iterations` rounds of local pixel shuffling, Gaussian blur
    again; (sigma, max_delta, iterations) = (0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)
    (tiny-imagenet: (0.1, 1, 1), (0.5, 1, 1), (0.6, 1, 2), (0.7, 2, 1), (0.9, 2, 2)).

    Hendrycks' shuffle visits the pixels (h, w) from row and column size - max_delta down to max_delta + 1 (bottom
    right first) and draws dx, dy with np.random.randint(-max_delta, max_delta); its swap
    `x[h, w], x[h', w'] = x[h', w'], x[h, w]` of numpy views copies x[h', w'] into x[h, w] and leaves x[h', w'] as it
    was (`glass_shuffle`). Each round draws one uniform u per visited pixel and axis, offset floor(2 max_delta u) -
    max_delta. Arguments and result as `gaussian_noise`.

    >>> glass_blur(np.full((1, 8, 8, 3), 60, np.uint8), severity=5).max()
    np.uint8(60)
    """
    sigma, max_delta, iterations = severity_parameter("glass_blur", severity, table)

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, height, width, _ = block.shape
        inner_h, inner_w = max(height - 2 * max_delta, 0), max(width - 2 * max_delta, 0)
        # Per image: for each round and visited pixel, dx and dy (np.random.randint(-max_delta, max_delta)).
        draws = rng.random((n, iterations, inner_h, inner_w, 2))
        offsets = (draws * (2 * max_delta)).astype(np.int8) - np.int8(max_delta)  # floor: the draws are >= 0
        shuffled = to_uint8(_gaussian(block.astype(np.float32) / 255.0, sigma))
        for round_ in range(iterations):
            shuffled = glass_shuffle(shuffled, offsets[:, round_], max_delta)
        return _gaussian(shuffled.astype(np.float32) / 255.0, sigma)

    return corrupt_images(images, transform, seed=seed, layout=layout, name="glass_blur", table=table)


def motion_kernel(radius: float, sigma: float, angles: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ImageMagick's MotionBlurImage kernel (what Wand's motion_blur calls): width 2 ceil(radius) + 1 taps weighted
    exp(-i^2 / (2 sigma^2)), i = 0 ... width - 1, normalised, the i-th at i pixels along the angle (degrees, clockwise
    from the +x axis: rows grow downwards), each offset rounded as ImageMagick does (ceil(v - 0.5)). One-sided: a pixel
    is averaged with those behind it along the direction.

    Args:
        radius: ImageMagick's radius (pixels, not counting the centre).
        sigma: the Gaussian's standard deviation along the line.
        angles: one direction in degrees, or an array of them (one kernel each).

    Returns:
        (weights (width,), row offsets, column offsets), the offsets (width,) for one angle, (n, width) for n.

    >>> weights, rows, cols = motion_kernel(6, 1, 0)
    >>> len(weights), rows.tolist()[:3], cols.tolist()[:3]
    (13, [0, 0, 0], [0, 1, 2])
    """
    width = int(2 * math.ceil(radius) + 1)
    steps = np.arange(width, dtype=np.float64)
    weights = np.exp(-(steps**2) / (2.0 * sigma * sigma)) / (math.sqrt(2 * math.pi) * sigma)
    weights /= weights.sum()
    radians = math.pi * np.asarray(angles, dtype=np.float64)[..., None] / 180.0
    point_x, point_y = width * np.sin(radians), width * np.cos(radians)
    length = np.hypot(point_x, point_y)
    cols = np.ceil(steps * point_y / length - 0.5).astype(np.int64)
    rows = np.ceil(steps * point_x / length - 0.5).astype(np.int64)
    return weights, rows, cols


@register_corruption("motion_blur", version="1")
def motion_blur(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Motion blur: `motion_kernel(radius, sigma, angle)` with (radius, sigma) = (6, 1), (6, 1.5), (6, 2), (8, 2),
    (9, 2.5) for severities 1-5 (tiny-imagenet: (10, 1), (10, 1.5), (10, 2), (10, 2.5), (12, 3)) and, per image, an
    angle uniform in [-45, 45) degrees from the seed; pixels beyond the edge repeat the edge (ImageMagick's default
    virtual pixels).

    Hendrycks' script runs ImageMagick through Wand on a PNG of the image; this is the same kernel in numpy, each
    image shifted whole per tap (the images of a chunk that share a tap's offset together). Taps lighter than
    `MOTION_TAP_FLOOR` are skipped. Arguments and result as `gaussian_noise`.

    >>> motion_blur(np.full((2, 8, 8, 3), 200, np.uint8), severity=3, seed=1).min()
    np.uint8(200)
    """
    radius, sigma = severity_parameter("motion_blur", severity, table)
    reach = int(2 * math.ceil(radius))  # the farthest tap

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        height, width = block.shape[1:3]
        weights, rows, cols = motion_kernel(radius, sigma, rng.uniform(-45.0, 45.0, len(block)))
        padded = np.pad(block.astype(np.float32) / 255.0, ((0, 0), (reach, reach), (reach, reach), (0, 0)),
                        mode="edge")
        out = np.zeros(block.shape, dtype=np.float32)
        for tap in np.flatnonzero(weights >= MOTION_TAP_FLOOR):
            key = (rows[:, tap] + reach) * (2 * reach + 1) + cols[:, tap] + reach
            order = np.argsort(key, kind="stable")
            for group in np.split(order, np.flatnonzero(np.diff(key[order])) + 1):
                top, left = int(rows[group[0], tap]) + reach, int(cols[group[0], tap]) + reach
                out[group] += np.float32(weights[tap]) * padded[group, top : top + height, left : left + width]
        return out

    return corrupt_images(images, transform, seed=seed, layout=layout, name="motion_blur", table=table, weight=2)


def zoom_factors(severity: int, table: str = DEFAULT_TABLE) -> np.ndarray:
    """Hendrycks' zoom factors: np.arange(1, c, 0.01) as their script writes it (7, 12, 16, 21, 26 factors for
    severities 1-5; floating point puts 1.06 and 1.11 inside the first two). Both tables have the same factors.

    >>> zoom_factors(1)[[0, -1]].round(2).tolist()
    [1.0, 1.06]
    """
    return np.arange(1, severity_parameter("zoom_blur", severity, table), 0.01)


def _zoom_axis(size: int, factor: float) -> np.ndarray:
    """(size, size) weights of their clipped_zoom along one axis: crop ceil(size / factor) centred pixels, zoom them
    by `factor` with scipy.ndimage.zoom (order 1: the weights are its own, from zooming an identity), keep the
    centred `size`."""
    crop = int(np.ceil(size / factor))
    top = (size - crop) // 2
    zoomed = ndi.zoom(np.eye(crop), (factor, 1), order=1)
    trim = (zoomed.shape[0] - size) // 2
    weights = np.zeros((size, size))
    weights[:, top : top + crop] = zoomed[trim : trim + size]
    return weights


@functools.lru_cache(maxsize=16)
def zoom_operator(height: int, width: int, severity: int, table: str = DEFAULT_TABLE) -> scipy.sparse.csr_matrix:
    """The zoom blur of one (height, width) channel as one sparse (HW, HW) matrix on the row-major pixels: the mean of
    the image and its clipped zooms. Every zoom is linear and separable (row weights x column weights), so the
    average is a single matrix, applied to a whole chunk as one sparse product.

    >>> zoom_operator(32, 32, 1).shape
    (1024, 1024)
    """
    factors = zoom_factors(severity, table)
    total = scipy.sparse.identity(height * width, format="csr")
    for factor in factors:
        rows = scipy.sparse.csr_matrix(_zoom_axis(height, factor))
        total = total + scipy.sparse.kron(rows, scipy.sparse.csr_matrix(_zoom_axis(width, factor)), format="csr")
    return scipy.sparse.csr_matrix((total / (len(factors) + 1)).astype(np.float32))


@register_corruption("zoom_blur", version="1")
def zoom_blur(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Zoom blur: the mean of the image and its centre zoomed by each of `zoom_factors(severity)` (bilinear, cropped
    back to the image's size), as Hendrycks' clipped_zoom with scipy.ndimage.zoom(order=1) makes them.

    Not random. A non-square image is cropped and zoomed per axis (their code assumes square images). Arguments and
    result as `gaussian_noise`.

    >>> zoom_blur(np.full((1, 8, 8, 3), 33, np.uint8), severity=5).max()
    np.uint8(33)
    """
    level = check_severity(severity)

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, height, width, channels = block.shape
        operator = zoom_operator(height, width, level, table)
        columns = (block.astype(np.float32) / 255.0).transpose(1, 2, 0, 3).reshape(height * width, n * channels)
        return np.asarray(operator @ columns).reshape(height, width, n, channels).transpose(2, 0, 1, 3)

    return corrupt_images(images, transform, seed=seed, layout=layout, name="zoom_blur", table=table)
