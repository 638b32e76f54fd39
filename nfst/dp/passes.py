"""Dynamic programming on lattice batches: backward and forward passes, arc posteriors, exact
sampling and path counting, in any semiring of ``nfst.dp.semiring``.

Weights are log-space: ``arc_weights`` (A,) scores each arc, ``final_weights`` (S,) scores
STOP at each state (-inf where STOP is illegal). The backward pass (003:5, Alg. 1)

    β(s) = ⊕( final(s), ⊕_{a: s→s'} w_a ⊗ β(s') )

runs one vectorised step per state height. It is a custom autograd function: its gradient is a
reverse (outside) pass over the same levels, so memory stays O(S + A) and arcs of weight -inf
get gradient 0, never NaN. For the log semiring ∂ log Z / ∂ w_a is the posterior of arc a.
"""

from __future__ import annotations

from typing import Optional

import torch

from ..runtime.threads import cpu_threads
from .batch import LatticeBatch
from .semiring import LogSemiring, Semiring


def _check(batch: LatticeBatch, arc_weights: torch.Tensor, final_weights: torch.Tensor) -> None:
    if arc_weights.shape != (batch.num_arcs,) or final_weights.shape != (batch.num_states,):
        raise ValueError(
            f"expected arc weights ({batch.num_arcs},) and final weights "
            f"({batch.num_states},), got {tuple(arc_weights.shape)} and "
            f"{tuple(final_weights.shape)}"
        )


class _Backward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, arc_weights, final_weights, batch: LatticeBatch, semiring: type[Semiring]):
        with cpu_threads(arc_weights.device):
            # level order: dead ends (height 0) already hold their final β = final weight
            final = final_weights.index_select(0, batch.level_order)
            beta = final.clone()
            w = arc_weights.index_select(0, batch.backward_arc_order)
            for level in batch.backward_levels[1:]:
                lo, hi = level.states.start, level.states.stop
                vals = w[level.arcs] + beta.index_select(0, level.other)
                beta[lo:hi] = semiring.segment_sum(vals, level.segment, beta[lo:hi])
        ctx.save_for_backward(w, final, beta)
        ctx.batch, ctx.semiring = batch, semiring
        return beta.index_select(0, batch.level_index)

    @staticmethod
    def backward(ctx, grad_beta):
        w, final, beta = ctx.saved_tensors
        batch, semiring = ctx.batch, ctx.semiring
        with cpu_threads(w.device):
            adj = grad_beta.index_select(0, batch.level_order)  # ∂L/∂β(s), completed top-down
            grad_w = torch.zeros_like(w)
            grad_final = torch.zeros_like(beta)
            for level in reversed(batch.backward_levels[1:]):
                lo, hi = level.states.start, level.states.stop
                vals = w[level.arcs] + beta.index_select(0, level.other)
                g_vals, g_init = semiring.segment_grad(
                    vals, level.segment, final[lo:hi], beta[lo:hi]
                )
                g_vals *= adj[lo:hi].index_select(0, level.segment)
                grad_w[level.arcs] = g_vals
                grad_final[lo:hi] = g_init * adj[lo:hi]
                adj.index_add_(0, level.other, g_vals)
            dead = batch.backward_levels[0].states  # height 0: β(s) = final(s)
            grad_final[dead] = torch.where(
                torch.isfinite(beta[dead]), adj[dead], torch.zeros_like(adj[dead])
            )
            grad_arcs = torch.empty_like(grad_w).index_copy_(0, batch.backward_arc_order, grad_w)
        return grad_arcs, grad_final.index_select(0, batch.level_index), None, None


def backward(
    batch: LatticeBatch,
    arc_weights: torch.Tensor,
    final_weights: Optional[torch.Tensor] = None,
    semiring: type[Semiring] = LogSemiring,
) -> torch.Tensor:
    """β for every state, shape (S,); ``β[batch.start]`` is each lattice's total log Z."""
    if final_weights is None:
        final_weights = batch.final_weights(arc_weights.dtype)
    _check(batch, arc_weights, final_weights)
    return _Backward.apply(arc_weights, final_weights, batch, semiring)


@torch.no_grad()
def forward(
    batch: LatticeBatch, arc_weights: torch.Tensor, semiring: type[Semiring] = LogSemiring
) -> torch.Tensor:
    """α for every state, shape (S,): ⊕ over paths from the start to the state. Not
    differentiable; gradients come from ``backward``."""
    with cpu_threads(arc_weights.device):
        alpha = torch.full(
            (batch.num_states,), float("-inf"), dtype=arc_weights.dtype, device=arc_weights.device
        )
        alpha[batch.level_index[batch.start]] = 0.0
        w = arc_weights.index_select(0, batch.forward_arc_order)
        for level in batch.forward_levels:
            lo, hi = level.states.start, level.states.stop
            if level.arcs.stop > level.arcs.start:
                vals = w[level.arcs] + alpha.index_select(0, level.other)
                alpha[lo:hi] = semiring.segment_sum(vals, level.segment, alpha[lo:hi])
    return alpha.index_select(0, batch.level_index)


