"""Sleep training's minibatches (``sampler.sleep_steps``, ``sampler.sleep_share``): the lattices
of triples drawn from the scorer (``nfst.train.triples``), compiled in a background process as
training takes them, and the minibatch of a step that holds triples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from ..dp.batch import LatticeBatch
from ..errors import NfstError
from ..fst.lattice import Lattice
from ..fst.mfst import MarkedFST
from .triples import Triple, path_arcs


class TripleFeed:
    """The lattices of a list of triples, compiled in a background process a few minibatches
    ahead of training and not kept (a pool of 160,000 cipher lattices would take gigabytes):
    the sleep phase's minibatches. Taking items in order is the fast path; any other start
    restarts the compiling there, so a resumed run takes the same items.

    Triples whose lattice fails to compile (e.g. over ``CompileOptions.max_states``) are left
    out of their minibatch and counted in ``skipped``."""

    def __init__(self, T: MarkedFST, triples: list[Triple], *, ahead: int = 64):
        if not triples:
            raise ValueError("TripleFeed needs at least one triple")
        self.T, self.triples, self.ahead, self.skipped = T, triples, ahead, 0
        self._pool = None
        self._queue: list = []  # (index, AsyncResult), in index order
        self._next = 0

    def take(self, start: int, count: int) -> tuple[list[Lattice], list[np.ndarray]]:
        """The lattices and ω's arcs of triples ``start .. start + count - 1``, cycling
        through the list when it runs out (failures left out)."""
        lattices, arcs = [], []
        for i in range(start, start + count):
            item = self._get(i)
            if item is None:
                self.skipped += 1
                continue
            lattices.append(item[0])
            arcs.append(item[1])
        return lattices, arcs

    def _get(self, i: int):
        if self._pool is not None and (not self._queue or self._queue[0][0] != i):
            self.close()  # its pending compiles are of other items: stop them, not wait on them
        if self._pool is None:
            import multiprocessing as mp
            ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
            self._pool = ctx.Pool(1, initializer=_feed_init, initargs=(self.T, self.triples))
            self._queue, self._next = [], i
        while len(self._queue) < self.ahead:
            self._queue.append((self._next, self._pool.apply_async(_feed_compile,
                                                                   (self._next,))))
            self._next += 1
        return self._queue.pop(0)[1].get()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool = None


_feed: Optional[tuple[MarkedFST, list[Triple]]] = None


def _feed_init(T: MarkedFST, triples: list[Triple]) -> None:
    global _feed
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # how the feed stops its process
    _feed = (T, triples)


def _feed_compile(i: int):
    from ..fst.compile import compile_lattice
    T, triples = _feed
    x, y, marks = triples[i % len(triples)]
    try:
        lattice = compile_lattice(T, x, y)
    except NfstError:
        return None
    if not lattice.num_arcs:  # one path, the empty one: nothing for q to learn
        return None
    return lattice, path_arcs(lattice, marks)


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


def sleep_batch(feed: TripleFeed, start: int, count: int, wake: list[Lattice], shard: slice,
                device: torch.device) -> LatticeBatch | SleepBatch | None:
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
        padded[i, 0, :len(a)] = torch.from_numpy(a + offsets[i])
    return SleepBatch(sleep, padded.to(device), wake_batch)
