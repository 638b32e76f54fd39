"""A batch of lattices as one disjoint union, with the schedules the batched passes use.

State ids of lattice b are ``state_offsets[b]:state_offsets[b + 1]`` and its start state is
``state_offsets[b]``; arcs likewise. The *level schedule* groups states by height (longest arc
count to a dead end, docs/design.md §4): every arc leaves a state of greater height than the one it
enters, so all states of one height are independent given the lower ones, and a backward pass
is ``max height`` vectorised steps over the whole batch whatever the number of states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..fst.lattice import Lattice


@dataclass
class Level:
    """One step of a level-synchronous pass (indices into the level-ordered state array)."""

    states: slice
    """States of this height, a contiguous block in level order."""
    arcs: slice
    """Arcs whose source (backward) or destination (forward) is at this height: a block of
    the pass's arc order (``backward_arc_order`` / ``forward_arc_order``)."""
    segment: torch.Tensor
    """(n_arcs,) index of that source/destination within ``states``."""
    other: torch.Tensor
    """(n_arcs,) level-order index of the arc's other end (destination / source)."""


def _schedule(
    key_state: np.ndarray,
    other_state: np.ndarray,
    *,
    height: np.ndarray,
    level_of: np.ndarray,
    bounds: np.ndarray,
    device: torch.device | str,
) -> tuple[np.ndarray, list[Level]]:
    """The arcs (A,) ordered by the height, then the level-order slot, of their ``key_state``
    (source for a backward pass, destination for a forward one), and one :class:`Level` per
    height: its states (``bounds[h]:bounds[h + 1]`` of the level order) and its block of arcs.
    ``height`` (S,), ``level_of`` (S,) each state's level-order slot."""
    max_height = len(bounds) - 2
    arc_order = np.lexsort((level_of[key_state], height[key_state]))
    key_height = height[key_state][arc_order]
    arc_bounds = np.searchsorted(key_height, np.arange(max_height + 2)).tolist()
    state_bounds = bounds.tolist()
    # every level's indices in two tensors, each level a view of its block: one copy to the
    # device, not two per level (a cipher batch has about 90 levels)
    segment = torch.as_tensor(level_of[key_state[arc_order]] - bounds[key_height], device=device)
    other = torch.as_tensor(level_of[other_state[arc_order]], device=device)
    levels = [
        Level(
            states=slice(state_bounds[h], state_bounds[h + 1]),
            arcs=slice(arc_bounds[h], arc_bounds[h + 1]),
            segment=segment[arc_bounds[h] : arc_bounds[h + 1]],
            other=other[arc_bounds[h] : arc_bounds[h + 1]],
        )
        for h in range(max_height + 1)
    ]
    return arc_order, levels


def _choice_ahead(choices: np.ndarray, out_arcs: np.ndarray, dst: np.ndarray, max_height: int):
    """(S,) bool: whether a walker at each state has a choice to make there or further on.
    Where a state has one choice, an arc, the walker moves on without deciding; following
    those moves by pointer doubling, round k looks 2^k states down the forced chain, and no
    chain is longer than ``max_height`` arcs."""
    ahead = choices > 1
    if not len(dst):
        return ahead
    first = out_arcs[:, 0]
    moves = (choices == 1) & (first >= 0)
    nxt = np.where(moves, dst[first.clip(min=0)], np.arange(len(choices)))
    for _ in range(max_height.bit_length()):
        ahead |= ahead[nxt]
        nxt = nxt[nxt]
    return ahead


_SCHEDULED = frozenset(
    {
        "backward_levels",
        "forward_levels",
        "backward_arc_order",
        "forward_arc_order",
        "level_order",
        "level_index",
        "backward_arc_rank",
    }
)
"""The attributes of a :class:`LatticeBatch`'s level schedule, made on first use."""


