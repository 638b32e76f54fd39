"""Lookahead C_t: an estimate of the log-prob-to-go of a prefix (000 §2–3; docs/design.md §7).

Particle smoothing targets, after t marks, the prefix distribution

    p_t(ω_{≤t}) ∝ p̃_θ(ω_{≤t}) · exp(C_t),     C_t ≈ H_t = log Σ_{ω_{>t}} p̃_θ(ω_{>t} | ω_{≤t})   (000:10, 23)

and C at a complete path is 0 (000:25). The exact H_t makes p_t the true marginal of the
posterior, so resampling by p_t keeps exactly the prefixes worth keeping; C = 0 is particle
filtering. A lookahead sees a prefix as the lattice state s it reached, its last mark and its
length — the view every ``Lookahead`` implements in :meth:`Lookahead.values`. The lattice is
determinised on marks, so s already fixes the set of possible futures (and, for an
arc-factored scorer, H_t exactly: C = log β(s)); last mark and length stand in for the rest of
the prefix.

- :class:`ZeroLookahead`: C = 0 (particle filtering).
- :class:`BetaLookahead`: C = scale · log β(s) in any weighted lattice, e.g. an arc-factored
  scorer's weights (exact, :meth:`BetaLookahead.exact`) or SWP's arc weights (003:5).
- :class:`LearnedLookahead`: c_φ(s_t, s̄_t) (000:25), a learned arc-factored log β_φ(s) plus a
  small MLP correction; trained by regression on particles (:meth:`regression_loss`) or, as in
  000 §5, through the proposal it defines (:class:`LookaheadProposal`, trained with the
  objectives of ``nfst.train.nasmc``).

:class:`LookaheadProposal` is 000's sampler (000:26): q(ω_t | ω_{<t}) ∝ p_θ(ω_t | ω_{<t}) ·
exp(C_t) over the lattice's legal choices. With C = 0 it is the bootstrap proposal of particle
filtering; with the exact C it is the exact posterior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
from torch import Tensor, nn

from ..dp.batch import LatticeBatch
from ..dp.passes import backward
from ..models.samplers.base import Sampler, Walk
from ..models.samplers.record import WalkRecord
from ..models.scorer import ArcFactoredScorer, Scorer

WeightFn = Callable[[LatticeBatch], tuple[Tensor, Tensor]]


class Lookahead(nn.Module):
    """Base class. ``prepare`` computes a per-batch context once; ``values`` gives C for
    prefixes described by (state, last mark, length), tensors of any common shape."""

    def prepare(self, batch: LatticeBatch) -> Any:
        return None

    def values(
        self, batch: LatticeBatch, context: Any, state: Tensor, last_mark: Tensor, length: Tensor
    ) -> Tensor:
        raise NotImplementedError

    def forward(self, batch: LatticeBatch, context: Any, walk: Walk) -> Tensor:
        """(N,) C_t of each walker's prefix (meaningless for walkers that stopped: C = 0
        at completion is the SMC engine's business)."""
        return self.values(batch, context, walk.state, walk.last_mark, walk.length)


class ZeroLookahead(Lookahead):
    """C = 0: particle filtering."""

    def values(self, batch, context, state, last_mark, length):
        return torch.zeros(state.shape, device=state.device)


class BetaLookahead(Lookahead):
    """C(s) = scale · log β(s), β the backward value (003:5) of the weighted lattice given by
    ``weights(batch) -> (arc log weights (A,), STOP log weights (S,))``."""

    def __init__(self, weights: WeightFn, scale: float = 1.0):
        super().__init__()
        self.weights, self.scale = weights, scale

    @classmethod
    def exact(cls, scorer: ArcFactoredScorer) -> "BetaLookahead":
        """The true log-prob-to-go of an arc-factored scorer: C_t = H_t (000:23)."""
        return cls(lambda batch: (scorer.arc_weights(batch), scorer.final_weights(batch)))

    @classmethod
    def from_sampler(cls, sampler: Sampler, scale: float = 1.0) -> "BetaLookahead":
        """SWP's log β(s) (003:5, Alg. 1): any sampler with ``arc_log_weights(batch)``, as in
        ``nfst.models.samplers.swp``. Its β is not in p̃'s units (q only fixes β up to a potential
        on non-final states), hence ``scale``."""

        def weights(batch: LatticeBatch) -> tuple[Tensor, Tensor]:
            log_w = sampler.arc_log_weights(batch)[0]
            return log_w, batch.final_weights(log_w.dtype)

        return cls(weights, scale)

    def prepare(self, batch: LatticeBatch) -> Tensor:
        arc_w, final_w = self.weights(batch)
        return self.scale * backward(batch, arc_w, final_w)  # (S,)

    def values(self, batch, context, state, last_mark, length):
        return context[state]


