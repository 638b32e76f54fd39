"""Sleep training's minibatches (``sampler.sleep_steps``, ``sampler.sleep_share``): the lattices
of triples drawn from the scorer (``nfst.train.triples``), compiled a chunk at a time through
the dataset compiler's process pool and on-disk cache as training reaches them (the triples
themselves may be drawn as it reaches them: :class:`TripleBlocks`), and the minibatch of a
step that holds triples."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

from ..dp.batch import LatticeBatch
from ..fst.compile import CompileOptions
from ..fst.dataset import compile_dataset
from ..fst.lattice import Lattice
from ..fst.mark_strings import path_arcs
from ..fst.mfst import MarkedFST
from .triples import Triple


class TripleBlocks(Sequence):
    """``length`` triples, fetched a block of ``size`` at a time when first read:
    ``block(k)`` gives triples k·size .. (k+1)·size − 1 (a run draws them then, see
    ``RunSamplers.triples``). Only the block last read is held."""

    def __init__(self, block: Callable[[int], list[Triple]], length: int, size: int):
        self.block, self.length, self.size = block, length, size
        self._held: tuple[int, list[Triple]] | None = None

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.length))]
        if not -self.length <= index < self.length:
            raise IndexError(f"triple {index} of {self.length}")
        number, offset = divmod(index % self.length, self.size)
        if self._held is None or self._held[0] != number:
            self._held = (number, self.block(number))
        return self._held[1][offset]


class TripleFeed:
    """The lattices of a sequence of triples (a list, or :class:`TripleBlocks`), the sleep
    phase's minibatches: item i is triple i mod n (training cycles through them when it runs
    out), so a resumed run takes the same items. They are compiled a chunk of ``chunk`` triples at a time, as training reaches
    it, by :func:`~nfst.fst.dataset.compile_dataset` (``processes`` at once, through the
    on-disk lattice cache in ``cache_dir`` when given): every sampler of a run that shares
    the triples and the cache compiles each lattice once, the others read it. Only the
    current chunk is held (a pool of 160,000 cipher lattices would take gigabytes).

    A context manager: :func:`~nfst.train.sampler.train_sampler` opens it and closes it,
    which lets go of the chunk held. Triples whose lattice fails to compile (e.g. over
    ``CompileOptions.max_states``) or has no arc (nothing for q to learn) are left out of
    their minibatch and counted in ``skipped``."""

    def __init__(
        self,
        T: MarkedFST,
        triples: Sequence[Triple],
        *,
        cache_dir: Optional[str | os.PathLike] = None,
        processes: int = 1,
        chunk: int = 1024,
        options: CompileOptions = CompileOptions(),
    ):
        if not triples:
            raise ValueError("TripleFeed needs at least one triple")
        self.T, self.triples, self.skipped = T, triples, 0
        self.cache_dir, self.processes, self.chunk, self.options = (
            cache_dir,
            processes,
            chunk,
            options,
        )
        self._held: tuple[int, list] | None = None  # (chunk number, its items)

    def __enter__(self) -> "TripleFeed":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def take(self, start: int, count: int) -> tuple[list[Lattice], list[np.ndarray]]:
        """The lattices and ω's arcs of items ``start .. start + count - 1`` (failures left
        out)."""
        lattices, arcs = [], []
        for i in range(start, start + count):
            item = self._item(i % len(self.triples))
            if item is None:
                self.skipped += 1
                continue
            lattices.append(item[0])
            arcs.append(item[1])
        return lattices, arcs

    def _item(self, i: int) -> Optional[tuple[Lattice, np.ndarray]]:
        number, offset = divmod(i, self.chunk)
        if self._held is None or self._held[0] != number:
            self._held = None  # let the last chunk go before compiling the next
            self._held = (
                number,
                self._compile(self.triples[number * self.chunk : (number + 1) * self.chunk]),
            )
        return self._held[1][offset]

    def _compile(self, triples: list[Triple]) -> list:
        data = compile_dataset(
            self.T,
            [(x, y) for x, y, _ in triples],
            options=self.options,
            cache_dir=self.cache_dir,
            processes=self.processes,
            progress=False,
        )
        compiled = dict(zip(data.pairs, data.lattices))
        items = []
        for x, y, marks in triples:
            lattice = compiled.get((tuple(x), tuple(y)))
            items.append(
                None
                if lattice is None or not lattice.num_arcs
                else (lattice, path_arcs(lattice, marks))
            )
        return items

    def close(self) -> None:
        self._held = None


@dataclass
class SleepBatch:
    """A minibatch with triples (``nfst.train.triples``): their lattices ``sleep``, the arcs
    ``arcs`` (n, 1, L) of each ω there (-1 padded), and the pairs of the usual training
    ``wake`` (None in the sleep phase)."""

    sleep: Optional[LatticeBatch]
    arcs: Optional[torch.Tensor]
    wake: Optional[LatticeBatch] = None

    @property
    def size(self) -> int:
        return sum(len(b.lattices) for b in (self.sleep, self.wake) if b is not None) or 1


def sleep_batch(
    feed: TripleFeed,
    start: int,
    count: int,
    wake: list[Lattice],
    shard: slice,
    device: torch.device,
) -> LatticeBatch | SleepBatch | None:
    """The minibatch of ``count`` triples from ``start`` (this rank's ``shard`` of them) and
    the usual training's pairs ``wake``: a plain LatticeBatch without triples, else a
    :class:`SleepBatch` whose ω arcs are numbered as the batch numbers arcs."""
    wake_batch = LatticeBatch(wake, device) if wake else None
    if not count:
        return wake_batch
    lattices, arcs = feed.take(start, count)
    lattices, arcs = lattices[shard], arcs[shard]
    if not lattices:
        return wake_batch or SleepBatch(None, None)
    sleep = LatticeBatch(lattices, device)
    offsets = sleep.arc_offsets.tolist()
    padded = torch.full((len(arcs), 1, max(1, *map(len, arcs))), -1, dtype=torch.long)
    for i, a in enumerate(arcs):  # the batch numbers arcs after the lattices before
        padded[i, 0, : len(a)] = torch.from_numpy(a + offsets[i])
    return SleepBatch(sleep, padded.to(device), wake_batch)
