"""Slow, obviously-correct re-implementations of Hendrycks' make_cifar_c.py and make_tinyimagenet_c.py (the same
functions; the parameters come in as arguments, the image size from the image), one image (and mostly one pixel) at a
time, for the reference tests. They follow their code line by line where it is numpy/scipy, and the documented
behaviour of the OpenCV / scikit-image / ImageMagick / colorsys calls where it is not; random numbers come in from
outside (drawn from the same generator, in the same order, as adacal's vectorised code draws them), so a reference
and a generator can be compared value for value. Each returns float values on the 0-255 scale, unrounded.
"""

from __future__ import annotations

import colorsys
import io
import math

import numpy as np
import scipy.ndimage as ndi
from PIL import Image


def reflect101(i: int, n: int) -> int:
    """OpenCV's BORDER_REFLECT_101 (gfedcb|abcdefgh|gfedcba) for one index."""
    while i < 0 or i >= n:
        i = -i if i < 0 else 2 * n - 2 - i
    return i


def clamp(i: int, n: int) -> int:
    return min(max(i, 0), n - 1)


def shot_noise(images, c, rng):
    return [np.clip(rng.poisson(image / 255.0 * c) / c, 0, 1) * 255 for image in images]


def speckle_noise(images, c, rng):
    out = []
    for image in images:
        x = image / 255.0
        noise = rng.standard_normal(image.shape, dtype=np.float32).astype(np.float64)
        out.append(np.clip(x + x * (noise * c), 0, 1) * 255)
    return out


