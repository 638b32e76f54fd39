"""Distinct samples from any sampler: stochastic beam search and priority-sampling estimators.

Gumbel-top-k (Kool et al. 2019, "Stochastic beams and where to find them"): perturb every
complete path's log q with an independent Gumbel, G_ω = log q(ω) + Gumbel(0); the k paths with
the largest G are k draws *without replacement* from q. Stochastic beam search finds them
without enumerating the paths, for any autoregressive sampler (or SWP-style WFST sampler): a
prefix's key is the max of its completions' keys, which has law Gumbel(log q(prefix)), and the
children's keys are drawn conditioned on their max equalling the parent's,

    G_c = −log(exp(−G_parent) − exp(−Z) + exp(−G'_c)),   G'_c = log q(c) + Gumbel,  Z = max G',

kept top-K per lattice at every step (K = k + 1). So a step costs what K particles cost.

Estimators (priority sampling; Duffield et al. 2007, Kool et al. 2019 §4). With κ the
(k+1)-th largest key, path ω_i of the sample is included with probability, given κ,

    π_i = P(G_i > κ) = 1 − exp(−q_i e^{−κ}),

and Σ_{i ≤ k} f(ω_i) / π_i is unbiased for Σ_ω f(ω). When a lattice has at most k paths,
κ = −∞, every π = 1 and the sums are exact. Hence, with W_i = p̃(ω_i) / π_i:

    Ẑ = Σ_i W_i                                       unbiased for Z = Σ_ω p̃(ω)
    partial KL = Σ_i q_i (log q_i − log p̃_i) / π_i    unbiased for E_q[log q − log p̃] (003:7)
    E_p|z| ≈ Σ_i W_i |ω_i| / Σ_i W_i                  ratio of two unbiased sums (consistent)

Here :func:`log_z` and the weights (:func:`priority_log_weights`); the partial KL, E_p|z| and
the deduplicated ESS from them are ``nfst.evaluate.metrics``'s, as for draws with replacement.

Shapes: B lattices, k paths each, L the longest path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor

from ..dp.batch import LatticeBatch
from ..errors import PathTooLongError
from ..models.samplers.base import Sampler
from ..models.scorer import Scorer
from ..runtime.threads import cpu_threads
from .beam import backtrack
from .engine import Particles


@dataclass
class DistinctPaths:
    """k distinct paths per lattice in decreasing key order; slots past the number of paths a
    lattice has are empty (``valid`` False, arcs -1, log_q -inf)."""

    arcs: Tensor
    """(B, k, L) long, batch-global arc ids, -1 after the end."""
    marks: Tensor
    """(B, k, L) long, -1 after the end."""
    lengths: Tensor
    """(B, k) long."""
    log_q: Tensor
    """(B, k) float64: log q of each path, STOP included (-inf for an empty slot)."""
    keys: Tensor
    """(B, k) float64: the Gumbel keys G, decreasing."""
    threshold: Tensor
    """(B,) float64: κ, the (k+1)-th largest key; -inf when the lattice has ≤ k paths."""

    @property
    def valid(self) -> Tensor:
        return torch.isfinite(self.keys)

    @property
    def log_inclusion(self) -> Tensor:
        """(B, k) log π_i = log(1 − exp(−exp(log q_i − κ))); 0 when κ = −∞."""
        x = torch.exp(self.log_q - self.threshold[:, None])  # inf when κ = -inf
        return torch.log(-torch.expm1(-x))


def _conditioned(parent: Tensor, children: Tensor) -> Tensor:
    """Gumbels ``children`` (N, C) conditioned on their max being ``parent`` (N,) (Kool et
    al. 2019, App. B, the numerically stable form); -inf children stay -inf."""
    top = children.max(1, keepdim=True).values
    gap = (children - top).clamp(max=0.0)
    v = parent[:, None] - children + torch.log(-torch.expm1(gap))  # log1mexp(G' − Z)
    out = parent[:, None] - torch.nn.functional.softplus(v)
    return torch.where(torch.isneginf(children), children, out)


@torch.no_grad()
def sample_without_replacement(
    sampler: Sampler,
    batch: LatticeBatch,
    k: int,
    generator: Optional[torch.Generator] = None,
    max_length: Optional[int] = None,
    context: Any = None,
) -> DistinctPaths:
    """k distinct paths per lattice from ``sampler`` (all of them when fewer exist), by
    stochastic beam search with beam k + 1 (the extra one gives the threshold κ).
    ``context``: the sampler's ``prepare`` context to walk under (None: prepared here)."""
    sampler.check_batch(batch)
    with cpu_threads(batch.device):
        if context is None:
            context = sampler.prepare(batch)
        return _sbs(sampler, batch, k, generator, max_length, context)


def _gumbel(shape, generator, device) -> Tensor:
    u = torch.rand(shape, generator=generator, device=device, dtype=torch.float64)
    return -torch.log(-torch.log(u.clamp(min=1e-300)))


