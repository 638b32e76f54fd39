"""Drawing paths from a mixture of samplers, weighted against the whole mixture.

With components q_1..q_C and shares α_c, k_c = α_c k of the k paths per pair come from q_c
(deterministic counts, largest shares rounded first), and every path z is weighted against

    r(z) = Σ_c (k_c / k) q_c(z)

whichever component drew it: multiple importance sampling with the balance heuristic (Veach
and Guibas 1995). Then (1/k) Σ_j p̃(z_j) / r(z_j) is an unbiased estimate of Z, and the
self-normalised weights are consistent, as long as some component covers the posterior. It
needs log q_c of every path under every component: each component scores the others' paths
by teacher forcing (``Sampler.score``), under the context it sampled with (the same
selection, for a randomized sampler; no second backward pass, for the exact ones).

Uses: the scorer's training paths (n-gram posterior and bootstrap sampler), a sampler's
training paths with a teacher (``nfst.train.defensive``), and the log Ẑ of the evaluation.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Optional, Sequence

import torch
from torch import Tensor

from ...dp.batch import LatticeBatch
from .base import Sampler


@dataclass
class MixtureDraw:
    arcs: Tensor
    """(B, k, L) long, -1 padded: the paths, component by component."""
    log_q: Tensor
    """(C, B, k): log q_c of every path under every component (with gradient for the
    components named in ``grad``)."""
    log_r: Tensor
    """(B, k): log of the mixture density r (no gradient)."""
    counts: tuple[int, ...]
    """k_c: paths per pair drawn from each component."""


def mixture_counts(shares: Sequence[float], k: int) -> tuple[int, ...]:
    """k_c summing to k, proportional to ``shares`` (positive, any total) by largest
    remainders; every component gets at least one path when k allows."""
    if k < 1 or not shares or min(shares) <= 0:
        raise ValueError(
            f"a mixture needs k ≥ 1 and positive shares, got k = {k}, shares = {list(shares)}"
        )
    total = sum(shares)
    exact = [s / total * k for s in shares]
    counts = [int(e) for e in exact]
    for c in sorted(range(len(shares)), key=lambda c: counts[c] - exact[c])[: k - sum(counts)]:
        counts[c] += 1
    while k >= len(counts) and 0 in counts:  # every component draws
        counts[counts.index(max(counts))] -= 1
        counts[counts.index(0)] += 1
    return tuple(counts)


def _pad(arcs: Sequence[Tensor]) -> Tensor:
    """(B, k_c, L_c) -1 padded arc tensors joined along k (padded to the longest L)."""
    L = max(t.shape[2] for t in arcs)
    return torch.cat(
        [torch.nn.functional.pad(t, (0, L - t.shape[2]), value=-1) for t in arcs], dim=1
    )


def mixture_draw(
    components: Sequence[Sampler],
    shares: Sequence[float],
    batch: LatticeBatch,
    k: int,
    generator: Optional[torch.Generator] = None,
    grad: Sequence[int] = (),
) -> MixtureDraw:
    """k paths per pair from the mixture of ``components`` (module docstring). Components
    whose index is in ``grad`` sample and score in their current mode with gradients; the
    others in eval mode without. When none trains (an evaluation), a component scores each
    distinct path of a lattice once (:func:`score_distinct`): good proposals repeat paths."""
    counts = mixture_counts(shares, k)
    drawn = []  # (component, its paths), in component order
    for c, (q, k_c) in enumerate(zip(components, counts)):
        if k_c:
            with _frozen(q, c in grad):
                drawn.append((c, q.sample(batch, k_c, generator)))
    arcs = _pad([paths.arcs for _, paths in drawn])
    log_q = []
    for c, q in enumerate(components):
        with _frozen(q, c in grad):
            own = next((paths.context for d, paths in drawn if d == c), None)
            if own is None:  # a component with no paths of its own
                own = q.prepare(batch)
            score = q.score if grad else partial(score_distinct, q)
            log_q.append(
                torch.cat(
                    [
                        paths.log_q if d == c else score(batch, paths.arcs, own)
                        for d, paths in drawn
                    ],
                    dim=1,
                )
            )
    log_q = torch.stack(log_q)
    log_shares = torch.log(torch.tensor(counts, dtype=log_q.dtype, device=log_q.device) / k)
    log_r = torch.logsumexp(log_q.detach() + log_shares[:, None, None], dim=0)
    return MixtureDraw(arcs, log_q, log_r, counts)


def score_distinct(q: Sampler, batch: LatticeBatch, arcs: Tensor, context=None) -> Tensor:
    """``q.score`` (B, k) of paths ``arcs`` (B, k, L) in eval mode, each distinct path of a
    lattice scored once and its log q given to every copy (equal to scoring each copy, to
    float rounding: the copies sit in other rows of the products)."""
    B, k, L = arcs.shape
    if not arcs.numel():
        return q.score(batch, arcs, context)
    lattice = torch.arange(B, device=arcs.device).repeat_interleave(k)
    keyed = torch.cat([lattice[:, None], arcs.reshape(B * k, L)], 1)
    distinct, index = torch.unique(keyed, dim=0, return_inverse=True)  # lattice-major
    owner = distinct[:, 0]
    per = torch.bincount(owner, minlength=B)  # every lattice has at least one path
    first = per.cumsum(0) - per
    slot = torch.arange(len(distinct), device=arcs.device) - first[owner]
    # each lattice's distinct paths, padded with its first one (a real path, scored in vain)
    laid = distinct[first, 1:][:, None].repeat(1, int(per.max()), 1)
    laid[owner, slot] = distinct[:, 1:]
    return q.score(batch, laid, context)[owner[index], slot[index]].view(B, k)


@contextmanager
def _frozen(sampler: Sampler, trained: bool):
    """Eval mode and no gradients for a component that is not being trained."""
    if trained:
        yield
        return
    mode = sampler.training
    sampler.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        sampler.train(mode)
