"""SWP, the sampler with path structures (003 §3.3).

SWP treats the lattice as a WFST. Algorithm 1 of 003 visits states bottom-up (by height, so
every arc's destination is done before its source) and computes, for each arc s → s' with
mark ω and each state s,

    e_{s→s'} = σ(U[1; e_ω; e_{s'}])                     arc embedding (line 4)
    w_{s→s'} = exp(w · e_{s→s'})                         arc weight (line 5)
    β(s)     = [s final] + Σ_{s'} w_{s→s'} β(s')          backward algorithm (line 6)
    q(s→s' | s) = w_{s→s'} β(s') / β(s)                  transition probability (003:5)
    e_s      = Σ_{s'} q(s→s' | s) e_{s→s'}               state embedding (line 8)

(dead ends, height 0: β = 1, e_s = 0). One vectorised step per height covers every lattice of
the batch, in log space. Sampling then just walks q: q(STOP | s) = [s final] / β(s).
The variants that also see the prefix are in ``nfst.models.samplers.hybrids``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor, nn

from ...dp.batch import LatticeBatch
from ...dp.passes import transition_log_probs, transition_table
from ...dp.selection import RDPConfig
from ...dp.semiring import LogSemiring
from ...runtime.threads import cpu_threads
from .base import Sampler
from .config import SamplerConfig
from .record import WalkRecord
from .route import Route
from .swp_randomized import defensive_table, randomized_weights
from .symbols import Vocabulary
from .walk import Walk


@dataclass
class WeightedLattice:
    """A locally normalised WFST on the batch: what SWP's ``prepare`` returns."""

    table: Tensor
    """(S, D + 1): log q of each column of ``batch.out_arcs`` and of STOP, -inf if illegal."""
    arc_embed: Optional[Tensor] = None
    """(A, d): Algorithm 1's arc embeddings (kept for the prefix variant), in the order it
    forms them: arc a's is row ``batch.backward_arc_rank[a]``."""


class WFSTSampler(Sampler):
    """A sampler whose q is a WFST on the lattice: subclasses give log arc weights (A,) in
    ``arc_log_weights`` (and optionally β); q(s→s'|s) = w β(s') / β(s) by ``nfst.dp``."""

    requires_acyclic = True

    def arc_log_weights(
        self, batch: LatticeBatch
    ) -> tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
        """(log w (A,), β (S,) or None to compute it, arc embeddings (A, d) or None)."""
        raise NotImplementedError

    def prepare(self, batch: LatticeBatch) -> WeightedLattice:
        log_w, beta, arc_embed = self.arc_log_weights(batch)
        arc_lp, stop_lp = transition_log_probs(batch, log_w, batch.final_weights(log_w.dtype), beta)
        return WeightedLattice(transition_table(batch, arc_lp, stop_lp), arc_embed)

    def start(
        self,
        batch: LatticeBatch,
        context: WeightedLattice,
        lattice: Tensor,
        record: Optional[WalkRecord] = None,
    ) -> Walk:
        return self.initial_walk(batch, lattice, None, record)

    def log_probs(self, batch: LatticeBatch, context: WeightedLattice, walk: Walk) -> Tensor:
        return context.table[walk.state]

    def path_log_probs(
        self,
        batch: LatticeBatch,
        context: WeightedLattice,
        route: Route,
        record: Optional[WalkRecord] = None,
    ) -> Tensor:
        return context.table[route.states]

    def advance(
        self, batch: LatticeBatch, context: WeightedLattice, walk: Walk, choice: Tensor
    ) -> Walk:
        return self.moved(batch, walk, choice)


