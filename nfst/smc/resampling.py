"""Resampling schemes for sequential Monte Carlo (000 §4 and fn. 9; docs/design.md §7).

Every scheme is a function ``(log_weights (B, M), generator) -> ancestors (B, M) long``: row b
holds the unnormalised log weights of the M particles of one group (one lattice), and particle
m of the new population is a copy of old particle ``ancestors[b, m]``. All four are unbiased:
the expected number of copies of particle m is M·w̄_m, with w̄ the normalised weights. They
differ in variance (multinomial > residual, stratified > systematic, roughly; Douc & Cappé
2005). Ancestors come out sorted within each row, so copies of one particle are adjacent.

Add a scheme with ``@register_resampler("name")``; the SMC engine looks it up in
:data:`RESAMPLERS` by name.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import torch

Resampler = Callable[[torch.Tensor, Optional[torch.Generator]], torch.Tensor]
RESAMPLERS: dict[str, Resampler] = {}


def register_resampler(name: str) -> Callable[[Resampler], Resampler]:
    def add(fn: Resampler) -> Resampler:
        RESAMPLERS[name] = fn
        return fn

    return add


def get_resampler(name: str) -> Resampler:
    try:
        return RESAMPLERS[name]
    except KeyError:
        raise ValueError(
            f"unknown resampling scheme {name!r}; known: {', '.join(sorted(RESAMPLERS))}"
        ) from None


def normalise(log_weights: torch.Tensor) -> torch.Tensor:
    """(B, M) normalised weights w̄ = softmax(log w) per row; a row of all -inf (every
    particle impossible) becomes uniform rather than NaN."""
    dead = torch.isneginf(log_weights).all(dim=1, keepdim=True)
    return torch.softmax(log_weights.masked_fill(dead, 0.0), dim=1)


def ess(log_weights: torch.Tensor) -> torch.Tensor:
    """Effective sample size (Σw)² / Σw² of each row of (…, M) log weights, shape (…,);
    M for equal weights, 1 for one dominant particle, 0 if every weight is zero."""
    out = torch.exp(2 * torch.logsumexp(log_weights, -1) - torch.logsumexp(2 * log_weights, -1))
    return out.nan_to_num(nan=0.0)


def _invert_cdf(weights: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """Ancestor of each point in [0, 1): the m with cdf[m-1] <= point < cdf[m] (B, M)."""
    cdf = weights.cumsum(dim=1)
    idx = torch.searchsorted(cdf, points.contiguous(), right=True)
    return idx.clamp_(max=weights.shape[1] - 1)  # cdf[-1] may round to just below 1


def _counts_to_ancestors(counts: torch.Tensor) -> torch.Tensor:
    """(B, M) offspring counts summing to M per row -> (B, M) sorted ancestor indices."""
    M = counts.shape[1]
    slots = torch.arange(M, device=counts.device).expand_as(counts).contiguous()
    return torch.searchsorted(counts.cumsum(dim=1), slots, right=True)


@register_resampler("multinomial")
def multinomial(
    log_weights: torch.Tensor, generator: Optional[torch.Generator] = None
) -> torch.Tensor:
    """M independent draws from w̄ (000 §4): offspring counts ~ Multinomial(M, w̄)."""
    w = normalise(log_weights)
    draws = torch.multinomial(w, w.shape[1], replacement=True, generator=generator)
    return draws.sort(dim=1).values


@register_resampler("stratified")
def stratified(
    log_weights: torch.Tensor, generator: Optional[torch.Generator] = None
) -> torch.Tensor:
    """One uniform point in each stratum [m/M, (m+1)/M): u_m = (m + U_m) / M."""
    w = normalise(log_weights)
    B, M = w.shape
    u = torch.rand(B, M, generator=generator, device=w.device, dtype=w.dtype)
    points = (torch.arange(M, device=w.device, dtype=w.dtype) + u) / M
    return _invert_cdf(w, points)


@register_resampler("systematic")
def systematic(
    log_weights: torch.Tensor, generator: Optional[torch.Generator] = None
) -> torch.Tensor:
    """One shared uniform offset for the whole comb: u_m = (m + U) / M. Each particle gets
    ⌊M w̄_m⌋ or ⌈M w̄_m⌉ copies."""
    w = normalise(log_weights)
    B, M = w.shape
    u = torch.rand(B, 1, generator=generator, device=w.device, dtype=w.dtype)
    points = (torch.arange(M, device=w.device, dtype=w.dtype) + u) / M
    return _invert_cdf(w, points)


@register_resampler("residual")
def residual(
    log_weights: torch.Tensor, generator: Optional[torch.Generator] = None
) -> torch.Tensor:
    """⌊M w̄_m⌋ copies of each particle deterministically, then the R = M − Σ⌊M w̄⌋ remaining
    slots by multinomial draws from the residuals M w̄_m − ⌊M w̄_m⌋."""
    w = normalise(log_weights)
    M = w.shape[1]
    scaled = w * M
    counts = scaled.floor().long()
    rest = scaled - counts
    # (B,) residual draws per row. Σ⌊M w̄⌋ can be 0 (every M w̄_m just below 1, e.g. equal
    # weights at M = 49 rounding to 0.99999…), so left may be M itself; the clamp guards
    # against weights whose rounded sum exceeds 1.
    left = (M - counts.sum(dim=1)).clamp(0, M)
    # Draw M residual slots per row (enough for any row) and keep the first `left`; rows
    # with nothing left get uniform residuals so that multinomial has a valid row.
    rest = torch.where(left[:, None] > 0, rest, torch.ones_like(rest))
    draws = torch.multinomial(rest, M, replacement=True, generator=generator)
    keep = torch.arange(draws.shape[1], device=w.device) < left[:, None]
    counts.scatter_add_(1, draws, keep.long())
    return _counts_to_ancestors(counts)


def log_mean_exp(log_weights: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """log((1/M) Σ exp(log w)) along ``dim``: the factor a resampling step adds to log Ẑ."""
    return torch.logsumexp(log_weights, dim) - math.log(log_weights.shape[dim])
