"""Known paths laid out by position, for teacher forcing in one pass.

A sampler's q of a known path factorises over its choices (003 §3); when the path is known, a
recurrence over the mark prefix (h_t = GRU(e[ω_t], h_{t-1})) can read all of it at once and
every head can score every position in one batched call, instead of one call per mark. Sampling
therefore walks step by step without gradients and then scores the drawn paths in one pass with
gradients (``Sampler.sample``); ``Sampler.score`` does the second half only.

Position t = 0..L of a path (L marks) is the state before its (t+1)-th choice: the start state
at t = 0, the destination of arc t afterwards; choice L is STOP. A :class:`Route` holds N paths
by position; :class:`Rows` lists some of their positions as rows, time-major, as a walk reaches
them, and :class:`Packing` adds what a recurrence over the positions reads.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ...dp.batch import LatticeBatch


@dataclass
class Route:
    """N known paths by position: T = L + 1 positions, L the longest path's number of marks.
    Past a path's end its entries repeat the end (last state, STOP), so every index is legal."""

    lattice: Tensor
    """(N,) long: which lattice of the batch."""
    states: Tensor
    """(N, T) long: the state at each position (batch-global id)."""
    choice: Tensor
    """(N, T) long: the column of ``batch.out_arcs[state]`` taken, STOP = D."""
    marks: Tensor
    """(N, L) long: the marks, -1 after the end."""
    lengths: Tensor
    """(N,) long: number of marks."""
    per_lattice: Optional[int] = None
    """k when the paths are lattice-major, k per lattice (``lattice`` = b repeated k times)."""

    @property
    def valid(self) -> Tensor:
        """(N, T) bool: positions up to and including the path's STOP."""
        t = torch.arange(self.states.shape[1], device=self.states.device)
        return t <= self.lengths[:, None]


def route_of_arcs(
    batch: LatticeBatch, lattice: Tensor, arcs: Tensor, per_lattice: Optional[int] = None
) -> Route:
    """The route of paths given as arcs (N, L), -1 after the end (batch-global arc ids);
    ``per_lattice`` as in :class:`Route`.
    Raises ValueError if a path is not one: an arc that does not leave the current state, a
    path that ends at a non-final state (one host sync for all the checks)."""
    N, L = arcs.shape
    safe = arcs.clamp(min=0)
    real = arcs >= 0
    lengths = real.sum(1)
    t = torch.arange(L, device=arcs.device)
    last = torch.where(real, t, -1).cummax(1).values  # the last arc taken up to each step
    after = batch.arc_dst[safe.gather(1, last.clamp(min=0))]
    start = batch.start[lattice][:, None]
    states = torch.cat([start, torch.where(last >= 0, after, start)], dim=1)  # (N, L + 1)
    leaves = ~real | (batch.arc_src[safe] == states[:, :-1])
    ends_final = batch.final[states[:, -1]]
    gap = real & (t >= lengths[:, None])  # an arc after a -1
    ok = torch.stack([leaves.all(), ends_final.all(), ~gap.any()]).tolist()
    if not ok[0] or not ok[2]:
        step = int((~leaves | gap).any(0).nonzero()[0])
        raise ValueError(f"step {step}: an arc does not leave the walker's current state")
    if not ok[1]:
        raise ValueError("a path ends at a non-final state")
    stop = batch.out_arcs.shape[1]
    first = batch.out_arcs[batch.arc_src[safe], 0]  # arcs are sorted by source
    choice = torch.where(real, safe - first, torch.full_like(arcs, stop))
    choice = torch.cat([choice, torch.full_like(choice[:, :1], stop)], dim=1)
    marks = torch.where(real, batch.arc_mark[safe], arcs)
    return Route(lattice, states, choice, marks, lengths, per_lattice)


@dataclass
class Rows:
    """Positions of N known paths as rows, time-major: step t's rows are the paths with more
    than t positions (or some of them), in path order, as a walk reaches them: a walker reads
    position t at its t-th step."""

    paths: Tensor
    """(P,): each row's path."""
    steps: Tensor
    """(P,): its position t."""
    running: list[int]
    """Rows per step."""

    def at(self, values: Tensor) -> Tensor:
        """(P, ...): each row's entry of per-position ``values`` (N, T, ...)."""
        return values[self.paths, self.steps]

    def place(self, rows: Tensor, into: Tensor) -> Tensor:
        """``into`` (N, T, ...) with per-row ``rows`` (P, ...) at their positions."""
        return into.index_put((self.paths, self.steps), rows)

    def spans(self) -> list[slice]:
        """Each step's rows."""
        ends = list(itertools.accumulate(self.running))
        return [slice(end - n, end) for n, end in zip(self.running, ends)]


@dataclass
class Packing(Rows):
    """The first ``lengths`` positions of N known paths (:meth:`of`), as :class:`Rows`, with
    what a recurrence over them reads."""

    marks: Tensor
    """(P,): the mark each row reads (BOS at t = 0)."""
    parent: Tensor
    """(P,): the row, among step t - 1's, of the same path (0 at t = 0)."""

    @staticmethod
    def of(marks: Tensor, lengths: Tensor) -> "Packing":
        """Rows of paths reading ``marks`` (N, T), ``lengths`` (N,) positions each."""
        t = torch.arange(marks.shape[1], device=marks.device)
        going = lengths[None, :] > t[:, None]  # (T, N)
        steps, paths = going.nonzero(as_tuple=True)
        rank = going.cumsum(1) - 1  # a path's row among its step's rows
        parent = rank[(steps - 1).clamp(min=0), paths]
        return Packing(paths, steps, going.sum(1).tolist(), marks[paths, steps], parent)

    def where(self, keep: Tensor) -> tuple[Tensor, Rows]:
        """The rows where ``keep`` (P,) holds: their indices (m,) and their :class:`Rows`
        (one host sync)."""
        index = keep.nonzero().squeeze(1)
        steps = self.steps[index]
        running = torch.bincount(steps, minlength=len(self.running)).tolist()
        return index, Rows(self.paths[index], steps, running)
