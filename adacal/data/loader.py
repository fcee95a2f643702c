"""BatchLoader: batches of a Split on a device, with the sampling of DistributedSampler and augmentation on tensors.

No worker processes, no PIL: a whole batch of uint8 images is indexed, moved to the device (a quarter of the bytes of
float32), augmented there as one tensor, converted to float32 and normalised. When the device is not the CPU, an
in-memory split is copied to the device once (CIFAR-10 train: 138 MB) so each batch is a device-side index.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from adacal.data.augment import augment_batch, crop_and_flip, draw_epoch_augmentation
from adacal.data.base import Dataset, Split, check_int, normalization
from adacal.errors import InputError

PRELOAD_LIMIT_BYTES = 4 << 30
_SEED_LIMIT = 1 << 63


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The one reading of --device: 'auto' (or None) → CUDA when available, else CPU; 'cpu'; 'cuda' or 'cuda:N'
    (or a torch.device of those), checked against the CUDA devices torch finds.

    CUDA always comes back with its index ('cuda' → 'cuda:<current device>'): tensors live on 'cuda:0', and
    torch.device('cuda') != torch.device('cuda:0'), so an index-less device made every batch look like it still had to
    be moved (and pinned, which fails for GPU memory)."""
    if device is None:
        name = "auto"
    elif isinstance(device, torch.device):
        name = str(device)
    else:
        name = device.strip().lower() if isinstance(device, str) else device
    if name == "auto":
        return torch.device("cuda", _current_cuda_index()) if torch.cuda.is_available() else torch.device("cpu")
    if name == "cpu" or (isinstance(name, str) and name.startswith("cpu:") and name[4:].isascii()
                           and name[4:].isdigit()):
        return torch.device("cpu")  # torch.device("cpu", 0) names the one CPU device too
    if not isinstance(name, str) or not name.startswith("cuda"):
        raise InputError(f"Expected --device to be auto, cpu or cuda, got {name!r}.")
    try:
        resolved = torch.device(name)
    except (RuntimeError, TypeError):
        raise InputError(f"Expected --device to be auto, cpu, cuda or cuda:N, got {name!r}.") from None
    if resolved.type != "cuda":
        raise InputError(f"Expected --device to be auto, cpu or cuda, got {name!r}.")
    if not torch.cuda.is_available():
        raise InputError(f"Expected a CUDA device for --device {name}, but torch finds none (use --device cpu).")
    if resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise InputError(
            f"Expected --device {name} to name one of the {torch.cuda.device_count()} CUDA device(s), got {name}."
        )
    return resolved if resolved.index is not None else torch.device("cuda", _current_cuda_index())


def _current_cuda_index() -> int:
    """The current CUDA device, without starting CUDA to ask (torch.cuda.current_device() initialises it, which would
    happen in every torchrun rank before it picks its own GPU). torch.cuda.set_device initialises CUDA too, so a
    process where CUDA is not initialised has set no device and is on device 0."""
    return torch.cuda.current_device() if torch.cuda.is_initialized() else 0