def disk(radius, alias_blur):
    """Their disk(): an aliased disk on a 17 x 17 grid, normalised, then cv2.GaussianBlur(ksize 3, sigma)."""
    size = 17
    aliased = np.zeros((size, size))
    for y in range(size):
        for x in range(size):
            if (x - 8) ** 2 + (y - 8) ** 2 <= radius**2:
                aliased[y, x] = 1
    aliased /= aliased.sum()
    g = [math.exp(-(i * i) / (2 * alias_blur**2)) for i in (-1, 0, 1)]
    g = [v / sum(g) for v in g]
    out = np.zeros_like(aliased)
    for y in range(size):
        for x in range(size):
            out[y, x] = sum(g[dy + 1] * g[dx + 1] * aliased[reflect101(y + dy, size), reflect101(x + dx, size)]
                            for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    return out


def defocus_blur(image, radius, alias_blur):
    """cv2.filter2D(channel, -1, disk) per channel: correlation, anchor at the centre, reflect-101 borders."""
    kernel = disk(radius, alias_blur)
    taps = [(i - 8, j - 8, kernel[i, j]) for i in range(17) for j in range(17) if kernel[i, j] != 0]
    height, width, channels = image.shape
    x = image / 255.0
    out = np.zeros(image.shape)
    for r in range(height):
        for c in range(width):
            for di, dj, w in taps:
                out[r, c] += w * x[reflect101(r + di, height), reflect101(c + dj, width)]
    return np.clip(out, 0, 1) * 255


def gaussian_filter(x, sigma):
    """skimage.filters.gaussian(x, sigma, multichannel=True): scipy's kernel (radius int(4 sigma + 0.5), weights
    exp(-t^2 / 2 sigma^2) normalised), rows then columns, edges repeated ("nearest")."""
    radius = int(4 * sigma + 0.5)
    weights = [math.exp(-0.5 * t * t / sigma**2) for t in range(-radius, radius + 1)]
    weights = [w / sum(weights) for w in weights]
    height, width = x.shape[:2]
    rows = np.zeros(x.shape)
    for r in range(height):
        for t, w in zip(range(-radius, radius + 1), weights):
            rows[r] += w * x[clamp(r + t, height)]
    out = np.zeros(x.shape)
    for c in range(width):
        for t, w in zip(range(-radius, radius + 1), weights):
            out[:, c] += w * rows[:, clamp(c + t, width)]
    return out


def glass_blur_shuffle(image, sigma, iterations, offsets, max_delta=1):
    """Their glass_blur up to the second blur, with the dx, dy of each visited pixel (h, w) from
    offsets[i, h - max_delta - 1, w - max_delta - 1] (what their np.random.randint(-max_delta, max_delta) drew): the
    first blur (scipy, as skimage calls it) rounded to uint8, then their loop (the 32 or 64 of their code is the
    image's size) and their swap statement verbatim."""
    x = np.rint(np.clip(ndi.gaussian_filter(image / 255.0, sigma=(sigma, sigma, 0), mode="nearest"), 0, 1)
                * 255).astype(np.uint8)
    height, width = x.shape[:2]
    first = max_delta + 1
    for i in range(iterations):
        for h in range(height - max_delta, max_delta, -1):
            for w in range(width - max_delta, max_delta, -1):
                dx, dy = (int(v) for v in offsets[i, h - first, w - first])
                h_prime, w_prime = h + dy, w + dx
                # swap (as their code writes it: with numpy views, a copy)
                x[h, w], x[h_prime, w_prime] = x[h_prime, w_prime], x[h, w]
    return x


def motion_blur(image, radius, sigma, angle):
    """ImageMagick's MotionBlurImage as its source reads: width 2 ceil(radius) + 1, weights exp(-i^2 / 2 sigma^2)
    normalised, tap i at (ceil(i sin(angle) - 0.5), ceil(i cos(angle) - 0.5)) (rows, columns), edge pixels repeated."""
    width = 2 * math.ceil(radius) + 1
    weights = [math.exp(-(i * i) / (2 * sigma * sigma)) for i in range(width)]
    weights = [w / sum(weights) for w in weights]
    theta = math.radians(angle)
    offsets = [(math.ceil(i * math.sin(theta) - 0.5), math.ceil(i * math.cos(theta) - 0.5)) for i in range(width)]
    height, wide = image.shape[:2]
    x = image / 255.0
    out = np.zeros(image.shape)
    for r in range(height):
        for c in range(wide):
            for w, (dr, dc) in zip(weights, offsets):
                out[r, c] += w * x[clamp(r + dr, height), clamp(c + dc, wide)]
    return np.clip(out, 0, 1) * 255


def clipped_zoom(img, zoom_factor):
    """Their clipped_zoom, verbatim."""
    h = img.shape[0]
    ch = int(np.ceil(h / zoom_factor))
    top = (h - ch) // 2
    img = ndi.zoom(img[top:top + ch, top:top + ch], (zoom_factor, zoom_factor, 1), order=1)
    trim_top = (img.shape[0] - h) // 2
    return img[trim_top:trim_top + h, trim_top:trim_top + h]


def zoom_blur(image, factors):
    x = (image / 255.0).astype(np.float32)
    out = np.zeros_like(x)
    for zoom_factor in factors:
        out += clipped_zoom(x, zoom_factor)
    return np.clip((x + out) / (len(factors) + 1), 0, 1) * 255


def plasma_fractal(uniforms, mapsize=32, wibbledecay=3):
    """Their plasma_fractal verbatim, np.random.uniform replaced by reading `uniforms` in order."""
    draws = iter(uniforms)
    maparray = np.empty((mapsize, mapsize), dtype=np.float64)
    maparray[0, 0] = 0
    stepsize = mapsize
    wibble = 100

    def uniform(low, high, shape):
        values = np.array([next(draws) for _ in range(int(np.prod(shape)))]).reshape(shape)
        return low + (high - low) * values

    def wibbledmean(array):
        return array / 4 + wibble * uniform(-wibble, wibble, array.shape)

    def fillsquares():
        cornerref = maparray[0:mapsize:stepsize, 0:mapsize:stepsize]
        squareaccum = cornerref + np.roll(cornerref, shift=-1, axis=0)
        squareaccum += np.roll(squareaccum, shift=-1, axis=1)
        maparray[stepsize // 2:mapsize:stepsize, stepsize // 2:mapsize:stepsize] = wibbledmean(squareaccum)

    def filldiamonds():
        size = maparray.shape[0]
        drgrid = maparray[stepsize // 2:size:stepsize, stepsize // 2:size:stepsize]
        ulgrid = maparray[0:size:stepsize, 0:size:stepsize]
        ldrsum = drgrid + np.roll(drgrid, 1, axis=0)
        lulsum = ulgrid + np.roll(ulgrid, -1, axis=1)
        ltsum = ldrsum + lulsum
        maparray[0:size:stepsize, stepsize // 2:size:stepsize] = wibbledmean(ltsum)
        tdrsum = drgrid + np.roll(drgrid, 1, axis=1)
        tulsum = ulgrid + np.roll(ulgrid, -1, axis=0)
        ttsum = tdrsum + tulsum
        maparray[stepsize // 2:size:stepsize, 0:size:stepsize] = wibbledmean(ttsum)

    while stepsize >= 2:
        fillsquares()
        filldiamonds()
        stepsize //= 2
        wibble /= wibbledecay

    maparray -= maparray.min()
    return maparray / maparray.max()


def fog(image, strength, decay, uniforms, mapsize=32):
    """Their fog; `mapsize` is their plasma_fractal's default (32 in make_cifar_c.py, 64 in make_tinyimagenet_c.py)
    and the crop [:32, :32] / [:64, :64] is the image's size."""
    x = image / 255.0
    max_val = x.max()
    height, width = image.shape[:2]
    x = x + strength * plasma_fractal(uniforms, mapsize=mapsize, wibbledecay=decay)[:height, :width][..., np.newaxis]
    return np.clip(x * max_val / (max_val + strength), 0, 1) * 255


def hsv_map(image, change):
    """Each pixel through colorsys (Python's own RGB <-> HSV): (h, s, v) -> change(h, s, v)."""
    out = np.zeros(image.shape)
    for r in range(image.shape[0]):
        for c in range(image.shape[1]):
            h, s, v = colorsys.rgb_to_hsv(*(image[r, c] / 255.0))
            out[r, c] = colorsys.hsv_to_rgb(*change(h, s, v))
    return np.clip(out, 0, 1) * 255


def contrast(image, c):
    x = image / 255.0
    out = np.zeros(x.shape)
    for channel in range(x.shape[2]):
        mean = sum(float(v) for v in x[:, :, channel].ravel()) / x[:, :, channel].size
        out[:, :, channel] = (x[:, :, channel] - mean) * c + mean
    return np.clip(out, 0, 1) * 255


def box_resize_axis(values, out_size):
    """PIL's BOX resampling along the first axis (Resample.c): output x takes the mean of the input pixels j whose
    (j + 0.5 - centre) / filterscale lies in (-0.5, 0.5], centre = (x + 0.5) * in / out."""
    in_size = values.shape[0]
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = 0.5 * filterscale
    out = np.zeros((out_size, *values.shape[1:]))
    for x in range(out_size):
        centre = (x + 0.5) * scale
        lo, hi = max(int(centre - support + 0.5), 0), min(int(centre + support + 0.5), in_size)
        weights = [1.0 if -0.5 < (j - centre + 0.5) / filterscale <= 0.5 else 0.0 for j in range(lo, hi)]
        out[x] = sum(w * values[j] for w, j in zip(weights, range(lo, hi))) / sum(weights)
    return out


def pixelate(image, c):
    """Box down to int(32 c) (columns, then rows, as PIL does), then box back up; unrounded between passes."""
    height, width = image.shape[:2]
    small = (int(width * c), int(height * c))
    x = box_resize_axis(box_resize_axis(image.astype(np.float64).transpose(1, 0, 2), small[0]).transpose(1, 0, 2),
                        small[1])
    return box_resize_axis(box_resize_axis(x.transpose(1, 0, 2), width).transpose(1, 0, 2), height)


def affine_from_points(src, dst):
    """cv2.getAffineTransform: the 2 x 3 M with M @ (x, y, 1) = dst for the three point pairs (a 6 x 6 solve)."""
    a = np.zeros((6, 6))
    b = np.zeros(6)
    for i in range(3):
        a[2 * i] = [src[i][0], src[i][1], 1, 0, 0, 0]
        a[2 * i + 1] = [0, 0, 0, src[i][0], src[i][1], 1]
        b[2 * i], b[2 * i + 1] = dst[i]
    return np.linalg.solve(a, b).reshape(2, 3)


def invert_affine(m):
    """cv2.invertAffineTransform."""
    d = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
    d = 1.0 / d if d != 0 else 0.0
    a11, a22, a12, a21 = m[1, 1] * d, m[0, 0] * d, -m[0, 1] * d, -m[1, 0] * d
    return np.array([[a11, a12, -a11 * m[0, 2] - a12 * m[1, 2]], [a21, a22, -a21 * m[0, 2] - a22 * m[1, 2]]])


def warp_affine(x, m):
    """cv2.warpAffine(x, M, borderMode=BORDER_REFLECT_101), bilinear, in exact arithmetic (OpenCV quantises the
    sub-pixel position to 1/32): dst(x, y) = src(M^-1 (x, y))."""
    inverse = invert_affine(m)
    height, width = x.shape[:2]
    out = np.zeros(x.shape)
    for r in range(height):
        for c in range(width):
            sx, sy = inverse @ np.array([c, r, 1.0])
            c0, r0 = math.floor(sx), math.floor(sy)
            fc, fr = sx - c0, sy - r0
            for dr, wr in ((0, 1 - fr), (1, fr)):
                for dc, wc in ((0, 1 - fc), (1, fc)):
                    out[r, c] += wr * wc * x[reflect101(r0 + dr, height), reflect101(c0 + dc, width)]
    return out


def elastic_transform(image, severity_parameters, uniforms):
    """Their elastic_transform with IMSIZE the image's size (32 in make_cifar_c.py, 64 in make_tinyimagenet_c.py);
    `uniforms`: 6 for the affine, then the dx and dy fields."""
    imsize = image.shape[0]
    alpha, sigma, affine = (imsize * v for v in severity_parameters)
    image = np.array(image, dtype=np.float32) / 255.0
    shape = image.shape
    shape_size = shape[:2]
    center_square = np.float32(shape_size) // 2
    square_size = min(shape_size) // 3
    pts1 = np.float32([center_square + square_size,
                       [center_square[0] + square_size, center_square[1] - square_size],
                       center_square - square_size])
    pts2 = pts1 + (-affine + 2 * affine * uniforms[:6].reshape(pts1.shape)).astype(np.float32)
    m = affine_from_points(pts1, pts2)
    image = warp_affine(image, m)
    field = shape[0] * shape[1]
    dx = (ndi.gaussian_filter(-1 + 2 * uniforms[6:6 + field].reshape(shape_size), sigma, mode="reflect", truncate=3)
          * alpha).astype(np.float32)
    dy = (ndi.gaussian_filter(-1 + 2 * uniforms[6 + field:].reshape(shape_size), sigma, mode="reflect", truncate=3)
          * alpha).astype(np.float32)
    dx, dy = dx[..., np.newaxis], dy[..., np.newaxis]
    x, y, z = np.meshgrid(np.arange(shape[1]), np.arange(shape[0]), np.arange(shape[2]))
    indices = np.reshape(y + dy, (-1, 1)), np.reshape(x + dx, (-1, 1)), np.reshape(z, (-1, 1))
    return np.clip(ndi.map_coordinates(image, indices, order=1, mode="reflect").reshape(shape), 0, 1) * 255


def jpeg_save(image, quality=85):
    """Their Tiny-ImageNet-C save, `Image.fromarray(np.uint8(img)).save(path, quality=85, optimize=True)` (a .JPEG
    path), read back; `image` already uint8."""
    buffer = io.BytesIO()
    Image.fromarray(image[..., 0] if image.shape[-1] == 1 else image).save(buffer, format="JPEG", quality=quality,
                                                                          optimize=True)
    buffer.seek(0)
    return np.asarray(Image.open(buffer)).reshape(image.shape)