@dataclass
class LearnedContext:
    log_beta: Tensor
    """(S,) log β_φ(s) of the learned arc-factored lattice."""
    summary: Tensor
    """(S, 4) s̄(s): log β_φ(s), x and y left to align, height; roughly unit scale."""


class LearnedLookahead(Lookahead):
    """c_φ(s_t, s̄_t) = log β_φ(s) + MLP([e(last mark); length; s̄(s)]) (000:25).

    s̄(s), the right-to-left summary, comes from the lattice: log β_φ(s) under learned
    per-mark log weights u[m] (and u[EOS] for STOP), how much of x and y is left to align
    from s, and s's height. The prefix enters through its last mark and length. The MLP's
    output layer starts at zero, so an untrained head is the arc-factored estimate log β_φ;
    for an arc-factored scorer u = θ and a zero MLP is exact.
    """

    scale = 10.0
    """Counts and log β are divided by this before the MLP."""

    def __init__(self, vocab_size: int, d: int = 32, hidden: int = 64):
        super().__init__()
        self.vocab_size = vocab_size
        # Start as a uniform unigram over Ω ∪ {EOS}: a sensible per-mark cost.
        self.mark_weights = nn.Parameter(torch.full((vocab_size + 1,), -math.log(vocab_size + 1)))
        self.embed = nn.Embedding(vocab_size + 1, d)  # marks, then BOS
        self.mlp = nn.Sequential(nn.Linear(d + 5, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        nn.init.zeros_(self.mlp[-1].weight)
        nn.init.zeros_(self.mlp[-1].bias)

    def prepare(self, batch: LatticeBatch) -> LearnedContext:
        u = self.mark_weights
        final = u[self.vocab_size].expand(batch.num_states).masked_fill(~batch.final, float("-inf"))
        log_beta = backward(batch, u[batch.arc_mark], final)
        sizes = torch.tensor(
            [[len(lat.x), len(lat.y)] for lat in batch.lattices], device=batch.device
        )
        left = (sizes[batch.state_lattice] - batch.positions).to(u.dtype)
        summary = torch.cat([log_beta[:, None], left, batch.height[:, None].to(u.dtype)], 1)
        return LearnedContext(log_beta, summary / self.scale)

    def values(self, batch, context: LearnedContext, state, last_mark, length):
        features = torch.cat(
            [
                self.embed(last_mark),
                (length.to(context.summary.dtype) / self.scale)[..., None],
                context.summary[state],
            ],
            dim=-1,
        )
        return context.log_beta[state] + self.mlp(features).squeeze(-1)

    def regression_loss(
        self,
        batch: LatticeBatch,
        arcs: Tensor,
        step_log_p: Tensor,
        step_log_q: Tensor,
        weights: Optional[Tensor] = None,
    ) -> Tensor:
        """Monte Carlo regression of C on the log-weight-to-go of sampled complete paths.

        For a path z with per-choice log p_θ and log q (``step_log_p``, ``step_log_q``
        (B, k, L + 1), STOP included, 0 after it), the prefix of t marks gets the target

            Ĥ_t = Σ_{u ≥ t} (log p_θ(z_u | z_{<u}) − log q(z_u | z_{<u})),

        the log importance weight of its suffix: exp(Ĥ_t) is unbiased for exp(H_t), so Ĥ_t is
        H_t minus a Jensen gap that vanishes as q approaches the posterior. Loss: mean over
        paths (``weights`` (B, k) if given, e.g. normalised particle weights) and prefixes of
        (C_φ − Ĥ_t)². ``arcs`` (B, k, L) -1 padded, e.g. ``SMCResult.arcs``."""
        B, k, L = arcs.shape
        lengths = (arcs >= 0).sum(-1)  # (B, k)
        gain = (step_log_p - step_log_q).detach()
        to_go = gain.flip(-1).cumsum(-1).flip(-1)  # (B, k, L + 1): Ĥ_t for t = 0..L
        safe = arcs.clamp(min=0)
        start = batch.start[:, None, None].expand(B, k, 1)
        states = torch.cat([start, batch.arc_dst[safe]], dim=-1)  # state after t marks
        bos = torch.full_like(start, self.vocab_size)
        last = torch.cat([bos, batch.arc_mark[safe]], dim=-1)
        t = torch.arange(L + 1, device=arcs.device).expand(B, k, L + 1)
        valid = t <= lengths[..., None]
        context = self.prepare(batch)
        c = self.values(batch, context, torch.where(valid, states, start), last, t)
        err = torch.where(valid, (c - to_go.to(c.dtype)) ** 2, torch.zeros_like(c))
        per_path = err.sum(-1) / valid.sum(-1)
        if weights is None:
            return per_path.mean()
        return (weights.detach().to(per_path.dtype) * per_path).sum(-1).mean()


@dataclass
class ScorerWalk(Walk):
    """A walk whose ``hidden`` is the scorer's recurrent state, which only the scorer can
    reorder (its layout is the scorer's own)."""

    scorer: Optional[Scorer] = None

    def select(self, index: Tensor) -> "ScorerWalk":
        return ScorerWalk(
            self.lattice[index],
            self.state[index],
            self.alive[index],
            self.length[index],
            self.last_mark[index],
            self.scorer.select_state(self.hidden, index),
            self.scorer,
        )


class LookaheadProposal(Sampler):
    """000's proposal (000:26): q(ω_t | ω_{<t}) ∝ p_θ(ω_t | ω_{<t}) · exp(C_t(ω_{≤t})) over
    the legal marks at the walker's state, and q(STOP) ∝ p_θ(EOS | ω) (C = 0 at completion).

    ``scorer`` is used read-only; gradients reach only the lookahead's parameters φ."""

    name = "lookahead-proposal"

    def __init__(self, scorer: Scorer, lookahead: Lookahead):
        super().__init__(scorer.vocab_size)
        self.scorer, self.lookahead = scorer, lookahead

    def prepare(self, batch: LatticeBatch) -> Any:
        return self.lookahead.prepare(batch)

    def start(
        self, batch: LatticeBatch, context, lattice: Tensor, record: Optional[WalkRecord] = None
    ) -> ScorerWalk:
        walk = self.initial_walk(batch, lattice, None, record)
        with torch.no_grad():
            hidden = self.scorer.start(len(lattice))
        return ScorerWalk(**vars(walk) | {"hidden": hidden}, scorer=self.scorer)

    def log_probs(self, batch: LatticeBatch, context, walk: ScorerWalk) -> Tensor:
        with torch.no_grad():
            next_lp = self.scorer.next_log_probs(walk.hidden)  # (N, V + 1)
        arcs = batch.out_arcs[walk.state]  # (N, D)
        safe = arcs.clamp(min=0)
        marks = batch.arc_mark[safe]
        c = self.lookahead.values(
            batch, context, batch.arc_dst[safe], marks, (walk.length + 1)[:, None].expand_as(marks)
        )
        arc_logits = (next_lp.gather(1, marks) + c).masked_fill(arcs < 0, float("-inf"))
        stop = next_lp[:, self.scorer.eos].masked_fill(~batch.final[walk.state], float("-inf"))
        return torch.log_softmax(torch.cat([arc_logits, stop[:, None].to(arc_logits.dtype)], 1), 1)

    def advance(self, batch: LatticeBatch, context, walk: ScorerWalk, choice: Tensor) -> ScorerWalk:
        moved = self.moved(batch, walk, choice)
        with torch.no_grad():  # walkers that did not move read a mark that is never used
            hidden = self.scorer.advance(walk.hidden, moved.last_mark.clamp(max=self.scorer.eos))
        return ScorerWalk(**vars(moved) | {"hidden": hidden}, scorer=self.scorer)
