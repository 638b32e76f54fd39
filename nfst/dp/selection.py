"""Which states of a level randomized dynamic programming keeps (004 §3), and their factors.

Once the DP value (β̂ or α̂) of every state of a level is known, each lattice keeps K of its n
states of that level (``RDPConfig.budget``): the top K₁ by a proposal score, with factor c = 1,
and K₂ = K − K₁ drawn from the proposal q renormalised over the rest (the tail), with factor

    c(s) = (times s was drawn) / (K₂ q(s))    K₂ draws with replacement (004:6–8, Alg. 1), or
    c(s) = 1 / p(s), p(s) = min(1, K₂ q(s))   independent (Bernoulli) inclusion;

every other state gets c = 0 and drops out. E[c(s) | everything computed before the selection]
= 1 for every s, which is what makes the passes of ``nfst.dp.randomized`` unbiased. One level's
tail estimate has variance (Σ_i a_i²/q_i − (Σ_i a_i)²) / K₂ with replacement (004 Thm B.1,
Cor. B.2) and Σ_i a_i² (1−p_i)/p_i with Bernoulli inclusion, a_i = c-free contribution of tail
state i. A level whose live states (value > −∞) fit in the budget is kept whole (exact).

Proposals (log scores per state of the level): ``uniform``; ``beta``, the DP value itself;
``alpha-beta``, α of a cheap arc-factored model times β̂ (the state's share of Z if the cheap α
were exact). ``top_share = 1`` gives deterministic top-K (biased; a baseline only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from .batch import LatticeBatch

PROPOSALS = ("uniform", "beta", "alpha-beta")
SAMPLINGS = ("replacement", "bernoulli")


@dataclass
class RDPConfig:
    budget: float = 0.1
    """States kept per lattice and level: a fraction of the level's states if ≤ 1 (rounded
    up, at least one), else a count."""
    top_share: float = 0.9
    """Share of the K kept states taken deterministically (K₁ = ⌊top_share·K⌋); the other
    K₂ = K − K₁ are sampled from the tail. 1 gives deterministic (biased) top-K."""
    proposal: str = "beta"
    """``uniform``, ``beta`` or ``alpha-beta`` (needs the cheap model's α); see the module."""
    sampling: str = "replacement"
    """``replacement`` (K₂ draws, factor count/(K₂q)) or ``bernoulli`` (factor 1/p)."""

    def __post_init__(self):
        if self.proposal not in PROPOSALS or self.sampling not in SAMPLINGS:
            raise ValueError(
                f"RDPConfig: proposal must be one of {PROPOSALS} and sampling one "
                f"of {SAMPLINGS}, got {self.proposal!r} and {self.sampling!r}"
            )
        if not self.budget > 0 or not 0 <= self.top_share <= 1:
            raise ValueError(
                f"RDPConfig: budget must be > 0 and top_share in [0, 1], got "
                f"{self.budget} and {self.top_share}"
            )


@dataclass
class LevelGroups:
    """The lattices of one level: which group (lattice) each state is in, and per group its
    size, first index and budget K = K₁ + K₂. Fixed by the batch and the budget."""

    seg: Tensor
    """(n,) group of each state, non-decreasing."""
    counts: Tensor
    """(G,) states per group."""
    start: Tensor
    """(G,) index of each group's first state within the level."""
    k: Tensor
    """(G,) states kept per group."""
    k1: Tensor
    """(G,) of them taken deterministically."""


def level_groups(batch: LatticeBatch, config: RDPConfig) -> dict[int, LevelGroups]:
    """LevelGroups of every level, keyed by the level's first level-order index."""
    height = batch.height[batch.level_order].cpu().numpy()
    lattice = batch.state_lattice[batch.level_order].cpu().numpy()
    new = np.ones(len(height), dtype=bool)
    new[1:] = (height[1:] != height[:-1]) | (lattice[1:] != lattice[:-1])
    gid = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    counts = np.diff(np.append(first, len(height)))
    k = (
        np.maximum(np.ceil(counts * config.budget - 1e-9), 1)
        if config.budget <= 1
        else np.minimum(counts, int(config.budget))
    )
    k1 = np.floor(k * config.top_share)
    t = lambda a: torch.as_tensor(a, dtype=torch.long, device=batch.device)  # noqa: E731
    gid_t, first_t, counts_t, k_t, k1_t = t(gid), t(first), t(counts), t(k), t(k1)
    out = {}
    for level in batch.backward_levels:
        lo, hi = level.states.start, level.states.stop
        if hi > lo:
            g0, g1 = int(gid[lo]), int(gid[hi - 1]) + 1
            out[lo] = LevelGroups(
                gid_t[lo:hi] - g0, counts_t[g0:g1], first_t[g0:g1] - lo, k_t[g0:g1], k1_t[g0:g1]
            )
    return out


def select_level(
    score: Tensor,
    groups: LevelGroups,
    config: RDPConfig,
    generator: Optional[torch.Generator] = None,
) -> Tensor:
    """log c (n,) for the n states of one level: 0 for kept-whole or top-K₁ states, the log
    factor of sampled ones, -inf for dropped ones (see the module docstring).

    ``score`` (n,) log proposal, -inf where the state's value is 0 (never kept)."""
    n = len(score)
    seg, counts, start, k, k1 = groups.seg, groups.counts, groups.start, groups.k, groups.k1
    live = torch.isfinite(score)
    n_live = torch.zeros_like(counts).index_add_(0, seg, live.long())
    whole = n_live <= k  # every live state fits: exact
    if bool(whole.all()):
        return torch.where(live, torch.zeros_like(score), torch.full_like(score, -math.inf))
    k2 = k - k1
    # sort each lattice's states by score, best first (a stable sort by score, then by lattice)
    perm = torch.argsort(score, descending=True, stable=True)
    perm = perm[torch.argsort(seg[perm], stable=True)]
    s_score, s_seg, s_live = score[perm], seg[perm], live[perm]
    rank = torch.arange(n, device=score.device) - start[s_seg]
    s_whole = whole[s_seg]
    top = ~s_whole & (rank < k1[s_seg])
    tail = ~s_whole & ~top & s_live
    # q over each lattice's tail, renormalised (float64)
    t_score = s_score.double().masked_fill(~tail, -math.inf)
    peak = torch.full((len(counts),), -math.inf, dtype=torch.float64, device=score.device)
    peak = peak.scatter_reduce(0, s_seg, t_score, "amax").clamp_min(torch.finfo(torch.float64).min)
    p = torch.exp(t_score - peak[s_seg])
    q = p / torch.zeros_like(peak).index_add_(0, s_seg, p).clamp_min(1e-300)[s_seg]
    log_c = torch.full((n,), -math.inf, dtype=torch.float64, device=score.device)
    log_c[(s_whole & s_live) | top] = 0.0
    sampled = ~whole & (k2 > 0) & (n_live > k1)
    if config.sampling == "replacement":
        draws = torch.repeat_interleave(
            torch.arange(len(counts), device=score.device),
            torch.where(sampled, k2, torch.zeros_like(k2)),
        )
        if len(draws):
            cdf = torch.cumsum(q, 0)
            before = torch.where(start > 0, cdf[(start - 1).clamp(min=0)], torch.zeros_like(peak))
            last = torch.full_like(counts, -1).scatter_reduce(
                0, s_seg, torch.where(q > 0, torch.arange(n, device=score.device), -1), "amax"
            )
            u = torch.rand(
                len(draws), dtype=torch.float64, device=score.device, generator=generator
            )
            # inverse CDF; zero-probability entries never satisfy cdf > target
            hit = torch.searchsorted(
                cdf, before[draws] + u * (cdf[last[draws]] - before[draws]), right=True
            )
            hit = torch.minimum(hit, last[draws])
            times = torch.zeros(n, dtype=torch.float64, device=score.device).index_add_(
                0, hit, torch.ones_like(u)
            )
            chosen = times > 0
            log_c[chosen] = (
                torch.log(times[chosen])
                - torch.log(k2[s_seg[chosen]].double())
                - torch.log(q[chosen])
            )
    else:
        incl = torch.clamp(k2[s_seg].double() * q, max=1.0)
        u = torch.rand(n, dtype=torch.float64, device=score.device, generator=generator)
        chosen = tail & sampled[s_seg] & (u < incl)
        log_c[chosen] = -torch.log(incl[chosen])
    out = torch.empty_like(log_c)
    out[perm] = log_c
    return out.to(score.dtype)


def proposal_score(config: RDPConfig, value: Tensor, hint: Optional[Tensor]) -> Tensor:
    """Log proposal score of one level's states from their DP value (β̂ or α̂) and the cheap
    model's other-direction value ``hint`` (for ``alpha-beta``); -inf where value is -inf."""
    if config.proposal == "uniform":
        return torch.where(torch.isfinite(value), torch.zeros_like(value), value)
    if config.proposal == "beta":
        return value
    if hint is None:
        raise ValueError("the alpha-beta proposal needs the cheap model's values (hint)")
    return value + hint
