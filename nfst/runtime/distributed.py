"""torch.distributed helpers: a stage started by torchrun splits its work across ranks; without
torchrun they reduce to a single process."""

from __future__ import annotations

from typing import Sequence, TypeVar

import torch

T = TypeVar("T")


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


def shared_map(fn, items: Sequence[T]) -> list:
    """[fn(item) for item in items], item i computed by rank i mod world and the results
    gathered, in order, on every rank (a collective). ``fn`` must not depend on which rank
    runs it (seed any randomness from the item), so the result does not depend on the number
    of processes. Results travel pickled: keep them on the CPU."""
    rank, world = rank_and_world()
    mine = [fn(item) for item in items[rank::world]]
    if world == 1:
        return mine
    shards = from_every_rank(mine, world)
    return [shards[i % world][i // world] for i in range(len(items))]


def item_seed(seed: int, *index: int) -> int:
    """A seed for one item of work, from the run's seed and the item's indices (each below
    P = 1,000,003); the first item (all indices 0) gets ``seed`` itself, so one item alone draws
    what a single generator seeded with ``seed`` would.

    The indices are read as one number in base P, mix = Σ_j i_j P^(n−j), so leading zeros do
    not count: ``item_seed(s, 0, 1) == item_seed(s, 1)``. Otherwise two index tuples of up to
    three indices never share a seed (mix < P³ < 2⁶³ and 7,919,007 is odd, so mix ↦ seed is
    one-to-one modulo 2⁶³). A stream of items that must not reuse another's seeds therefore
    leads its indices with a stream number ≥ 1: ``(stream, i)`` is disjoint from every ``(i,)``
    and from ``(stream′, i)`` for any other stream′."""
    mix = 0
    for i in index:
        mix = mix * 1_000_003 + i
    return (seed + 7_919_007 * mix) % 2 ** 63


STREAMS = {"validation": 1, "test": 2, "log_z": 3, "triples": 4}
"""Named random streams of a seed (:func:`stream_seed`), one per use of held-out pairs."""


def stream_seed(seed: int, stream: str) -> int:
    """The seed of the named random stream of ``seed`` (:data:`STREAMS`). A stream's minibatch
    i then draws from ``item_seed(stream_seed(seed, name), i)``, which no other stream and no
    ``item_seed(seed, j)`` of training's validation (with fewer than 1,000,003² minibatches)
    reaches: the stream index sits two digits (base 1,000,003) above any minibatch index."""
    return item_seed(seed, STREAMS[stream], 0, 0)