class LatticeBatch:
    """Disjoint union of lattices, on any torch device.

    Tensors (S states, A arcs, B lattices, D = most out-arcs of a state):
      arc_src, arc_dst, arc_mark: (A,) long       final: (S,) bool
      positions: (S, 2) long                      height: (S,) long
      state_lattice: (S,) long                    arc_lattice: (A,) long
      start: (B,) long                            out_arcs: (S, D) long, -1 padded
      choices: (S,) long, a walker's legal choices at each state: its out-arcs, and STOP if
        final. Where there is one, no sampler has anything to decide.
      choice_ahead: (S,) bool, whether a walker at the state has a choice to make there or
        further on (False: the rest of its path is forced, one chain to STOP).
      legal: (S, D + 1) bool, a walker's legal columns at each state: its out-arcs (the
        columns of ``out_arcs``), then STOP if final.
      column_marks: (S, D + 1) long, the mark of each column (0 at padding), then V =
        len(mark_vocab) at STOP: where a model's V + 1 logits (marks, then STOP) hold it.

    The level schedule (``backward_levels``, ``forward_levels``, their arc orders,
    ``level_order``...) is made on first use: a walk or a teacher-forced score needs none of it.
    """

    def __init__(self, lattices: Sequence[Lattice], device: torch.device | str = "cpu"):
        if not lattices:
            raise ValueError("a LatticeBatch needs at least one lattice")
        for lat in lattices:
            lat.require_acyclic("LatticeBatch")
        self.lattices = list(lattices)
        self.mark_vocab = lattices[0].mark_vocab
        n_states = np.array([lat.num_states for lat in lattices])
        n_arcs = np.array([lat.num_arcs for lat in lattices])
        s_off = np.concatenate([[0], np.cumsum(n_states)])
        a_off = np.concatenate([[0], np.cumsum(n_arcs)])
        rep_s = np.repeat(s_off[:-1], n_arcs)
        src = np.concatenate([lat.arc_src for lat in lattices]) + rep_s
        dst = np.concatenate([lat.arc_dst for lat in lattices]) + rep_s
        mark = np.concatenate([lat.arc_mark for lat in lattices])
        final = np.concatenate([lat.final for lat in lattices])
        height = np.concatenate([lat.height for lat in lattices])
        positions = np.concatenate([lat.positions for lat in lattices])
        S, A = int(s_off[-1]), int(a_off[-1])

        # Out-arc table for sampling: arcs are sorted by source within each lattice.
        out_deg = np.bincount(src, minlength=S)
        first = np.concatenate([[0], np.cumsum(out_deg)[:-1]])
        D = max(1, int(out_deg.max()) if A else 1)
        out_arcs = np.full((S, D), -1, dtype=np.int64)
        rank = np.arange(A) - first[src]
        out_arcs[src, rank] = np.arange(A)
        choices = out_deg + final
        self.max_height = int(height.max())

        t = lambda a: torch.as_tensor(a, device=device)  # noqa: E731
        self.start = t(s_off[:-1])
        self.device = self.start.device
        """Where the tensors live, with its index ("cuda:0" for "cuda"), as tensors report it."""
        self.state_offsets, self.arc_offsets = t(s_off), t(a_off)
        self.arc_src, self.arc_dst, self.arc_mark = t(src), t(dst), t(mark)
        self.final, self.height, self.positions = t(final), t(height), t(positions)
        self.state_lattice = t(np.repeat(np.arange(len(lattices)), n_states))
        self.arc_lattice = t(np.repeat(np.arange(len(lattices)), n_arcs))
        self.out_arcs = t(out_arcs)
        self.choices = t(choices)
        # per-state tables of the legal choices, so that a walk's step indexes them once
        self.legal = t(np.concatenate([out_arcs >= 0, final[:, None]], axis=1))
        out_marks = mark[out_arcs.clip(min=0)] if A else np.zeros_like(out_arcs)
        self.column_marks = t(
            np.concatenate(
                [np.where(out_arcs >= 0, out_marks, 0), np.full((S, 1), len(self.mark_vocab))],
                axis=1,
            )
        )
        self.choice_ahead = t(_choice_ahead(choices, out_arcs, dst, self.max_height))
        self._arrays = (src, dst, height)  # what the level schedule is made from

    def __getattr__(self, name: str):
        """The level schedule's attributes, made on first use (a sampler that runs no pass
        over the lattice never needs them; a sleep step's batch is made anew each step)."""
        if name not in _SCHEDULED or "_arrays" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._plan_levels()
        return self.__dict__[name]

    def _plan_levels(self) -> None:
        """The level schedule: states in (height, id) order, the arcs of each height's states
        for a backward and a forward pass (see :func:`_schedule`)."""
        src, dst, height = self._arrays
        S, A = len(height), len(src)
        order = np.lexsort((np.arange(S), height))
        level_of = np.empty(S, dtype=np.int64)
        level_of[order] = np.arange(S)
        bounds = np.searchsorted(height[order], np.arange(self.max_height + 2))
        levels = dict(height=height, level_of=level_of, bounds=bounds, device=self.device)
        backward_arc_order, self.backward_levels = _schedule(src, dst, **levels)
        forward_arc_order, forward_levels = _schedule(dst, src, **levels)
        self.forward_levels = forward_levels[::-1]
        t = lambda a: torch.as_tensor(a, device=self.device)  # noqa: E731
        self.backward_arc_order = t(backward_arc_order)
        self.forward_arc_order = t(forward_arc_order)
        self.level_order = t(order)
        """(S,) state id at each level-order slot; ``level_index`` is its inverse."""
        self.level_index = t(level_of)
        rank = np.empty(A, dtype=np.int64)
        rank[backward_arc_order] = np.arange(A)
        self.backward_arc_rank = t(rank)
        """(A,) each arc's slot in ``backward_arc_order`` (its inverse)."""

    @property
    def batch_size(self) -> int:
        return len(self.lattices)

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def num_arcs(self) -> int:
        return len(self.arc_src)

    def marks_of(self, arcs: torch.Tensor) -> torch.Tensor:
        """The marks of arc ids of any shape, with padding (-1) kept as -1."""
        return torch.where(arcs >= 0, self.arc_mark[arcs.clamp(min=0)], arcs)

    def final_weights(self, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """(S,) log weight of STOP: 0 at final states, -inf elsewhere."""
        zero = torch.zeros(self.num_states, dtype=dtype, device=self.device)
        return zero.masked_fill(~self.final, float("-inf"))

    def to(self, device: torch.device | str) -> "LatticeBatch":
        return LatticeBatch(self.lattices, device)
