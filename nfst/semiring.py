"""Semirings over log-space scores, as segment reductions for the batched passes.

A pass over a lattice batch only needs two operations of a semiring (⊕ over a segment of
values, and the derivative of that ⊕ with respect to each value); ⊗ is always + in log space.
"""

from __future__ import annotations

import torch

NEG_INF = float("-inf")


class Semiring:
    name: str

    @staticmethod
    def segment_sum(values: torch.Tensor, segment: torch.Tensor, n: int) -> torch.Tensor:
        """⊕ of ``values`` (N,) grouped by ``segment`` (N,) in [0, n): returns (n,)."""
        raise NotImplementedError

    @staticmethod
    def segment_grad(values: torch.Tensor, segment: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
        """∂ total[segment[i]] / ∂ values[i], shape (N,); zero where the total is -inf."""
        raise NotImplementedError


class LogSemiring(Semiring):
    """(logsumexp, +): sums over paths; the derivative is the softmax within the segment."""

    name = "log"

    @staticmethod
    def segment_sum(values, segment, n):
        peak = torch.full((n,), NEG_INF, dtype=values.dtype, device=values.device)
        peak = peak.scatter_reduce(0, segment, values, "amax")
        peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
        total = torch.zeros(n, dtype=values.dtype, device=values.device)
        total = total.index_add(0, segment, torch.exp(values - peak[segment]))
        return torch.log(total) + peak

    @staticmethod
    def segment_grad(values, segment, total):
        at = total[segment]
        return torch.where(torch.isfinite(at), torch.exp(values - at), torch.zeros_like(values))


class MaxSemiring(Semiring):
    """(max, +): the best path (Viterbi); the derivative picks one maximiser per segment."""

    name = "max"

    @staticmethod
    def segment_sum(values, segment, n):
        peak = torch.full((n,), NEG_INF, dtype=values.dtype, device=values.device)
        return peak.scatter_reduce(0, segment, values, "amax")

    @staticmethod
    def segment_grad(values, segment, total):
        hit = (values == total[segment]) & torch.isfinite(values)
        index = torch.arange(len(values), device=values.device)
        first = torch.full_like(total, len(values), dtype=torch.long)
        first = first.scatter_reduce(0, segment[hit], index[hit], "amin")
        grad = torch.zeros_like(values)
        chosen = first[first < len(values)]
        grad[chosen] = 1.0
        return grad


SEMIRINGS: dict[str, type[Semiring]] = {"log": LogSemiring, "max": MaxSemiring}
