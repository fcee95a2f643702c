"""Data-parallel training with torch.distributed (DDP), started by `torchrun --nproc_per_node=N -m adacal train ...`.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; with WORLD_SIZE > 1 the trainer joins the
process group (gloo on CPU, nccl on CUDA), each rank trains on its shard of every batch order, and validation/test
logits are computed shard by shard and gathered in rank order so that every rank sees the same logits, computes the
same metrics and makes the same AdaFocal γ-update. Rank 0 alone writes files and reports progress.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from adacal.errors import InputError


@dataclass
class DistributedContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    initialised: bool = False

    @classmethod
    def from_env(cls) -> DistributedContext:
        try:
            world_size = int(os.environ.get("WORLD_SIZE", "1"))
            rank = int(os.environ.get("RANK", "0"))
            local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
        except ValueError:
            raise InputError("Expected the RANK, WORLD_SIZE and LOCAL_RANK environment variables to be "
                             "integers.") from None
        return cls(rank=rank, world_size=max(world_size, 1), local_rank=local_rank)

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def device_for(self, device: torch.device) -> torch.device:
        """Each rank uses its own GPU (LOCAL_RANK); CPU ranks share the CPU."""
        if self.enabled and device.type == "cuda":
            torch.cuda.set_device(self.local_rank)
            return torch.device("cuda", self.local_rank)
        return device

    def setup(self, device: torch.device) -> None:
        if not self.enabled or self.initialised:
            return
        import torch.distributed as dist

        if not dist.is_available():
            raise InputError("Expected torch.distributed to be available for a run with WORLD_SIZE > 1.")
        if not dist.is_initialized():
            dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
        self.initialised = True

    def teardown(self) -> None:
        if self.initialised:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
            self.initialised = False

    def barrier(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def broadcast(self, value: Any) -> Any:
        """Rank 0's value on every rank."""
        if not self.enabled:
            return value
        import torch.distributed as dist

        holder = [value]
        dist.broadcast_object_list(holder, src=0)
        return holder[0]

    def any(self, flag: bool, device: torch.device) -> bool:
        """True on every rank when `flag` is true on any rank (so that all ranks stop together)."""
        if not self.enabled:
            return flag
        import torch.distributed as dist

        tensor = torch.tensor([1.0 if flag else 0.0], device=device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return bool(tensor.item() > 0)

    def broadcast_buffers(self, module: torch.nn.Module) -> None:
        """Copy rank 0's buffers (batch-norm running statistics) to every rank, in place.

        DDP broadcasts them at the start of each training forward, but every rank then updates its own copy from its
        own batch, so after training they differ by a batch. Call this before an evaluation whose shards are computed
        on different ranks, so that every shard is scored by the model rank 0 checkpoints.
        """
        if not self.enabled:
            return
        import torch.distributed as dist

        for buffer in module.buffers():
            dist.broadcast(buffer, src=0)

    def shard_bounds(self, n: int) -> tuple[int, int]:
        """Contiguous [start, stop) of `n` items for this rank; concatenating shards in rank order gives 0..n."""
        per_rank, extra = divmod(n, self.world_size)
        start = self.rank * per_rank + min(self.rank, extra)
        return start, start + per_rank + (1 if self.rank < extra else 0)

    def gather_arrays(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """Concatenate each array's shards from all ranks, in rank order."""
        if not self.enabled:
            return arrays
        import torch.distributed as dist

        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, arrays)
        return tuple(np.concatenate([part[i] for part in gathered]) for i in range(len(arrays)))

    def gather_objects(self, value: Any) -> list[Any]:
        if not self.enabled:
            return [value]
        import torch.distributed as dist

        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, value)
        return gathered

    def wrap_model(self, model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        if not self.enabled:
            return model
        from torch.nn.parallel import DistributedDataParallel

        if device.type == "cuda":
            return DistributedDataParallel(model, device_ids=[device.index])
        return DistributedDataParallel(model)