def log_partition(
    batch: LatticeBatch,
    arc_weights: torch.Tensor,
    final_weights: Optional[torch.Tensor] = None,
    semiring: type[Semiring] = LogSemiring,
) -> torch.Tensor:
    """(B,) total weight of each lattice: log Z (log semiring) or the best path (max)."""
    return backward(batch, arc_weights, final_weights, semiring)[batch.start]


def arc_posteriors(
    batch: LatticeBatch, arc_weights: torch.Tensor, final_weights: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """(A,) posterior probability of each arc, exp(α(src) + w + β(dst) − log Z)."""
    if final_weights is None:
        final_weights = batch.final_weights(arc_weights.dtype)
    with torch.no_grad():
        beta = backward(batch, arc_weights, final_weights)
        alpha = forward(batch, arc_weights)
        log_z = beta[batch.start][batch.arc_lattice]
        post = torch.exp(alpha[batch.arc_src] + arc_weights + beta[batch.arc_dst] - log_z)
    return torch.nan_to_num(post, nan=0.0)


def transition_log_probs(
    batch: LatticeBatch,
    arc_weights: torch.Tensor,
    final_weights: Optional[torch.Tensor] = None,
    beta: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Locally normalised path distribution of a weighted lattice (003 Alg. 1, line 6):
    log q(a | src) = w_a + β(dst) − β(src) for each arc (A,), and log q(STOP | s) (S,)."""
    if final_weights is None:
        final_weights = batch.final_weights(arc_weights.dtype)
    if beta is None:
        beta = backward(batch, arc_weights, final_weights)
    arc_lp = arc_weights + beta[batch.arc_dst] - beta[batch.arc_src]
    stop_lp = final_weights - beta
    return arc_lp, stop_lp


def transition_table(
    batch: LatticeBatch, arc_log_probs: torch.Tensor, stop_log_probs: torch.Tensor
) -> torch.Tensor:
    """(S, D + 1) log q of each column of ``batch.out_arcs`` (-inf for padding), STOP last:
    the form every walker over the lattice reads its choices from."""
    arcs = batch.out_arcs
    per_arc = arc_log_probs[arcs.clamp(min=0)].masked_fill(arcs < 0, float("-inf"))
    return torch.cat([per_arc, stop_log_probs[:, None]], dim=1)


def sample_paths(
    batch: LatticeBatch,
    arc_log_probs: torch.Tensor,
    stop_log_probs: torch.Tensor,
    k: int,
    generator: Optional[torch.Generator] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw k paths per lattice from locally normalised transition probabilities.

    Returns ``arcs`` (B, k, L) long, the arcs taken, -1 after the path ends, and ``log_prob``
    (B, k), the log probability of each path (STOP included).
    """
    table = transition_table(batch, arc_log_probs, stop_log_probs)
    stop_col = table.shape[1] - 1
    state = batch.start.repeat_interleave(k)  # (B·k,)
    alive = torch.ones_like(state, dtype=torch.bool)
    log_prob = torch.zeros(len(state), dtype=table.dtype, device=table.device)
    taken = []
    for _ in range(batch.max_height + 1):
        logits = table[state]
        choice = torch.multinomial(torch.softmax(logits, dim=1), 1, generator=generator).squeeze(1)
        log_prob = log_prob + torch.where(
            alive, logits.gather(1, choice[:, None]).squeeze(1), torch.zeros_like(log_prob)
        )
        stopping = choice == stop_col
        arc = torch.where(
            alive & ~stopping,
            batch.out_arcs[state, choice.clamp(max=stop_col - 1)],
            torch.full_like(state, -1),
        )
        taken.append(arc)
        alive = alive & ~stopping
        state = torch.where(alive, batch.arc_dst[arc.clamp(min=0)], state)
        if not alive.any():
            break
    arcs = torch.stack(taken, dim=1).view(batch.batch_size, k, -1)
    return arcs, log_prob.view(batch.batch_size, k)


def sample(
    batch: LatticeBatch,
    arc_weights: torch.Tensor,
    k: int,
    final_weights: Optional[torch.Tensor] = None,
    generator: Optional[torch.Generator] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact samples from p(path) ∝ exp(Σ arc weights + final weight): see ``sample_paths``."""
    with torch.no_grad():
        arc_lp, stop_lp = transition_log_probs(batch, arc_weights, final_weights)
    return sample_paths(batch, arc_lp, stop_lp, k, generator)


def log_path_count(batch: LatticeBatch, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """(B,) log of the number of paths of each lattice (see ``Lattice.num_paths`` for exact)."""
    return log_partition(batch, torch.zeros(batch.num_arcs, dtype=dtype, device=batch.device))