def _sbs(sampler, batch, k, generator, max_length, context) -> DistinctPaths:
    B, K, dev, f64 = batch.batch_size, k + 1, batch.device, torch.float64
    N = B * K
    cap = sampler._cap(batch, max_length)
    C = batch.out_arcs.shape[1] + 1  # columns: out-arcs, then STOP
    group = torch.arange(B, device=dev)[:, None] * K
    walk = sampler.start(batch, context, torch.arange(B, device=dev).repeat_interleave(K))
    first = torch.arange(N, device=dev) % K == 0  # one root per lattice to begin with
    phi = torch.where(first, 0.0, float("-inf")).to(f64)
    key = torch.where(first, _gumbel((N,), generator, dev), float("-inf"))
    parents, taken = [], []
    for _ in range(cap + 1):
        alive = walk.alive & torch.isfinite(key)
        lq = sampler.log_probs(batch, context, walk).to(f64)  # (N, C)
        child_phi = phi[:, None] + lq
        child_key = _conditioned(key, child_phi + _gumbel(child_phi.shape, generator, dev))
        # a complete path (or an empty slot) has one candidate: itself, in the STOP column
        own = torch.full_like(child_key, float("-inf"))
        own[:, C - 1] = key
        own_phi = torch.full_like(child_phi, float("-inf"))
        own_phi[:, C - 1] = phi
        cand_key = torch.where(alive[:, None], child_key, own).view(B, K * C)
        cand_phi = torch.where(alive[:, None], child_phi, own_phi).view(B, K * C)
        key, flat = cand_key.topk(K, dim=1)
        phi = cand_phi.gather(1, flat).view(N)
        key = key.view(N)
        index = (group + flat // C).view(N)
        col = (flat % C).view(N)
        moving = alive[index] & (col < C - 1) & torch.isfinite(key)
        walk = walk.select(index)
        arc = torch.where(
            moving, batch.out_arcs[walk.state, col.clamp(max=C - 2)], torch.full_like(col, -1)
        )
        walk = sampler.advance(batch, context, walk, torch.where(moving, col, C - 1))
        parents.append((flat // C))
        taken.append(arc.view(B, K))
        if not bool((walk.alive & torch.isfinite(key)).any()):
            break
    else:
        raise PathTooLongError(f"stochastic beam search: a path exceeded max_length={cap} marks")

    path_arcs = backtrack(taken, parents)[:, :k]
    lengths = (path_arcs >= 0).sum(-1)
    arcs = path_arcs[..., : int(lengths.max()) if lengths.numel() else 0]
    marks = batch.marks_of(arcs)
    keys = key.view(B, K)
    return DistinctPaths(
        arcs=arcs,
        marks=marks,
        lengths=lengths,
        log_q=phi.view(B, K)[:, :k],
        keys=keys[:, :k],
        threshold=keys[:, k],
    )


# -- estimators -------------------------------------------------------------------------------
def priority_log_weights(paths: DistinctPaths, log_p: Tensor) -> Tensor:
    """(B, k) log W_i = log p̃(ω_i) − log π_i (-inf for empty slots): Σ_i W_i is unbiased
    for Z, and W normalised is the weighted-particle view of the sample."""
    return torch.where(paths.valid, log_p.to(torch.float64) - paths.log_inclusion, float("-inf"))


def log_z(paths: DistinctPaths, log_p: Tensor) -> Tensor:
    """(B,) log Ẑ, Ẑ = Σ_i p̃(ω_i) / π_i (unbiased for Z)."""
    return torch.logsumexp(priority_log_weights(paths, log_p), 1)


@dataclass
class DistinctParticles(Particles):
    """Stochastic-beam-search draws as weighted particles: log_weights = log W_i."""

    log_z: Tensor = None
    """(B,) log Ẑ = log Σ_i W_i (unbiased in Ẑ)."""
    sample: DistinctPaths = None
    """The draws themselves (log q, keys, κ), for the other estimators."""


@torch.no_grad()
def distinct_particles(
    sampler: Sampler,
    scorer: Scorer,
    batch: LatticeBatch,
    k: int,
    generator: Optional[torch.Generator] = None,
    context: Any = None,
) -> DistinctParticles:
    """k distinct paths per lattice from ``sampler``, scored by ``scorer`` (over each lattice's
    prefix tree: one call per distinct prefix, empty slots unscored) and weighted by priority
    sampling; ``context`` as in :func:`sample_without_replacement`."""
    paths = sample_without_replacement(sampler, batch, k, generator, context=context)
    log_p = torch.full(paths.log_q.shape, float("-inf"), dtype=torch.float64, device=batch.device)
    valid = paths.valid
    lattice = torch.arange(batch.batch_size, device=batch.device)[:, None].expand_as(valid)
    log_p[valid] = scorer.log_prob_tree(
        paths.marks[valid], paths.lengths[valid], lattice[valid]
    ).double()
    log_w = priority_log_weights(paths, log_p)
    return DistinctParticles(
        arcs=paths.arcs,
        marks=paths.marks,
        lengths=paths.lengths,
        log_p=log_p,
        log_weights=log_w,
        log_z=torch.logsumexp(log_w, 1),
        sample=paths,
    )


def inclusive_kl_loss(
    sampler: Sampler,
    scorer: Scorer,
    batch: LatticeBatch,
    k: int,
    generator: Optional[torch.Generator] = None,
) -> Tensor:
    """−Σ_i w̄_i log q_φ(ω_i), averaged over pairs, from k distinct paths with w̄ the normalised
    priority weights (detached): the inclusive-KL gradient of 003 §4 without duplicates. log q
    is re-scored with gradients, under the context the paths were drawn with (the same
    selection, for a randomized sampler); empty slots (fewer paths than k) weigh 0."""
    context = sampler.prepare(batch)
    p = distinct_particles(sampler, scorer, batch, k, generator, context)
    arcs = torch.where(p.sample.valid[..., None], p.arcs, p.arcs[:, :1])
    log_q = sampler.score(batch, arcs, context)
    return -(p.weights.to(log_q.dtype) * log_q).sum(1).mean()
