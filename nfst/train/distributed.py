"""torch.distributed helpers: a loop started by torchrun splits its work across ranks; without
torchrun they reduce to a single process."""

from __future__ import annotations

import torch


def rank_and_world() -> tuple[int, int]:
    """(rank, world size); (0, 1) unless torch.distributed was initialised (torchrun)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def from_every_rank(value, world: int) -> list:
    """``value`` as every process has it, in rank order (a collective: all ranks call it)."""
    if world == 1:
        return [value]
    values = [None] * world
    torch.distributed.all_gather_object(values, value)
    return values
