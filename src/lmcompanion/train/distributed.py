"""DDP through torchrun: gloo on CPU, nccl on CUDA. Without torchrun's environment everything is one process."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..errors import ConfigError


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    local_rank: int = 0
    world: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world > 1


def setup(device_type: str) -> Dist:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = "nccl" if device_type == "cuda" else "gloo"
        if device_type == "cuda":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=backend)
    return Dist(rank, local_rank, world)


def check_accumulation(grad_accum: int, d: Dist) -> None:
    """Every process takes grad_accum / world of each step's micro-batches, so the world must divide it."""
    if grad_accum % d.world:
        teardown(d)
        raise ConfigError(
            f"train.grad_accum={grad_accum} must be a multiple of the number of processes ({d.world}): the global "
            f"batch is batch_size * grad_accum; e.g. --set train.grad_accum={d.world * max(1, grad_accum // d.world)}"
        )


def teardown(d: Dist) -> None:
    if d.enabled and dist.is_initialized():
        dist.destroy_process_group()


def barrier(d: Dist) -> None:
    if d.enabled:
        dist.barrier()


def all_reduce_sum(t: torch.Tensor, d: Dist) -> torch.Tensor:
    if d.enabled:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t