class BatchLoader:
    """Iterate over (inputs, labels) batches of `split` on `device`.

    - Order: with `shuffle`, a permutation from `torch.Generator().manual_seed(seed + epoch)` (call `set_epoch(e)`
      each epoch, as with DistributedSampler; iterating twice in one epoch repeats the same batches). With
      `world_size > 1` the permutation is padded by repeating its start to a multiple of world_size (or truncated when
      `drop_last`), and rank r takes every world_size-th index from position r — DistributedSampler's partition.
      `drop_last` also drops a final incomplete batch.
    - Images (uint8 N, C, H, W): with `augment`, random crop with `dataset.extra["augment_padding"]` (4) zero pixels
      and horizontal flip, drawn from a CPU generator seeded from (seed, epoch, rank); then float32
      `(x / 255 - mean) / std` with the normalisation of `dataset` (a Dataset or a registered name — pass the
      *training* dataset to feed OOD images the way the model saw its data; None only scales to [0, 1]);
      `channels_last` memory format if asked. `preload` (default: when the device is not the CPU and the split is
      in memory, up to 4 GiB) copies the split to the device once.
    - Vectors → float32; text token ids → int64 (augment is ignored for both).
    """

    def __init__(
        self,
        split: Split,
        batch_size: int,
        *,
        dataset: Dataset | str | None,
        shuffle: bool = False,
        augment: bool = False,
        device: str | torch.device = "cpu",
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        channels_last: bool = False,
        preload: bool | None = None,
    ) -> None:
        check_int("batch_size", batch_size, minimum=1)
        check_int("seed", seed, minimum=0)
        if seed >= _SEED_LIMIT:  # seed + epoch seeds a torch.Generator, which takes 64 bits
            raise InputError(f"Expected seed below 2**63, got {seed}.")
        check_int("world_size", world_size, minimum=1)
        check_int("rank", rank, minimum=0)
        if rank >= world_size:
            raise InputError(f"Expected rank in [0, {world_size - 1}] for world_size {world_size}, got {rank}.")
        if len(split) == 0:
            raise InputError("Expected a split with at least one sample, got an empty split.")
        self.split = split
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.drop_last = bool(drop_last)
        self.channels_last = bool(channels_last)
        self.device = resolve_device(device)
        self.epoch = 0

        inputs = split.inputs
        self.kind = _kind_of(inputs)
        self.augment = bool(augment) and self.kind == "image"
        self.padding = int(dataset.extra.get("augment_padding", 4)) if isinstance(dataset, Dataset) else 4
        self._scale = self._shift = None
        if (self.kind == "vector" and len(inputs.shape) == 4 and dataset is not None
                and normalization(dataset) is not None):
            # Float (N, C, H, W) batches would pass through as "vectors": neither normalised nor augmented, silently.
            raise InputError(
                f"Expected uint8 images (N, C, H, W) for the normalisation of {getattr(dataset, 'name', dataset)}, got "
                f"{inputs.dtype} of shape {tuple(inputs.shape)}: convert 0-255 values with .round().to(torch.uint8), "
                "or pass dataset=None for inputs already normalised."
            )
        if self.kind == "image":
            stats = normalization(dataset) if dataset is not None else None
            channels = inputs.shape[1]
            mean, std = stats if stats is not None else ((0.0,) * channels, (1.0,) * channels)
            if len(mean) != channels:
                raise InputError(
                    f"Expected images with {len(mean)} channels for the normalisation of "
                    f"{getattr(dataset, 'name', dataset)}, got images of shape {tuple(inputs.shape[1:])}."
                )
            mean_t = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
            std_t = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
            # (x / 255 - mean) / std  ==  x * scale + shift
            self._scale = (1.0 / (255.0 * std_t)).to(self.device)
            self._shift = (-mean_t / std_t).to(self.device)

        if preload is None:
            preload = (
                self.device.type != "cpu"
                and isinstance(inputs, torch.Tensor)
                and inputs.numel() * inputs.element_size() <= PRELOAD_LIMIT_BYTES
            )
        self._on_device = bool(preload) and isinstance(inputs, torch.Tensor)
        if self._on_device:
            self._inputs = inputs.to(self.device)
            self._labels = split.labels.to(self.device)
        else:
            self._inputs = inputs
            self._labels = split.labels

    # ------------------------------------------------------------------------------------------------- sampling

    def set_epoch(self, epoch: int) -> None:
        epoch = check_int("epoch", epoch, minimum=0)
        if epoch >= _SEED_LIMIT:
            raise InputError(f"Expected epoch below 2**63, got {epoch}.")
        self.epoch = epoch

    def indices(self) -> torch.Tensor:
        """The sample indices this rank visits this epoch, in order (int64, CPU)."""
        n = len(self.split)
        if self.shuffle:
            generator = torch.Generator()
            generator.manual_seed(self.seed + self.epoch)
            order = torch.randperm(n, generator=generator)
        else:
            order = torch.arange(n)
        if self.world_size > 1:
            if self.drop_last:
                order = order[: (n // self.world_size) * self.world_size]
            else:
                total = math.ceil(n / self.world_size) * self.world_size
                pad = total - n
                if pad:
                    repeats = math.ceil(pad / n)
                    order = torch.cat([order, order.repeat(repeats)[:pad]])
            order = order[self.rank :: self.world_size]
        return order

    @property
    def num_samples(self) -> int:
        n = len(self.split)
        if self.world_size == 1:
            return n
        return n // self.world_size if self.drop_last else math.ceil(n / self.world_size)

    def __len__(self) -> int:
        if self.drop_last:
            return self.num_samples // self.batch_size
        return math.ceil(self.num_samples / self.batch_size)

    def augmentation_generator(self) -> torch.Generator:
        """The CPU generator this epoch's augmentation draws from (seeded from seed, epoch and rank)."""
        state = np.random.SeedSequence([self.seed, self.epoch, self.rank, 0xADA]).generate_state(1, dtype=np.uint64)[0]
        generator = torch.Generator()
        generator.manual_seed(int(state) & ((1 << 63) - 1))
        return generator

    # ---------------------------------------------------------------------------------------------------- batches

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return self.iterate()

    def iterate(self, start_batch: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """This epoch's batches after the first `start_batch` ones: exactly the tail of a full iteration (the
        augmentation draws of the skipped batches are made too, cheap, so the others are those a full pass draws).

        The order and the epoch's augmentation parameters reach the device in one copy each per epoch: no batch waits
        on a copy from host memory (which, not pinned, would wait for the GPU to finish its queued work)."""
        n_batches = len(self)
        check_int("start_batch", start_batch, minimum=0)
        if start_batch > n_batches:
            raise InputError(f"Expected start_batch in [0, {n_batches}] for {n_batches} batches, got {start_batch}.")
        order = self.indices()
        params = None
        if self.augment:
            sizes = [len(order[b * self.batch_size : (b + 1) * self.batch_size]) for b in range(n_batches)]
            params = tuple(self._to_device(t) for t in draw_epoch_augmentation(
                sizes, padding=self.padding, generator=self.augmentation_generator()))
        if self._on_device:
            order = self._to_device(order)
        for b in range(start_batch, n_batches):
            window = slice(b * self.batch_size, (b + 1) * self.batch_size)
            index = order[window]
            inputs = self._fetch(self._inputs, index)
            labels = self._fetch(self._labels, index)
            yield self.prepare(inputs, params=None if params is None else tuple(t[window] for t in params)), labels

    def _to_device(self, tensor: torch.Tensor) -> torch.Tensor:
        """A CPU tensor on this loader's device: pinned and copied without blocking on CUDA."""
        if self.device.type == "cuda":
            return tensor.pin_memory().to(self.device, non_blocking=True)
        return tensor.to(self.device)

    def _fetch(self, source: Any, index: torch.Tensor) -> torch.Tensor:
        batch = source.index_select(0, index) if isinstance(source, torch.Tensor) else source[index]
        if batch.device != self.device:  # also for "cuda" against a tensor already on "cuda:0"
            if self.device.type == "cuda" and batch.device.type == "cpu":  # only host memory can be pinned
                batch = batch.pin_memory().to(self.device, non_blocking=True)
            else:
                batch = batch.to(self.device)
        return batch

    def prepare(
        self, inputs: torch.Tensor, generator: torch.Generator | None = None, *,
        params: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """A raw batch (already on the device) → model input: augment (when on; with the (top, left, flips) `params`
        when given, else drawn from `generator`), float32, normalised."""
        if self.kind == "text":
            return inputs.long()
        if self.kind == "vector":
            return inputs.float()
        if self.augment:
            if params is not None:
                inputs = crop_and_flip(inputs, *params, padding=self.padding)
            else:
                inputs = augment_batch(inputs, generator=generator, padding=self.padding)
        memory_format = torch.channels_last if self.channels_last else torch.contiguous_format
        images = inputs.to(dtype=torch.float32, memory_format=memory_format)
        return images.mul_(self._scale).add_(self._shift)


def _kind_of(inputs: Any) -> str:
    dtype = inputs.dtype
    if dtype == torch.uint8:
        if len(inputs.shape) != 4:
            raise InputError(f"Expected uint8 images of shape (N, C, H, W), got shape {tuple(inputs.shape)}.")
        return "image"
    if dtype.is_floating_point:
        return "vector"
    if dtype in (torch.int64, torch.int32, torch.int16):
        return "text"
    raise InputError(f"Expected uint8 images, float vectors or int64 token ids, got dtype {dtype}.")