class Algorithm1(torch.autograd.Function):
    """003 Algorithm 1 over a batch, level by level, with a hand-written reverse pass.

    Inputs: ``mark_part`` (V, d) = U_1 + U_mark e_ω for every mark, ``U_state`` (d, d) and
    ``w`` (d,). Outputs: log w (A,), log β (S,) and the arc embeddings e (A, d) in level
    order (``batch.backward_arc_order``), or None for them unless ``arc_embed`` (an (A, d)
    output and its gradient are about 32 MB each on a batch of 16 cipher lattices at d 256;
    in level order, neither is copied to reorder it).

    Why not plain autograd: each level reads states of any lower level, so autograd would
    allocate (and zero) a gradient the size of every state's embedding at every level, which
    dominated the run time. The reverse pass instead visits levels top-down, accumulating each
    state's adjoints in one buffer, like the backward algorithm's own gradient in ``nfst.dp``.
    """

    @staticmethod
    def forward(
        ctx,
        mark_part: Tensor,
        U_state: Tensor,
        w: Tensor,
        batch: LatticeBatch,
        arc_embed: bool = True,
    ):
        S, A, d = batch.num_states, batch.num_arcs, mark_part.shape[1]
        order = batch.backward_arc_order  # arcs in level order, level by level
        marks = batch.arc_mark[order]
        # Per state in level order: log β, e_s and U_state e_s. States of height 0 are dead
        # ends (final): β = 1, e_s = 0; every other row is written at its level, in place.
        beta = batch.final_weights(mark_part.dtype)[batch.level_order]
        embed_s = mark_part.new_empty(S, d)
        proj_s = mark_part.new_empty(S, d)
        dead = batch.backward_levels[0].states
        embed_s[dead], proj_s[dead] = 0, 0
        # Per arc in level order: e, log w and q.
        embed = mark_part.new_empty(A, d)
        log_w = mark_part.new_empty(A)
        q = mark_part.new_empty(A)
        U_T = U_state.T
        for level in batch.backward_levels[1:]:
            lo, hi, arcs = level.states.start, level.states.stop, level.arcs
            e = torch.add(mark_part[marks[arcs]], proj_s[level.other], out=embed[arcs])
            e.sigmoid_()  # line 4
            lw = torch.mv(e, w, out=log_w[arcs])  # line 5
            through = lw + beta[level.other]  # log w β(s') per arc
            b = LogSemiring.segment_sum(through, level.segment, beta[lo:hi])  # line 6
            qa = torch.exp(through - b[level.segment], out=q[arcs])  # line 7
            e_s = embed_s[lo:hi].zero_().index_add_(0, level.segment, qa[:, None] * e)  # line 8
            beta[lo:hi] = b
            torch.mm(e_s, U_T, out=proj_s[lo:hi])
        ctx.save_for_backward(mark_part, U_state, w, embed_s, embed, q)
        ctx.batch = batch
        ctx.set_materialize_grads(False)
        return (
            log_w[batch.backward_arc_rank],
            beta[batch.level_index],
            embed if arc_embed else None,
        )

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_log_w, grad_beta, grad_embed):
        mark_part, U_state, w, embed_s, embed, q = ctx.saved_tensors
        batch = ctx.batch
        order = batch.backward_arc_order
        # Adjoints, in the forward pass's orders; a state's are complete once every level
        # above it has been visited (only arcs from higher levels read it). An output that
        # no loss reads has no gradient (None).
        g_beta = (
            grad_beta[batch.level_order].clone()
            if grad_beta is not None
            else embed_s.new_zeros(len(embed_s))
        )
        g_proj = torch.zeros_like(embed_s)
        g_log_w = grad_log_w[order] if grad_log_w is not None else q.new_zeros(len(q))
        g_mark = torch.zeros_like(mark_part)
        marks = batch.arc_mark[order]
        with cpu_threads(batch.device):  # many small ops: see nfst.runtime.threads
            for level in reversed(batch.backward_levels[1:]):
                lo, hi, arcs, seg = level.states.start, level.states.stop, level.arcs, level.segment
                e, qa = embed[arcs], q[arcs]
                g_e_s = (g_proj[lo:hi] @ U_state)[seg]  # proj_s = e_s U_stateᵀ
                g_q = (g_e_s * e).sum(1)  # e_s = Σ q e
                g_e = (
                    qa[:, None] * g_e_s
                    if grad_embed is None
                    else torch.addcmul(grad_embed[arcs], qa[:, None], g_e_s)
                )
                # q = exp(through − b): b's adjoint collects −Σ g_q q; b = logsumexp(through, final)
                g_b = g_beta[lo:hi] - torch.zeros_like(g_beta[lo:hi]).index_add_(0, seg, g_q * qa)
                g_through = qa * (g_q + g_b[seg])
                g_beta.index_add_(0, level.other, g_through)  # through = log w + β(s')
                g_lw = g_log_w[arcs].add_(g_through)  # in place: g_log_w is ours
                g_pre = torch.ops.aten.sigmoid_backward(g_e.addr_(g_lw, w), e)  # e = σ(pre)
                g_mark.index_add_(0, marks[arcs], g_pre)  # pre = mark_part[ω] + proj(s')
                g_proj.index_add_(0, level.other, g_pre)
        # the weights' adjoints, summed over every level at once: log w = w · e per arc and
        # proj_s = e_s U_stateᵀ per state (dead ends have e_s = 0)
        return g_mark, g_proj.T @ embed_s, embed.T @ g_log_w, None, None


class SWP(WFSTSampler):
    name = "swp"
    reads_arc_embed = False
    """Whether ``log_probs`` reads the arc embeddings (the randomized path builds them only then)."""

    def __init__(self, vocabulary: Vocabulary, config: Optional[SamplerConfig] = None):
        super().__init__(vocabulary, config)
        d = self.config.d
        self.mark_embed = nn.Embedding(self.vocab_size, d)
        self.U_mark = nn.Linear(d, d)  # U = [U_1 | U_mark | U_state]; U_1 is this bias
        self.U_state = nn.Linear(d, d, bias=False)
        self.w = nn.Linear(d, 1, bias=False)
        self.drop = nn.Dropout(self.config.dropout)

    def arc_log_weights(self, batch: LatticeBatch) -> tuple[Tensor, Tensor, Tensor]:
        """Algorithm 1 over the batch: log w (A,), log β (S,), e (A, d) or None unless
        ``reads_arc_embed``. Dropout applies to the mark embeddings."""
        mark_part = self.U_mark(self.drop(self.mark_embed.weight))  # (V, d): U_1 + U_mark e_ω
        with cpu_threads(batch.device):
            return Algorithm1.apply(
                mark_part, self.U_state.weight, self.w.weight[0], batch, self.reads_arc_embed
            )

    def prepare(self, batch: LatticeBatch) -> WeightedLattice:
        """With ``config.budget`` < 1, Algorithm 1 on a randomized sub-lattice and the defensive
        mixture of ``swp_randomized``; otherwise exact."""
        if self.config.budget >= 1:
            return super().prepare(batch)
        mark_part = self.U_mark(self.drop(self.mark_embed.weight))
        config = RDPConfig(budget=self.config.budget, proposal="alpha-beta")
        log_w, beta, embed, cheap = randomized_weights(
            mark_part,
            self.U_state.weight,
            self.w.weight[0],
            batch,
            config,
            arc_embed=self.reads_arc_embed,
        )
        hat = transition_table(
            batch, *transition_log_probs(batch, log_w, batch.final_weights(log_w.dtype), beta)
        )
        return WeightedLattice(defensive_table(hat, transition_table(batch, *cheap), beta), embed)
