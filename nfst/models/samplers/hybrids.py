"""SWP variants that also see the mark prefix (003 §3.3) or SWS's local evidence.

``swp-prefix`` keeps Algorithm 1 and re-weights each step's choice by the mark prefix (the
"cheaper variant" at the end of 003 §3.3):

    q(s→s' | s, ω_{<t}) ∝ w_{s→s'} β(s') · exp(g(h_{t-1}) · e_{s→s'}),
    q(STOP | s, ω_{<t}) ∝ [s final] · exp(g_stop(h_{t-1})),

with h a GRU over the prefix and g, g_stop linear maps that start at zero, so it starts out as
SWP and learns how far to trust the prefix.

``swp-sws`` (ours, beyond 003) multiplies SWP's transition probabilities with SWS's local
evidence, a product of experts renormalised over the legal choices:

    q(s→s' | s, ω_{<t}) ∝ (w_{s→s'} β(s') / β(s))^α · exp(SWS logit of the arc's mark)   (003:4–5)
    q(STOP | s, ω_{<t}) ∝ ([s final] / β(s))^α · exp(SWS logit of STOP)

with a learned α (starting at 1). SWP contributes the global view of the lattice (which
alignments can still complete, e.g. which cipher explains y), SWS the prefix and the unaligned
suffixes x_{≥i}, y_{≥j}; α → 0 recovers SWS where the lattice view does not help.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor, nn

from ...dp.batch import LatticeBatch
from .choices import choosing, forced_log_probs, with_forced
from .config import SamplerConfig
from .dropout import WalkDropout
from .prefix import PrefixGRU
from .record import ReplayedLinear, WalkRecord
from .route import Route
from .swp import SWP, WeightedLattice
from .sws import SWS, Suffixes
from .symbols import Vocabulary
from .walk import Walk


class SWPPrefix(SWP):
    name = "swp-prefix"
    reads_arc_embed = True

    def __init__(self, vocabulary: Vocabulary, config: Optional[SamplerConfig] = None):
        super().__init__(vocabulary, config)
        d = self.config.d
        self.prefix = PrefixGRU(self.vocab_size, d, self.config.dropout)
        self.g = nn.Linear(d, d + 1)  # g(h) for arcs, then g_stop(h)
        nn.init.zeros_(self.g.weight)
        nn.init.zeros_(self.g.bias)
        self.drop_step = WalkDropout(self.config.dropout)

    def start(
        self,
        batch: LatticeBatch,
        context: WeightedLattice,
        lattice: Tensor,
        record: Optional[WalkRecord] = None,
    ) -> Walk:
        h = self.prefix.step(torch.full_like(lattice, self.bos), record=record)
        return self.initial_walk(batch, lattice, h, record)

    @staticmethod
    def arc_bonus(g: Tensor, batch: LatticeBatch, arcs: Tensor, arc_embed: Tensor) -> Tensor:
        """(..., D + 1): g · e of each out-arc column (0 at padding, arcs < 0), then g_stop;
        g (..., d + 1), arcs (..., D), arc_embed as ``WeightedLattice.arc_embed``. Only the
        real arcs are gathered: most states have one or two of the D columns."""
        where = (arcs >= 0).nonzero(as_tuple=True)
        e = arc_embed[batch.backward_arc_rank[arcs[where]]]
        dot = (g[where[:-1]][:, :-1] * e).sum(1)
        bonus = g.new_zeros(arcs.shape).index_put(where, dot)
        return torch.cat([bonus, g[..., -1:]], dim=-1)

    def log_probs(self, batch: LatticeBatch, context: WeightedLattice, walk: Walk) -> Tensor:
        rows = choosing(batch, walk)
        if rows is not None:
            g = self.g(self.drop_step(walk.hidden[rows], walk.record, walkers=rows))  # (n, d + 1)
            if walk.record is not None:
                walk.record.keep(self, g)  # the scoring's g at this step's positions
            return with_forced(
                batch, walk, rows, self.bonus_log_probs(batch, context, walk.state[rows], g)
            )
        # finding the real arcs would sync a GPU with the host too
        g = self.g(self.drop_step(walk.hidden, walk.record))  # (N, d + 1)
        arcs = batch.out_arcs[walk.state]  # (N, D)
        e = context.arc_embed[batch.backward_arc_rank[arcs.clamp(min=0)]]  # (N, D, d)
        dense = torch.einsum("nd,nkd->nk", g[:, :-1], e)
        return torch.log_softmax(context.table[walk.state] + torch.cat([dense, g[:, -1:]], 1), 1)

    def path_log_probs(
        self,
        batch: LatticeBatch,
        context: WeightedLattice,
        route: Route,
        record: Optional[WalkRecord] = None,
    ) -> Tensor:
        h, rows = self.prefix.run_choosing(batch, route, self.bos, record)  # (m, d)
        x = self.drop_step(h, record, walkers=rows.paths)
        walked = None if record is None else record.replay(self, rows.running)
        g = (
            self.g(x)
            if walked is None
            else ReplayedLinear.apply(x, self.g.weight, self.g.bias, walked)
        )  # (m, d + 1)
        lp = self.bonus_log_probs(batch, context, rows.at(route.states), g)
        return rows.place(lp, forced_log_probs(batch, route.states, lp.dtype))

    def bonus_log_probs(
        self, batch: LatticeBatch, context: WeightedLattice, states: Tensor, g: Tensor
    ) -> Tensor:
        """(n, D + 1): log q at states (n,) given g (n, d + 1) there."""
        bonus = self.arc_bonus(g, batch, batch.out_arcs[states], context.arc_embed)
        return torch.log_softmax(context.table[states] + bonus, dim=1)

    def advance(
        self, batch: LatticeBatch, context: WeightedLattice, walk: Walk, choice: Tensor
    ) -> Walk:
        moved = self.moved(batch, walk, choice)
        moved.hidden = self.prefix.advance(batch, walk, moved)
        return moved


@dataclass
class HybridContext:
    swp: WeightedLattice
    sws: Suffixes


class SWPSWS(SWP):
    name = "swp-sws"
    reads_symbols = True

    def __init__(self, vocabulary: Vocabulary, config: Optional[SamplerConfig] = None):
        super().__init__(vocabulary, config)
        self.sws = SWS(vocabulary, config)
        self.alpha = nn.Parameter(torch.ones(()))

    def prepare(self, batch: LatticeBatch) -> HybridContext:
        return HybridContext(super().prepare(batch), self.sws.prepare(batch))

    def start(
        self,
        batch: LatticeBatch,
        context: HybridContext,
        lattice: Tensor,
        record: Optional[WalkRecord] = None,
    ) -> Walk:
        return self.sws.start(batch, context.sws, lattice, record)

    def log_probs(self, batch: LatticeBatch, context: HybridContext, walk: Walk) -> Tensor:
        rows = choosing(batch, walk)
        if rows is None:
            return self.combine(batch, context, walk.state, self.sws.mark_logits(batch, walk))
        logits = self.sws.mark_logits(batch, walk, rows)
        return with_forced(
            batch, walk, rows, self.combine(batch, context, walk.state[rows], logits)
        )

    def path_log_probs(
        self,
        batch: LatticeBatch,
        context: HybridContext,
        route: Route,
        record: Optional[WalkRecord] = None,
    ) -> Tensor:
        logits, rows = self.sws.path_logits(batch, context.sws, route, record)
        lp = self.combine(batch, context, rows.at(route.states), logits)
        return rows.place(lp, forced_log_probs(batch, route.states, lp.dtype))

    def combine(
        self, batch: LatticeBatch, context: HybridContext, states: Tensor, logits: Tensor
    ) -> Tensor:
        """(..., D + 1): the product of experts at states (...), SWS logits (..., V + 1)."""
        marks = batch.arc_mark[batch.out_arcs[states].clamp(min=0)]
        local = torch.cat([logits.gather(-1, marks), logits[..., -1:]], dim=-1)
        table = context.swp.table[states]  # -inf exactly where a choice is illegal
        illegal = torch.isinf(table)
        scaled = (self.alpha * table.masked_fill(illegal, 0.0)).masked_fill(illegal, float("-inf"))
        return torch.log_softmax(scaled + local, dim=-1)

    def advance(
        self, batch: LatticeBatch, context: HybridContext, walk: Walk, choice: Tensor
    ) -> Walk:
        return self.sws.advance(batch, context.sws, walk, choice)
