"""CIFAR-style training augmentation on whole uint8 batches, on whatever device they live: random crop from the image
zero-padded by `padding` pixels on each side, then a horizontal flip with probability 1/2 (torchvision's
RandomCrop(32, padding=4) + RandomHorizontalFlip, without a per-image Python loop or PIL).

The random draws come from a `torch.Generator` on the CPU (so a seed gives the same augmentation on any device) in a
fixed order per batch: top offsets, left offsets, flip coins. `draw_epoch_augmentation` makes those same per-batch
draws for a whole epoch at once, so a loader moves them to the device in one copy instead of three a batch (each copy
from host memory waits for the GPU).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def draw_augmentation(
    n: int, *, padding: int = 4, flip: bool = True, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(top, left, flips) for n images: offsets in [0, 2*padding] (int64) and flip flags (bool), on the CPU."""
    top = torch.randint(0, 2 * padding + 1, (n,), generator=generator)
    left = torch.randint(0, 2 * padding + 1, (n,), generator=generator)
    if flip:
        flips = torch.rand(n, generator=generator) < 0.5
    else:
        flips = torch.zeros(n, dtype=torch.bool)
    return top, left, flips


def draw_epoch_augmentation(
    batch_sizes: list[int], *, padding: int = 4, flip: bool = True, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The draws of `draw_augmentation` for consecutive batches of `batch_sizes`, made batch by batch in that order
    (so the values are those a per-batch loop would draw), concatenated: (top, left, flips) of length
    sum(batch_sizes), on the CPU. Batch b's parameters are the slice of its samples.

    Example:
        >>> import torch
        >>> from adacal.data.augment import draw_augmentation, draw_epoch_augmentation
        >>> top, left, flips = draw_epoch_augmentation([3, 2], generator=torch.Generator().manual_seed(0))
        >>> generator = torch.Generator().manual_seed(0)
        >>> first, second = draw_augmentation(3, generator=generator), draw_augmentation(2, generator=generator)
        >>> torch.equal(top[3:], second[0]) and torch.equal(left[3:], second[1]) and torch.equal(flips[3:], second[2])
        True
    """
    draws = [draw_augmentation(int(size), padding=padding, flip=flip, generator=generator) for size in batch_sizes]
    if not draws:
        return torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.bool)
    top, left, flips = (torch.cat(parts) for parts in zip(*draws))
    return top, left, flips


def crop_and_flip(
    images: torch.Tensor, top: torch.Tensor, left: torch.Tensor, flips: torch.Tensor, *, padding: int = 4
) -> torch.Tensor:
    """Crop each image of (N, C, H, W) at (top[i], left[i]) of its zero-padded copy, flipped where flips[i].

    One pad and one `gather` for the whole batch. Output: same dtype, shape (N, C, H, W), contiguous NCHW.
    """
    n, channels, height, width = images.shape
    device = images.device
    top, left, flips = top.to(device), left.to(device), flips.to(device)
    padded = F.pad(images, (padding, padding, padding, padding)) if padding else images
    padded_width = width + 2 * padding
    rows = top[:, None] + torch.arange(height, device=device)  # (N, H)
    columns = torch.arange(width, device=device)
    columns = left[:, None] + torch.where(flips[:, None], width - 1 - columns, columns)  # (N, W)
    flat = (rows[:, :, None] * padded_width + columns[:, None, :]).reshape(n, 1, height * width)
    source = padded.reshape(n, channels, -1)
    out = torch.gather(source, 2, flat.expand(n, channels, height * width))
    return out.reshape(n, channels, height, width)


def augment_batch(
    images: torch.Tensor, *, generator: torch.Generator | None = None, padding: int = 4, flip: bool = True
) -> torch.Tensor:
    """Random shifted crop (zero padding) + horizontal flip of a (N, C, H, W) batch; draws from `generator`."""
    top, left, flips = draw_augmentation(images.shape[0], padding=padding, flip=flip, generator=generator)
    return crop_and_flip(images, top, left, flips, padding=padding)
