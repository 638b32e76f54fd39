"""Randomized dynamic programming on lattice batches (004 §3): unbiased estimates of β, α and Z
that evaluate only the arcs into a budgeted subset of each level's states.

The backward pass runs over the level schedule of ``nfst.dp.batch``. Once β̂ of every state of
height h is known, each lattice keeps K of its states of that height, each with a factor c(s)
(``nfst.dp.selection``: the top K₁ by a proposal score with c = 1, K₂ more drawn from the
tail with c = count / (K₂ q) or 1 / p, the rest c = 0). Higher levels then read only the arcs
into kept states:

    β̂(s) = final(s) ⊕ ⊕_{a: s→s', c(s') > 0} w_a ⊗ log c(s') ⊗ β̂(s')          (004:17, log space)

E[c(s) | everything computed before the selection] = 1 for every s, so by induction over the
levels (004 Thm A.1) E[exp β̂(s)] = exp β(s) and Ẑ = exp β̂(start) is unbiased for Z; log Ẑ is
biased low (Jensen, 004 Cor. A.2). Ẑ is a polynomial in the arc weights whose coefficient for
each path is the product of its states' c; gradients treat the c as constants (the selection
held fixed), and since E[Π_path c] = 1 level by level, E[∇Ẑ] = ∇Z.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ..runtime.threads import cpu_threads
from .batch import LatticeBatch
from .selection import RDPConfig, level_groups, proposal_score, select_level
from .semiring import LogSemiring


@dataclass
class RandomizedPass:
    values: Tensor
    """(S,) β̂ (backward) or α̂ (forward), log space."""
    log_c: Tensor
    """(S,) log factor of each state's selection: 0 kept, -inf dropped (constant)."""
    log_z: Tensor
    """(B,) log Ẑ of each lattice."""


class _RandomizedBackward(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx, arc_weights, final_weights, batch: LatticeBatch, config: RDPConfig, generator, hint
    ):
        with cpu_threads(arc_weights.device):
            final = final_weights.index_select(0, batch.level_order)
            beta = final.clone()
            log_c = torch.full_like(beta, -math.inf)
            groups = level_groups(batch, config)
            hint = None if hint is None else hint.index_select(0, batch.level_order)
            w = arc_weights.index_select(0, batch.backward_arc_order)
            kept = []

            def select(lo, hi):
                score = proposal_score(config, beta[lo:hi], None if hint is None else hint[lo:hi])
                log_c[lo:hi] = select_level(score, groups[lo], config, generator)

            level0 = batch.backward_levels[0].states
            select(level0.start, level0.stop)
            for level in batch.backward_levels[1:]:
                lo, hi = level.states.start, level.states.stop
                keep = torch.isfinite(log_c.index_select(0, level.other)).nonzero().squeeze(1)
                arcs, seg, other = keep + level.arcs.start, level.segment[keep], level.other[keep]
                vals = w[arcs] + log_c[other] + beta[other]
                beta[lo:hi] = LogSemiring.segment_sum(vals, seg, beta[lo:hi])
                kept.append((level, arcs, seg, other))
                select(lo, hi)
        ctx.save_for_backward(w, final, beta, log_c)
        ctx.batch, ctx.kept = batch, kept
        out_log_c = log_c.index_select(0, batch.level_index)
        ctx.mark_non_differentiable(out_log_c)
        return beta.index_select(0, batch.level_index), out_log_c

    @staticmethod
    def backward(ctx, grad_beta, _grad_log_c):
        w, final, beta, log_c = ctx.saved_tensors
        batch = ctx.batch
        with cpu_threads(w.device):
            adj = grad_beta.index_select(0, batch.level_order)
            grad_w = torch.zeros_like(w)
            grad_final = torch.zeros_like(beta)
            for level, arcs, seg, other in reversed(ctx.kept):
                lo, hi = level.states.start, level.states.stop
                vals = w[arcs] + log_c[other] + beta[other]
                g_vals, g_init = LogSemiring.segment_grad(vals, seg, final[lo:hi], beta[lo:hi])
                g_vals *= adj[lo:hi].index_select(0, seg)
                grad_w[arcs] = g_vals
                grad_final[lo:hi] = g_init * adj[lo:hi]
                adj.index_add_(0, other, g_vals)
            dead = batch.backward_levels[0].states
            grad_final[dead] = torch.where(
                torch.isfinite(beta[dead]), adj[dead], torch.zeros_like(adj[dead])
            )
            grad_arcs = torch.empty_like(grad_w).index_copy_(0, batch.backward_arc_order, grad_w)
        return grad_arcs, grad_final.index_select(0, batch.level_index), None, None, None, None


