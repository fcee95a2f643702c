"""Augmentation on batch tensors and the BatchLoader (order, partition across ranks, normalisation, determinism)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.data import (
    BatchLoader,
    Dataset,
    Split,
    augment_batch,
    crop_and_flip,
    draw_augmentation,
    load_dataset,
    resolve_device,
)
from adacal.errors import InputError

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


def image_dataset(n=50, seed=0, size=32) -> Dataset:
    rng = np.random.default_rng(seed)
    images = torch.from_numpy(rng.integers(0, 256, (n, 3, size, size), dtype=np.uint8))
    split = Split(images, torch.arange(n) % 10)
    return Dataset("cifar10", "image", 10, [str(i) for i in range(10)], (3, size, size), split, split, split,
                   extra={"mean": MEAN, "std": STD, "augment_padding": 4})


def reference_crop_flip(images: np.ndarray, top, left, flips, padding=4) -> np.ndarray:
    """Slow, obvious per-image version: zero-pad, slice the window, mirror it."""
    out = np.empty_like(images)
    h, w = images.shape[2:]
    for i, image in enumerate(images):
        padded = np.pad(image, ((0, 0), (padding, padding), (padding, padding)))
        crop = padded[:, top[i] : top[i] + h, left[i] : left[i] + w]
        out[i] = crop[:, :, ::-1] if flips[i] else crop
    return out


def test_crop_and_flip_matches_the_per_image_reference():
    images = image_dataset(64).train.inputs
    generator = torch.Generator().manual_seed(7)
    top, left, flips = draw_augmentation(64, padding=4, generator=generator)
    fast = crop_and_flip(images, top, left, flips, padding=4)
    slow = reference_crop_flip(images.numpy(), top.numpy(), left.numpy(), flips.numpy())
    assert fast.shape == images.shape and fast.dtype == torch.uint8
    assert np.array_equal(fast.numpy(), slow)


def test_augment_batch_draws_in_the_documented_order_and_is_deterministic():
    images = image_dataset(32).train.inputs
    out1 = augment_batch(images, generator=torch.Generator().manual_seed(3))
    out2 = augment_batch(images, generator=torch.Generator().manual_seed(3))
    out3 = augment_batch(images, generator=torch.Generator().manual_seed(4))
    assert torch.equal(out1, out2) and not torch.equal(out1, out3)
    top, left, flips = draw_augmentation(32, generator=torch.Generator().manual_seed(3))
    assert torch.equal(out1, crop_and_flip(images, top, left, flips))


def test_offsets_cover_the_range_and_flips_are_fair():
    top, left, flips = draw_augmentation(20000, padding=4, generator=torch.Generator().manual_seed(0))
    assert set(top.tolist()) == set(range(9)) and set(left.tolist()) == set(range(9))
    assert abs(flips.float().mean().item() - 0.5) < 0.015
    # centred, unflipped draws give back the image unchanged
    images = image_dataset(4).train.inputs
    zeros = torch.full((4,), 4)
    assert torch.equal(crop_and_flip(images, zeros, zeros, torch.zeros(4, dtype=torch.bool)), images)


def test_loader_normalises_like_the_formula_and_supports_channels_last():
    data = image_dataset(20)
    loader = BatchLoader(data.train, 8, dataset=data, shuffle=False, augment=False, device="cpu")
    inputs, labels = next(iter(loader))
    expected = ((data.train.inputs[:8].float() / 255 - torch.tensor(MEAN).view(1, 3, 1, 1))
                / torch.tensor(STD).view(1, 3, 1, 1))
    assert inputs.dtype == torch.float32 and torch.allclose(inputs, expected, atol=1e-5)
    assert torch.equal(labels, data.train.labels[:8])
    cl = BatchLoader(data.train, 8, dataset=data, shuffle=False, augment=False, device="cpu", channels_last=True)
    inputs_cl, _ = next(iter(cl))
    assert inputs_cl.is_contiguous(memory_format=torch.channels_last) and torch.allclose(inputs_cl, expected, atol=1e-5)
    # a dataset name gives the same normalisation (how OOD images are fed with the training set's statistics)
    by_name, _ = next(iter(BatchLoader(data.train, 8, dataset="cifar10", device="cpu")))
    assert torch.allclose(by_name, expected, atol=1e-6)


def test_loader_augmentation_is_reproducible_per_seed_and_epoch():
    data = image_dataset(40)

    def batches(seed, epoch):
        loader = BatchLoader(data.train, 16, dataset=data, shuffle=True, augment=True, device="cpu", seed=seed)
        loader.set_epoch(epoch)
        return [(x.clone(), y.clone()) for x, y in loader]

    a, b = batches(0, 1), batches(0, 1)
    assert all(torch.equal(x1, x2) and torch.equal(y1, y2) for (x1, y1), (x2, y2) in zip(a, b))
    c = batches(0, 2)
    assert not torch.equal(a[0][1], c[0][1])  # another epoch, another order
    d = batches(1, 1)
    assert not torch.equal(a[0][0], d[0][0])
    # augmented batches are crops of the same images: shape kept, padding zeros appear after normalisation
    x = a[0][0]
    assert x.shape == (16, 3, 32, 32)
    zero_level = (-torch.tensor(MEAN) / torch.tensor(STD)).view(1, 3, 1, 1)
    assert torch.isclose(x, zero_level.expand_as(x), atol=1e-5).any()


def test_loader_augmentation_uses_its_generator():
    data = image_dataset(10)
    loader = BatchLoader(data.train, 10, dataset=data, shuffle=False, augment=True, device="cpu", seed=5)
    loader.set_epoch(3)
    inputs, _ = next(iter(loader))
    top, left, flips = draw_augmentation(10, generator=loader.augmentation_generator())
    expected = crop_and_flip(data.train.inputs, top, left, flips).float()
    expected = (expected / 255 - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
    assert torch.allclose(inputs, expected, atol=1e-5)


@pytest.mark.parametrize("n, world_size, drop_last",
                         [(100, 4, False), (103, 4, False), (103, 4, True), (7, 3, False), (2, 5, False)])
def test_ranks_partition_each_epoch(n, world_size, drop_last):
    split = Split(torch.arange(n, dtype=torch.float32)[:, None], torch.arange(n))
    seen = []
    for rank in range(world_size):
        loader = BatchLoader(split, 4, dataset=None, shuffle=True, device="cpu", seed=11, rank=rank,
                             world_size=world_size, drop_last=drop_last)
        loader.set_epoch(2)
        labels = [y for _, y in loader]
        rank_labels = torch.cat(labels) if labels else torch.empty(0, dtype=torch.long)
        assert len(labels) == len(loader)
        if not drop_last:
            assert len(rank_labels) == loader.num_samples
        seen.append(rank_labels)
    everything = torch.cat(seen)
    counts = torch.bincount(everything, minlength=n)
    if drop_last:
        assert counts.max() <= 1 and counts.sum() >= n - world_size - world_size * 3
    else:
        per_rank = -(-n // world_size)
        assert counts.min() >= 1 and counts.sum() == per_rank * world_size
        assert (counts > 1).sum() <= per_rank * world_size - n  # only the padding repeats
    if n % world_size == 0 and not drop_last:
        assert torch.equal(counts, torch.ones(n, dtype=torch.long))  # exactly once


def test_partition_matches_distributed_sampler():
    from torch.utils.data.distributed import DistributedSampler

    n = 103
    for rank in range(4):
        sampler = DistributedSampler(range(n), num_replicas=4, rank=rank, shuffle=True, seed=5)
        sampler.set_epoch(7)
        loader = BatchLoader(Split(torch.zeros(n, 1), torch.arange(n)), 1000, dataset=None, shuffle=True,
                             seed=5, rank=rank, world_size=4)
        loader.set_epoch(7)
        assert loader.indices().tolist() == list(sampler)


def test_vectors_and_text_pass_through():
    vectors = Split(torch.rand(10, 4, dtype=torch.float64), torch.arange(10))
    x, _ = next(iter(BatchLoader(vectors, 5, dataset=None, augment=True)))
    assert x.dtype == torch.float32 and x.shape == (5, 4)
    tokens = Split(torch.randint(0, 50, (10, 7)), torch.arange(10))
    x, _ = next(iter(BatchLoader(tokens, 5, dataset=None, augment=True)))
    assert x.dtype == torch.int64 and torch.equal(x, tokens.inputs[:5])


def test_loader_argument_errors():
    split = Split(torch.zeros(4, 2), torch.arange(4))
    with pytest.raises(InputError, match="rank"):
        BatchLoader(split, 2, dataset=None, rank=2, world_size=2)
    with pytest.raises(InputError, match="batch_size"):
        BatchLoader(split, 0, dataset=None)
    with pytest.raises(InputError, match="device"):
        BatchLoader(split, 2, dataset=None, device="tpu:9")
    gray = Split(torch.zeros(4, 1, 8, 8, dtype=torch.uint8), torch.arange(4))
    with pytest.raises(InputError, match="3 channels"):
        BatchLoader(gray, 2, dataset="cifar10")


def test_len_and_drop_last():
    split = Split(torch.zeros(10, 2), torch.arange(10))
    assert len(BatchLoader(split, 4, dataset=None)) == 3
    loader = BatchLoader(split, 4, dataset=None, drop_last=True)
    assert len(loader) == 2 and sum(len(y) for _, y in loader) == 8


def test_loader_over_a_real_dataset_split():
    digits = load_dataset("digits")
    loader = BatchLoader(digits.train, 256, dataset=digits, shuffle=True)
    assert sum(len(y) for _, y in loader) == len(digits.train)


@pytest.mark.parametrize("start", [0, 1, 2, 3])
def test_iterate_from_a_batch_yields_exactly_the_tail_of_a_full_epoch(start):
    """Continuing an interrupted epoch: batches start+1.. are bit-identical (order and augmentation) to a full pass."""
    data = image_dataset(45)  # batches of 16, 16, 13
    loader = BatchLoader(data.train, 16, dataset=data, shuffle=True, augment=True, device="cpu", seed=5)
    loader.set_epoch(3)
    full = [(x.clone(), y.clone()) for x, y in loader]
    tail = [(x.clone(), y.clone()) for x, y in loader.iterate(start_batch=start)]
    assert len(tail) == len(full) - start
    for (x1, y1), (x2, y2) in zip(full[start:], tail):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)


def test_iterate_refuses_a_start_batch_past_the_epoch():
    data = image_dataset(45)
    loader = BatchLoader(data.train, 16, dataset=data, shuffle=True, augment=True, device="cpu")
    with pytest.raises(InputError, match=r"start_batch in \[0, 3\].*got 4"):
        next(loader.iterate(start_batch=4))
    with pytest.raises(InputError, match="start_batch"):
        next(loader.iterate(start_batch=-1))


def test_cuda_devices_resolve_with_their_index(monkeypatch):
    """Tensors on a GPU report 'cuda:N'; an index-less 'cuda' compares unequal to it, so every batch looked like it
    still had to move (and was pinned, which GPU memory refuses: `adacal train` on a GPU failed at its first batch)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert resolve_device("auto") == torch.device("cuda", 1)
    assert resolve_device(None) == torch.device("cuda", 1)
    assert resolve_device("cuda") == torch.device("cuda", 1)
    assert resolve_device(torch.device("cuda")) == torch.device("cuda", 1)
    assert resolve_device("cuda:0") == torch.device("cuda", 0)


