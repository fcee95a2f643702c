"""Weather corruptions of Hendrycks & Dietterich (2019) that numpy can make: fog, from their diamond-square plasma
fractal. (Snow and frost are not made: `UNAVAILABLE` says why.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.data.corruptions.suite import corrupt_images, register_corruption, severity_parameter
from adacal.data.corruptions.tables import DEFAULT_TABLE


def plasma_draws(mapsize: int) -> int:
    """How many uniform numbers one `plasma_fractal` map of side `mapsize` uses (1023 for 32).

    >>> plasma_draws(32)
    1023
    """
    total, step = 0, mapsize
    while step >= 2:
        total += 3 * (mapsize // step) ** 2
        step //= 2
    return total


def plasma_fractal(uniforms: np.ndarray, *, mapsize: int = 32, wibble_decay: float = 3) -> np.ndarray:
    """Hendrycks' plasma_fractal (diamond-square, after FLHerne's mapgen) for a batch of maps at once.

    Their per-map code with a leading batch axis: the same steps, rolls and `wibble` schedule (100, divided by
    `wibble_decay` per level, the random term wibble * U(-wibble, wibble)), each map normalised to [0, 1]. The random
    numbers come in as uniforms in [0, 1), one row per map, consumed in their order (per level: the squares, then the
    two diamond sets).

    Args:
        uniforms: (n, plasma_draws(mapsize)) numbers in [0, 1).
        mapsize: the side, a power of two.
        wibble_decay: the roughness: larger decays give smoother maps.

    Returns:
        float64 (n, mapsize, mapsize) maps in [0, 1].

    >>> maps = plasma_fractal(np.random.default_rng(0).random((2, 1023)))
    >>> maps.shape, float(maps.min()), float(maps.max())
    ((2, 32, 32), 0.0, 1.0)
    """
    if mapsize < 2 or mapsize & (mapsize - 1):
        raise ValueError(f"mapsize must be a power of two, got {mapsize}")
    n = len(uniforms)
    maps = np.empty((n, mapsize, mapsize), dtype=np.float64)
    maps[:, 0, 0] = 0
    step, wibble, used = mapsize, 100.0, 0

    def wibbled_mean(total: np.ndarray) -> np.ndarray:
        nonlocal used
        count = total.shape[1] * total.shape[2]
        draws = uniforms[:, used : used + count].reshape(total.shape)
        used += count
        return total / 4 + wibble * (-wibble + (2 * wibble) * draws)  # np.random.uniform(-wibble, wibble)

    while step >= 2:
        half = step // 2
        corners = maps[:, 0:mapsize:step, 0:mapsize:step]
        squares = corners + np.roll(corners, shift=-1, axis=1)
        squares += np.roll(squares, shift=-1, axis=2)
        maps[:, half:mapsize:step, half:mapsize:step] = wibbled_mean(squares)
        centres = maps[:, half:mapsize:step, half:mapsize:step]
        corners = maps[:, 0:mapsize:step, 0:mapsize:step]
        left = (centres + np.roll(centres, 1, axis=1)) + (corners + np.roll(corners, -1, axis=2))
        maps[:, 0:mapsize:step, half:mapsize:step] = wibbled_mean(left)
        top = (centres + np.roll(centres, 1, axis=2)) + (corners + np.roll(corners, -1, axis=1))
        maps[:, half:mapsize:step, 0:mapsize:step] = wibbled_mean(top)
        step //= 2
        wibble /= wibble_decay
    maps -= maps.min(axis=(1, 2), keepdims=True)
    return maps / maps.max(axis=(1, 2), keepdims=True)


@register_corruption("fog", version="1")
def fog(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Fog: x + c * plasma, rescaled by max(x) / (max(x) + c), with (c, wibble decay) = (0.2, 3), (0.5, 3),
    (0.75, 2.5), (1, 2), (1.5, 1.75) for severities 1-5 (tiny-imagenet: (0.4, 3), (0.7, 3), (1, 2.5), (1.5, 2),
    (2, 1.75)); one fractal per image (grey: the same on every channel).

    The fractal's side is the smallest power of two holding the image (32 for CIFAR, 64 for Tiny-ImageNet, as
    theirs), cut to the image.
    Arguments and result as `gaussian_noise`.

    >>> foggy = fog(np.full((2, 32, 32, 3), 100, np.uint8), severity=5, seed=0)
    >>> bool(foggy.std() > 10)
    True
    """
    strength, decay = severity_parameter("fog", severity, table)

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, height, width, _ = block.shape
        mapsize = 1 << max(1, int(np.ceil(np.log2(max(height, width)))))
        maps = plasma_fractal(rng.random((n, plasma_draws(mapsize))), mapsize=mapsize, wibble_decay=decay)
        values = block.astype(np.float32) / 255.0
        peak = values.max(axis=(1, 2, 3), keepdims=True)
        values += (strength * maps[:, :height, :width, None]).astype(np.float32)
        return values * (peak / (peak + np.float32(strength)))

    return corrupt_images(images, transform, seed=seed, layout=layout, name="fog", table=table)
