"""Teacher forcing in one pass: known paths laid out by position, and dropout masks that the
step-by-step walk and the one-pass scoring share.

A sampler's q of a known path factorises over its choices (003 §3); when the path is known, a
recurrence over the mark prefix (h_t = GRU(e[ω_t], h_{t-1})) can read all of it at once and
every head can score every position in one batched call, instead of one call per mark. Sampling
therefore walks step by step without gradients and then scores the drawn paths in one pass with
gradients (``Sampler.sample``); ``Sampler.score`` does the second half only.

Position t = 0..L of a path (L marks) is the state before its (t+1)-th choice: the start state
at t = 0, the destination of arc t afterwards; choice L is STOP.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

import torch
from torch import Tensor, nn

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


def route_of_arcs(batch: LatticeBatch, lattice: Tensor, arcs: Tensor,
                  per_lattice: Optional[int] = None) -> Route:
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


class WalkMemory:
    """A module that remembers something of one walk for the one-pass scoring of its paths:
    :func:`one_walk` calls ``begin_walk(walkers)`` on entry and ``end_walk()`` on exit."""

    def begin_walk(self, walkers: int) -> None:
        raise NotImplementedError

    def end_walk(self) -> None:
        raise NotImplementedError


def replay(tape: Optional[list], running: Sequence[int], rows: Callable = len
           ) -> Optional[list]:
    """What a walk recorded at each step of its paths' one-pass scoring, or None if it recorded
    nothing. A walk reads step t's positions, in walker order, at its t-th step: just the rows
    that the scoring lays out at step t (``running`` rows per step; ``rows(entry)`` counts an
    entry's). Raises if the record is not of these paths."""
    if not tape:
        return None
    steps, rest = tape[:len(running)], tape[len(running):]
    if [rows(entry) for entry in steps] != list(running) or any(rows(entry) for entry in rest):
        raise RuntimeError("the recorded walk is not the paths being scored")
    return steps


class ReplayedLinear(torch.autograd.Function):
    """x Wᵀ + b (n, out) for x (n, in) whose value a walk already computed, one (n_t, out)
    entry per step (``steps``, laid out as x's rows); gradients as a linear layer's."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor, steps: list[Tensor]) -> Tensor:
        ctx.save_for_backward(x, weight)
        return torch.cat(steps)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        return grad @ weight, grad.T @ x, grad.sum(0), None


class WalkDropout(nn.Dropout, WalkMemory):
    """Dropout on an activation computed once per walker and step, with one mask per walker:
    variational dropout (Gal & Ghahramani, 2016), the usual dropout of a recurrent net, where
    every step of a sequence sees the same units dropped.

    Inside :func:`one_walk` the first call draws a mask (N, w) for the N walkers, and every
    call applies it: to (N, w) activations (one step of the walk), to (N, T, w) ones (every
    position of N known paths, so one-pass scoring sees the dropout the walk saw) or to rows
    of given walkers; :meth:`walker_mask` hands it out. Elsewhere it is plain (inverted)
    dropout. Either way p is rounded to a multiple of 1/256 (``kept_of_256``)."""

    def __init__(self, p: float):
        super().__init__(p)
        self.walkers: Optional[int] = None
        self.mask: Optional[Tensor] = None

    def begin_walk(self, walkers: int) -> None:
        self.walkers, self.mask = walkers, None

    def end_walk(self) -> None:
        self.walkers, self.mask = None, None

    def forward(self, x: Tensor, walkers: Optional[Tensor] = None) -> Tensor:
        """``walkers``: when x (n, w) holds rows of the walkers ``walkers`` (n,), each row
        takes its walker's mask."""
        if self.walkers is None:  # plain dropout
            keep = kept_of_256(self.p)
            return x if not self.training or keep == 256 else x * dropout_mask(x, x.shape, keep)
        mask = self.walker_mask(x, self.walkers)
        if mask is None:
            return x
        if walkers is not None:
            return x * mask[walkers]
        return x * (mask[:, None] if x.dim() == 3 else mask)

    def walker_mask(self, like: Tensor, walkers: int) -> Optional[Tensor]:
        """Each walker's mask (walkers, w), w the last size of ``like``, or None when this
        dropout does nothing (evaluation, p = 0): inside :func:`one_walk` the walk's (drawn
        now if this is its first use), elsewhere a fresh one."""
        keep = kept_of_256(self.p)
        if not self.training or keep == 256:
            return None
        if self.walkers is None:
            return dropout_mask(like, (walkers, like.shape[-1]), keep)
        if self.mask is None:
            self.mask = dropout_mask(like, (self.walkers, like.shape[-1]), keep)
        return self.mask


def kept_of_256(p: float) -> int:
    """Dropout keeps a unit with probability (this) / 256: 1 - p rounded to a multiple of
    1/256 (at least 1/256)."""
    return max(1, round((1 - p) * 256))


def dropout_mask(like: Tensor, shape: tuple[int, ...], keep: int) -> Tensor:
    """An inverted-dropout mask of ``shape``, dtype and device of ``like``: 256 / keep with
    probability keep / 256, else 0. A unit takes 8 random bits (one int64 draw covers 8
    units), which on a CPU is 6× faster than a uniform float per unit. (A float mask, as
    multiplying by a bool one costs 2–3× more, forward and backward.)"""
    numel = math.prod(shape)
    bits = torch.empty((numel + 7) // 8, dtype=torch.int64, device=like.device)
    units = bits.random_(-2 ** 63, None).view(torch.uint8)[:numel].view(shape)
    return (units < keep).to(like.dtype).mul_(256 / keep)


@contextmanager
def one_walk(module: nn.Module, walkers: int) -> Iterator[None]:
    """A walk of ``walkers`` walkers and the one-pass scoring of its paths, both inside: every
    :class:`WalkMemory` of ``module`` remembers what the scoring must share with the walk
    (each walker's dropout masks, what the walk computed: the prefix GRU's states,
    swp-prefix's g)."""
    sites = [m for m in module.modules() if isinstance(m, WalkMemory)]
    for m in sites:
        m.begin_walk(walkers)
    try:
        yield
    finally:
        for m in sites:
            m.end_walk()
