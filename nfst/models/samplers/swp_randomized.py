"""SWP on a randomized sub-lattice: 003 Algorithm 1 evaluated only on the arcs into the states
that randomized DP keeps (``nfst.dp.randomized``), so its O(arcs · d²) cost scales with the
budget; used by SWP when ``SamplerConfig.budget`` < 1.

Per level, bottom-up (003 Alg. 1 with the selection factors c of 004:17):

    e_{s→s'} = σ(U[1; e_ω; e_{s'}]),  w_{s→s'} = exp(w · e_{s→s'})          only for kept s'
    β̂(s)     = [s final] + Σ_{kept s'} w_{s→s'} c(s') β̂(s')
    q̂(s→s' | s) = w_{s→s'} c(s') β̂(s') / β̂(s),   e_s = Σ_{s'} q̂(s→s' | s) e_{s→s'}

then the level is selected, by the ``alpha-beta`` proposal: β̂(s) times α(s) of a cheap
arc-factored model, SWP's own arc weight with the destination's embedding left out,
w⁰_a = exp(w · σ(U_1 + U_mark e_ω)), whose exact passes cost O(arcs), not O(arcs · d²).
U_state e_s is computed for kept states only.

Full support: q̂ gives probability 0 to arcs into dropped states, so the sampler walks the
defensive mixture (Hesterberg 1995) q(·|s) = (1 − ε) q̂(·|s) + ε q⁰(·|s), with q⁰ the exact
transition probabilities of the cheap model (every legal choice positive on a trimmed lattice),
and q = q⁰ at states where β̂ = 0. Given the selection, q is a proper distribution over all paths
of the lattice, so importance weights p̃/q stay valid; the selection is fresh on every
``prepare`` (it draws from torch's global generator).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor

from ...dp.batch import LatticeBatch
from ...dp.passes import backward, forward, transition_log_probs
from ...dp.selection import RDPConfig, level_groups, proposal_score, select_level
from ...dp.semiring import LogSemiring
from ...runtime.threads import cpu_threads

DEFENSIVE = 0.01
"""ε, the cheap model's share of every step of the randomized SWP's walk."""


class RandomizedAlgorithm1(torch.autograd.Function):
    """Algorithm 1 on the kept sub-lattice. Inputs as ``swp.Algorithm1`` plus the config and
    the cheap model's α (S,). Outputs: log w (A,) (-inf on arcs not evaluated), log β̂ (S,),
    the evaluated arcs' embeddings e (M, d), their arc ids (M,) and log c (S,) (the last two
    constant). Kept states' e_s and U_state e_s live in a compact store (about budget · S rows),
    so memory, like time, scales with the budget."""

    @staticmethod
    def forward(
        ctx,
        mark_part: Tensor,
        U_state: Tensor,
        w: Tensor,
        batch: LatticeBatch,
        config: RDPConfig,
        cheap_alpha: Tensor,
    ):
        S, A, d = batch.num_states, batch.num_arcs, mark_part.shape[1]
        order = batch.backward_arc_order
        marks = batch.arc_mark[order]
        groups = level_groups(batch, config)
        hint = cheap_alpha[batch.level_order]
        beta = batch.final_weights(mark_part.dtype)[batch.level_order]
        log_c = torch.full_like(beta, -math.inf)
        slot = torch.full((S,), -1, dtype=torch.long, device=beta.device)  # row in the store
        store_e = mark_part.new_zeros(int(config.budget * S) + 64, d)
        store_p = torch.zeros_like(store_e)
        log_w = torch.full((A,), -math.inf, dtype=mark_part.dtype, device=mark_part.device)
        levels, used = [], 0

        def select(lo, hi):
            nonlocal store_e, store_p, used
            log_c[lo:hi] = select_level(
                proposal_score(config, beta[lo:hi], hint[lo:hi]), groups[lo], config
            )
            rows = torch.isfinite(log_c[lo:hi]).nonzero().squeeze(1) + lo
            if used + len(rows) > len(store_e):  # Bernoulli inclusion may exceed the budget
                grow = store_e.new_zeros(max(len(store_e), len(rows)), d)
                store_e, store_p = torch.cat([store_e, grow]), torch.cat([store_p, grow])
            slot[rows] = torch.arange(used, used + len(rows), device=rows.device)
            used += len(rows)
            return used - len(rows), used

        select(batch.backward_levels[0].states.start, batch.backward_levels[0].states.stop)
        for level in batch.backward_levels[1:]:
            lo, hi = level.states.start, level.states.stop
            keep = (slot[level.other] >= 0).nonzero().squeeze(1)
            arcs, seg, other = keep + level.arcs.start, level.segment[keep], level.other[keep]
            e = torch.sigmoid(mark_part[marks[arcs]] + store_p[slot[other]])  # line 4
            lw = e @ w  # line 5
            through = lw + log_c[other] + beta[other]
            b = LogSemiring.segment_sum(through, seg, beta[lo:hi])  # line 6
            qa = torch.exp(through - b[seg])  # line 7
            beta[lo:hi] = b
            log_w[arcs] = lw
            r0, r1 = select(lo, hi)
            src = slot[seg + lo] - r0  # the arc's source among this level's kept rows, or < 0
            m = src >= 0
            store_e[r0:r1] = e.new_zeros(r1 - r0, d).index_add_(  # line 8
                0, src[m], qa[m, None] * e[m]
            )
            store_p[r0:r1] = store_e[r0:r1] @ U_state.T
            levels.append((lo, hi, arcs, seg, other, src, m, r0, r1, e, qa))
        ctx.save_for_backward(mark_part, U_state, w, store_e[:used], slot)
        ctx.batch, ctx.levels = batch, levels
        kept_arcs = torch.cat([lv[2] for lv in levels]) if levels else order[:0]  # level order
        embed = torch.cat([lv[9] for lv in levels]) if levels else mark_part.new_zeros(0, d)
        out_c = log_c[batch.level_index]
        ctx.mark_non_differentiable(kept_arcs, out_c)
        return log_w[batch.backward_arc_rank], beta[batch.level_index], embed, kept_arcs, out_c

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_log_w, grad_beta, grad_embed, _grad_arcs, _grad_c):
        mark_part, U_state, w, store_e, slot = ctx.saved_tensors
        batch = ctx.batch
        order = batch.backward_arc_order
        g_beta = grad_beta[batch.level_order].clone()
        g_store_p = torch.zeros_like(store_e)
        g_log_w = grad_log_w[order]
        g_mark, g_U = torch.zeros_like(mark_part), torch.zeros_like(U_state)
        g_w = torch.zeros_like(w)
        marks = batch.arc_mark[order]
        end = len(grad_embed)
        with cpu_threads(batch.device):
            for lo, hi, arcs, seg, other, src, m, r0, r1, e, qa in reversed(ctx.levels):
                g_e_out, end = grad_embed[end - len(arcs) : end], end - len(arcs)
                g_U += g_store_p[r0:r1].T @ store_e[r0:r1]  # store_p = e_s U_stateᵀ
                g_e_s = torch.zeros_like(e)
                g_e_s[m] = (g_store_p[r0:r1] @ U_state)[src[m]]  # per arc: its source's ∂e_s
                g_q = (g_e_s * e).sum(1)  # e_s = Σ q e
                g_b = g_beta[lo:hi] - torch.zeros_like(g_beta[lo:hi]).index_add_(0, seg, g_q * qa)
                g_through = qa * (g_q + g_b[seg])
                g_beta.index_add_(0, other, g_through)  # through = log w + log c + β̂(s')
                g_lw = g_log_w[arcs] + g_through
                g_w += e.T @ g_lw  # log w = w · e
                g_pre = (g_e_out + qa[:, None] * g_e_s + g_lw[:, None] * w) * e * (1 - e)
                g_mark.index_add_(0, marks[arcs], g_pre)  # pre = mark_part[ω] + proj(s')
                g_store_p.index_add_(0, slot[other], g_pre)
        return g_mark, g_U, g_w, None, None, None


def defensive_table(hat: Tensor, cheap: Tensor, beta: Tensor, eps: float = DEFENSIVE) -> Tensor:
    """(S, D + 1) log q of the defensive mixture (module docstring) from the log q̂ table
    ``hat`` of the randomized weights (NaN in rows with β̂ = 0), the cheap model's ``cheap``
    (S, D + 1) (-inf exactly where a choice is illegal) and β̂ (S,)."""
    ok = torch.isfinite(hat)
    legal = torch.isfinite(cheap)
    base = torch.where(legal, cheap, torch.zeros_like(cheap))  # keeps gradients NaN-free
    mixed = torch.logaddexp(
        math.log1p(-eps) + torch.where(ok, hat, torch.zeros_like(hat)), math.log(eps) + base
    )
    base_only = torch.where(torch.isfinite(beta)[:, None], math.log(eps) + base, base)
    return torch.where(ok, mixed, torch.where(legal, base_only, torch.full_like(hat, -math.inf)))


def randomized_weights(
    mark_part: Tensor,
    U_state: Tensor,
    w: Tensor,
    batch: LatticeBatch,
    config: RDPConfig,
    arc_embed: bool = False,
) -> tuple[Tensor, Tensor, Optional[Tensor], tuple[Tensor, Tensor]]:
    """Randomized Algorithm 1 and the cheap model: log w + log c(dst) (A,) (-inf on arcs into
    dropped states), log β̂ (S,), e (A, d) in level order as Algorithm 1's if ``arc_embed``
    (0 on arcs not evaluated) else None, and the cheap model's (log q⁰ per arc (A,), log q⁰(STOP) (S,))."""
    with torch.no_grad():
        cheap_w = (torch.sigmoid(mark_part) @ w)[batch.arc_mark]
        final = batch.final_weights(cheap_w.dtype)
        cheap_beta = backward(batch, cheap_w, final)
        cheap_alpha = forward(batch, cheap_w)
        cheap = transition_log_probs(batch, cheap_w, final, cheap_beta)
    with cpu_threads(batch.device):
        log_w, beta, embed, arcs, log_c = RandomizedAlgorithm1.apply(
            mark_part, U_state, w, batch, config, cheap_alpha
        )
    full = (
        embed.new_zeros(batch.num_arcs, embed.shape[1]).index_copy(0, arcs, embed)
        if arc_embed
        else None
    )
    return log_w + log_c[batch.arc_dst], beta, full, cheap
