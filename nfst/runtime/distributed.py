"""torch.distributed helpers: a stage started by torchrun splits its work across ranks; without
torchrun they reduce to a single process. And the seeds of every random stream, so that each
unit of work, on whichever rank, draws the random numbers it alone draws.

Random streams. Every generator a run seeds (torch's global one, a ``torch.Generator``) takes
its seed from one derivation, :func:`item_seed`: a hash (BLAKE2b) of the run's seed and a key,
a tuple of stream names and indices. A stream is named at its root (:func:`stream_seed`, the
names in :data:`STREAMS`) and its items are indexed below it: ``item_seed(stream_seed(s,
"test"), i)`` for the test draws' minibatch i. Two different keys, or one key under two
different seeds (training seeds s and s + 1), give unrelated seeds: no arithmetic on seeds
(``s + 1``, ``s + 7919 · rank``) that another stream could reach, and no two streams share
random numbers except by a collision of 63-bit hashes (for a million seeds, a chance of
about 5 · 10⁻⁸). tests/runtime/test_item_seed.py checks that the seeds of every stream of a
run with several training seeds are all distinct, and tests/experiment/test_streams.py that the
code seeds its generators from its own streams only. The streams of a run of seed ``s``:

- ``s`` itself chooses the data subsets and the minibatch order (``nfst.fst.dataset``, Python's
  ``random`` seeded with text), and is the training seed of a sampler's first training run;
  training run j has training seed s + j, each with its own streams below;
- ``stream_seed(t, "init")`` seeds torch's generator before a model of training seed ``t`` is
  made (its initial parameters); ``stream_seed(t, "train")`` before it trains (dropout), and
  ``stream_seed(t, "train", rank)`` the training loop's generator on each rank;
  ``stream_seed(t, "early_stopping")`` a sampler's validation draws during training;
- ``stream_seed(s, "scorer")`` is the scorer's training seed ``t`` (its own streams as above),
  so that the scorer and the first training run of a sampler share nothing;
- ``stream_seed(t, "validation")`` and ``"test"`` the evaluation's draws on validation and
  test pairs (``nfst.evaluate.whole``; minibatch i: ``item_seed(stream, i)``, as the
  validation for early stopping), ``stream_seed(t, "log_z")`` its log Ẑ (stage g's minibatch
  i: ``(g, i)``);
- ``stream_seed(s, "smc")`` the SMC evaluation's (``nfst.evaluate.smc``: ``(method, M, run,
  minibatch)``, and ``("lookahead", "init")``, ``("lookahead", "fit")`` and ``("abstract",)``
  for the proposals it fits);
- ``stream_seed(t, "triples")`` the triples drawn from the scorer for training seed ``t``'s
  sleep training (``nfst.train.triples``), shared by every sampler of that seed.

The n-gram's fit is exact: its training loop seeds a generator (from seed 0) that it never
draws from.
"""

from __future__ import annotations

import hashlib
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


def item_seed(seed: int, *key: int | str) -> int:
    """The seed, in [0, 2⁶³), of the item ``key`` (indices and names) of ``seed``'s work: the
    first 8 bytes of the BLAKE2b hash of ``seed`` and ``key``, each element written with its
    type, so that keys differ as tuples do (``(1,)``, ``(0, 1)`` and ``("1",)`` are three
    keys) and a seed's items are unrelated to another seed's (module docstring)."""
    text = repr((int(seed), *(k if isinstance(k, str) else int(k) for k in key)))
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


STREAMS = (
    "init",
    "train",
    "early_stopping",
    "scorer",
    "validation",
    "test",
    "log_z",
    "smc",
    "triples",
)
"""The named random streams of a seed (:func:`stream_seed`; module docstring)."""


def stream_seed(seed: int, stream: str, *index: int) -> int:
    """The seed of the named random stream of ``seed`` (one of :data:`STREAMS`), or of its item
    ``index``: ``item_seed(seed, stream, *index)``."""
    if stream not in STREAMS:
        raise ValueError(f"unknown random stream {stream!r}; the streams are {STREAMS}")
    return item_seed(seed, stream, *index)
