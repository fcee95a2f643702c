"""Noise corruptions of Hendrycks & Dietterich (2019): gaussian, shot (Poisson), impulse (salt and pepper) and speckle
noise, with their CIFAR or Tiny-ImageNet severities (`adacal.data.corruptions.tables`).

Each works on x = image / 255 per pixel and channel, independently, and returns uint8 by `to_uint8` (clip to [0, 1],
round to the nearest grey level; their script truncates). The noise is drawn in HWC order from one
numpy default_rng(seed) per call, so NHWC and NCHW input give the same bytes (`suite` module docstring).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.data.corruptions.suite import corrupt_images, register_corruption, severity_parameter
from adacal.data.corruptions.tables import DEFAULT_TABLE


@register_corruption("gaussian_noise", version="1")
def gaussian_noise(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Gaussian noise: x + N(0, sigma^2), sigma = 0.04, 0.06, 0.08, 0.09, 0.10 for severities 1-5 (CIFAR table;
    tiny-imagenet: 0.04, 0.08, 0.12, 0.15, 0.18).

    Deterministic for a seed; labels are not touched (pass only the images). Every generator takes these arguments.

    Args:
        images: uint8 (N, C, H, W) or (N, H, W, C), C = 1 or 3, numpy or torch.
        severity: 1 to 5.
        seed: seeds the noise.
        layout: resolves an ambiguous shape (auto: channels last when the last axis is 1 or 3, else channels first).
        table: the severity table, "cifar" or "tiny-imagenet" (then each image is saved as JPEG at quality 85 last,
            as Tiny-ImageNet-C's files were); `severity_table_for` picks a dataset's.

    Returns:
        uint8 images of the same layout and type.

    >>> noisy = gaussian_noise(np.full((2, 8, 8, 3), 128, np.uint8), severity=5, seed=0)
    >>> noisy.dtype, noisy.shape, bool((noisy != 128).any())
    (dtype('uint8'), (2, 8, 8, 3), True)
    """
    sigma = np.float32(severity_parameter("gaussian_noise", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        values = block.astype(np.float32) / 255.0
        values += rng.standard_normal(values.shape, dtype=np.float32) * sigma
        return values

    return corrupt_images(images, transform, seed=seed, layout=layout, name="gaussian_noise", table=table)


@register_corruption("shot_noise", version="1")
def shot_noise(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Shot noise: Poisson(x * c) / c with c = 500, 250, 100, 75, 50 events per unit intensity (severities 1-5;
    tiny-imagenet: 250, 100, 50, 30, 15).

    Arguments and result as `gaussian_noise`.

    >>> shot_noise(np.zeros((1, 4, 4, 3), np.uint8), severity=5).max()  # no light, no events
    np.uint8(0)
    """
    rate = float(severity_parameter("shot_noise", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return rng.poisson(block / 255.0 * rate) / rate

    return corrupt_images(images, transform, seed=seed, layout=layout, name="shot_noise", table=table)


@register_corruption("impulse_noise", version="1")
def impulse_noise(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Impulse (salt and pepper) noise: each value is replaced with probability `amount` = 0.01, 0.02, 0.03, 0.05, 0.07
    (severities 1-5; tiny-imagenet: 0.01, 0.02, 0.05, 0.08, 0.14), by 0 or 255 with equal chance, as scikit-image's
    random_noise(mode="s&p", amount=c) does.

    One uniform draw per value decides both (below amount / 2: 0; below amount: 255). Arguments and result as
    `gaussian_noise`.

    >>> noisy = impulse_noise(np.full((4, 32, 32, 3), 128, np.uint8), severity=5)
    >>> round(float(np.isin(noisy, (0, 255)).mean()), 2)
    0.07
    """
    amount = float(severity_parameter("impulse_noise", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        draw = rng.random(block.shape)
        out = block.copy()
        out[draw < amount / 2] = 0
        out[(draw >= amount / 2) & (draw < amount)] = 255
        return out

    return corrupt_images(images, transform, seed=seed, layout=layout, name="impulse_noise", table=table)


@register_corruption("speckle_noise", version="1")
def speckle_noise(
    images: Any, *, severity: int, seed: int = 0, layout: str = "auto", table: str = DEFAULT_TABLE
) -> Any:
    """Speckle noise: x + x * N(0, c^2), c = 0.06, 0.10, 0.12, 0.16, 0.20 (severities 1-5; tiny-imagenet: 0.15, 0.2,
    0.25, 0.3, 0.35).

    Arguments and result as `gaussian_noise`.

    >>> speckle_noise(np.zeros((1, 4, 4, 3), np.uint8), severity=5).max()  # multiplicative: black stays black
    np.uint8(0)
    """
    scale = np.float32(severity_parameter("speckle_noise", severity, table))

    def transform(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        values = block.astype(np.float32) / 255.0
        values += values * (rng.standard_normal(values.shape, dtype=np.float32) * scale)
        return values

    return corrupt_images(images, transform, seed=seed, layout=layout, name="speckle_noise", table=table)
