"""Semirings over log-space scores, as segment reductions for the batched passes.

A pass over a lattice batch needs only two operations of a semiring: ⊕ of a segment of values
together with a per-segment initial value (a state's STOP weight), and the derivative of that ⊕
with respect to each input. ⊗ is always + in log space.
"""

from __future__ import annotations

import torch


class Semiring:
    name: str

    @staticmethod
    def segment_sum(
        values: torch.Tensor, segment: torch.Tensor, init: torch.Tensor
    ) -> torch.Tensor:
        """total[i] = init[i] ⊕ (⊕ of values[j] with segment[j] = i); values, segment (N,),
        init (n,) -> (n,)."""
        raise NotImplementedError

    @staticmethod
    def segment_grad(
        values: torch.Tensor, segment: torch.Tensor, init: torch.Tensor, total: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(∂ total[segment[j]] / ∂ values[j] (N,), ∂ total[i] / ∂ init[i] (n,)); zero where
        the total is -inf."""
        raise NotImplementedError


class LogSemiring(Semiring):
    """(logsumexp, +): sums over paths; the derivative is the softmax within the segment."""

    name = "log"

    @staticmethod
    def segment_sum(values, segment, init):
        """Differentiable by autograd too (SWP's Algorithm 1 uses it so): the shift by the
        segment maximum is a constant, so it is computed without gradient."""
        with torch.no_grad():
            peak = init.scatter_reduce(0, segment, values, "amax")
            peak = peak.clamp_min(torch.finfo(peak.dtype).min)  # -inf segments stay -inf below
        total = torch.exp(init - peak).index_add(
            0, segment, torch.exp(values - peak.index_select(0, segment))
        )
        return torch.log(total) + peak

    @staticmethod
    def segment_grad(values, segment, init, total):
        # exp(-inf - -inf) is NaN: those entries have no path through them, so gradient 0
        grad_values = torch.exp(values - total.index_select(0, segment)).nan_to_num_(nan=0.0)
        return grad_values, torch.exp(init - total).nan_to_num_(nan=0.0)


class MaxSemiring(Semiring):
    """(max, +): the best path (Viterbi); the derivative is 1 for one maximiser per segment
    (the initial value first, then the lowest index)."""

    name = "max"

    @staticmethod
    def segment_sum(values, segment, init):
        return init.clone().scatter_reduce_(0, segment, values, "amax")

    @staticmethod
    def segment_grad(values, segment, init, total):
        init_wins = (init == total) & torch.isfinite(total)
        hit = (values == total.index_select(0, segment)) & torch.isfinite(values)
        hit &= ~init_wins.index_select(0, segment)
        index = torch.arange(len(values), device=values.device)
        first = torch.full(total.shape, len(values), dtype=torch.long, device=values.device)
        first.scatter_reduce_(0, segment[hit], index[hit], "amin")
        grad_values = torch.zeros_like(values)
        grad_values[first[first < len(values)]] = 1.0
        return grad_values, init_wins.to(values.dtype)


SEMIRINGS: dict[str, type[Semiring]] = {"log": LogSemiring, "max": MaxSemiring}
