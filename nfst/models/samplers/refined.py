"""Exact sampling from a weighted refinement of each lattice, as a :class:`Sampler`.

A *refinement* of T_{x,y} is a weighted lattice over the same mark strings whose states split
T_{x,y}'s states: each refined state r lies over one state s(r), and its out-arcs are s(r)'s,
in the same order, so column c means the same choice in both. Its path distribution

    q(ω) = Π_t w(r_{t−1} → r_t) · final(r_T) / β(start)

is exact to sample and to score by the backward pass (003:5): log q(a | r) = w_a + β(r') − β(r).
Two refinements use this: the history lattice of a mark n-gram (``nfst.models.ngram``, the
n-gram scorer's exact posterior) and the region lattice of abstract particles
(``nfst.smc.abstract``). A walker carries its refined state as ``hidden``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ...dp.batch import LatticeBatch
from ...dp.passes import transition_log_probs, transition_table
from .base import Sampler
from .record import WalkRecord
from .walk import Walk


@dataclass
class Refinement:
    batch: LatticeBatch
    """The refined lattices, in the order of the batch they refine."""
    arc_weights: Tensor
    """(A_r,) log weight of each refined arc."""
    final_weights: Tensor
    """(R,) log weight of STOP, -inf where it is illegal."""


@dataclass
class RefinedContext:
    refinement: Refinement
    table: Tensor
    """(R, D + 1) log q of each column (the out-arcs of the refined state's state, then STOP),
    D the refined batch's widest state."""
    next_state: Tensor
    """(R, D) long: the refined state a column leads to (-1 for padding)."""


class RefinedLatticeSampler(Sampler):
    """Base class: subclasses implement :meth:`refine`."""

    requires_acyclic = True

    def refine(self, batch: LatticeBatch) -> Refinement:
        raise NotImplementedError

    def prepare(self, batch: LatticeBatch) -> RefinedContext:
        refinement = self.refine(batch)
        refined = refinement.batch
        arc_lp, stop_lp = transition_log_probs(
            refined, refinement.arc_weights, refinement.final_weights
        )
        table = transition_table(refined, arc_lp, stop_lp)
        D = batch.out_arcs.shape[1]
        pad = D + 1 - table.shape[1]  # the refined batch's widest state may be narrower
        table = torch.cat(
            [table[:, :-1], table.new_full((len(table), pad), float("-inf")), table[:, -1:]], 1
        )
        out = torch.nn.functional.pad(
            refined.out_arcs, (0, D - refined.out_arcs.shape[1]), value=-1
        )
        next_state = torch.where(out >= 0, refined.arc_dst[out.clamp(min=0)], -1)
        return RefinedContext(refinement, table, next_state)

    def start(
        self,
        batch: LatticeBatch,
        context: RefinedContext,
        lattice: Tensor,
        record: Optional[WalkRecord] = None,
    ) -> Walk:
        return self.initial_walk(batch, lattice, context.refinement.batch.start[lattice], record)

    def log_probs(self, batch: LatticeBatch, context: RefinedContext, walk: Walk) -> Tensor:
        return context.table[walk.hidden]

    def advance(
        self, batch: LatticeBatch, context: RefinedContext, walk: Walk, choice: Tensor
    ) -> Walk:
        moved = self.moved(batch, walk, choice)
        step = context.next_state[walk.hidden, choice.clamp(max=context.next_state.shape[1] - 1)]
        moving = walk.alive & moved.alive
        return Walk(**vars(moved) | {"hidden": torch.where(moving, step, walk.hidden)})