def test_resolving_cuda_does_not_start_cuda(monkeypatch):
    """Until CUDA is initialised (torch.cuda.set_device initialises it) the current device is 0; asking torch would
    initialise CUDA in every torchrun rank before each rank picks its own GPU."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: pytest.fail("CUDA was asked (and so initialised)"))
    assert resolve_device("auto") == torch.device("cuda", 0)
    assert resolve_device("cuda") == torch.device("cuda", 0)


class _PlacedBatch:
    """A stand-in for a batch tensor on any device (this machine may have no GPU): records pinning and moves."""

    def __init__(self, device: str):
        self.device, self.pinned, self.moved_to = torch.device(device), False, None

    def pin_memory(self):
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors can be pinned")
        self.pinned = True
        return self

    def to(self, device, non_blocking=False):
        self.moved_to = torch.device(device)
        return self


@pytest.mark.parametrize("source, pinned, moved_to", [
    ("cuda:0", False, None),      # already where it goes: untouched
    ("cuda:1", False, "cuda:0"),  # another GPU: moved, not pinned
    ("cpu", True, "cuda:0"),      # host memory: pinned, then copied without blocking
])
def test_batches_are_pinned_only_from_host_memory(source, pinned, moved_to):
    split = Split(torch.zeros(4, 3), torch.zeros(4, dtype=torch.long))
    loader = BatchLoader(split, 2, dataset=None, device="cpu")
    loader.device = torch.device("cuda", 0)
    batch = _PlacedBatch(source)
    assert loader._fetch({"all": batch}, "all") is batch
    assert batch.pinned is pinned
    assert batch.moved_to == (None if moved_to is None else torch.device(moved_to))