def randomized_backward(
    batch: LatticeBatch,
    arc_weights: Tensor,
    final_weights: Optional[Tensor] = None,
    config: RDPConfig = RDPConfig(),
    generator: Optional[torch.Generator] = None,
    cheap_alpha: Optional[Tensor] = None,
) -> RandomizedPass:
    """β̂ (S,), differentiable in the weights with the selection fixed; ``cheap_alpha`` (S,) is
    α of the cheap arc-factored model (``nfst.dp.forward``), needed by ``alpha-beta``."""
    if final_weights is None:
        final_weights = batch.final_weights(arc_weights.dtype)
    hint = None if cheap_alpha is None else cheap_alpha.detach().to(arc_weights.dtype)
    beta, log_c = _RandomizedBackward.apply(
        arc_weights, final_weights, batch, config, generator, hint
    )
    return RandomizedPass(beta, log_c, beta[batch.start])


@torch.no_grad()
def randomized_forward(
    batch: LatticeBatch,
    arc_weights: Tensor,
    final_weights: Optional[Tensor] = None,
    config: RDPConfig = RDPConfig(),
    generator: Optional[torch.Generator] = None,
    cheap_beta: Optional[Tensor] = None,
) -> RandomizedPass:
    """α̂ (S,) by the same scheme top-down (α̂ of height h is complete once the higher levels
    are done; then that level is selected), and log Ẑ = log Σ_s c(s) α̂(s) final(s). The
    ``beta`` proposal scores by α̂ here; ``alpha-beta`` by α̂ times ``cheap_beta``. Not
    differentiable (as ``nfst.dp.forward``)."""
    if final_weights is None:
        final_weights = batch.final_weights(arc_weights.dtype)
    with cpu_threads(arc_weights.device):
        alpha = torch.full(
            (batch.num_states,), -math.inf, dtype=arc_weights.dtype, device=arc_weights.device
        )
        alpha[batch.level_index[batch.start]] = 0.0
        log_c = torch.full_like(alpha, -math.inf)
        lattice = batch.state_lattice.index_select(0, batch.level_order)
        groups = level_groups(batch, config)
        hint = (
            None
            if cheap_beta is None
            else cheap_beta.to(arc_weights.dtype).index_select(0, batch.level_order)
        )
        w = arc_weights.index_select(0, batch.forward_arc_order)
        for level in batch.forward_levels:
            lo, hi = level.states.start, level.states.stop
            if level.arcs.stop > level.arcs.start:
                keep = torch.isfinite(log_c.index_select(0, level.other)).nonzero().squeeze(1)
                arcs, seg, other = keep + level.arcs.start, level.segment[keep], level.other[keep]
                vals = w[arcs] + log_c[other] + alpha[other]
                alpha[lo:hi] = LogSemiring.segment_sum(vals, seg, alpha[lo:hi])
            score = proposal_score(config, alpha[lo:hi], None if hint is None else hint[lo:hi])
            log_c[lo:hi] = select_level(score, groups[lo], config, generator)
        final = final_weights.index_select(0, batch.level_order)
        terms = alpha + log_c + final
        peak = torch.full((batch.batch_size,), -math.inf, dtype=terms.dtype, device=terms.device)
        peak = peak.scatter_reduce(0, lattice, terms, "amax")
        peak = peak.clamp_min(torch.finfo(terms.dtype).min)
        total = torch.zeros_like(peak).index_add_(0, lattice, torch.exp(terms - peak[lattice]))
        log_z = torch.log(total) + peak
    return RandomizedPass(
        alpha.index_select(0, batch.level_index), log_c.index_select(0, batch.level_index), log_z
    )
