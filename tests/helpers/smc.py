"""Shared fixtures of the SMC tests: an arc-factored scorer, a proposal with fixed per-arc
weights (exact when the weights are the scorer's), and brute-force path scores."""

from __future__ import annotations

import torch

from nfst.fsts import cipher_mfst, substitution_ciphers
from nfst import compile_lattice
from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import transition_log_probs
from nfst.models.samplers.base import Sampler
from nfst.models.scorer import ArcFactoredScorer
from tests.helpers.brute import lattice_paths


class FixedWeightSampler(Sampler):
    """Proposes from free per-arc weights: globally, q(a | s) = exp(w_a + β(dst) − β(s))
    (003 Alg. 1), or, with ``local``, by a softmax of the weights of s's out-arcs and STOP (no
    lookahead at all). Built from a batch and its weights (A,), (S,); the weights belong to
    the lattices, so any later batch of the same lattice objects (in any order, repeated)
    works."""

    name = "fixed-weights"

    def __init__(self, batch: LatticeBatch, arc_weights: torch.Tensor,
                 final_weights: torch.Tensor, local: bool = False):
        super().__init__(len(batch.mark_vocab))
        self.local = local
        self.index = {id(lat): i for i, lat in enumerate(batch.lattices)}
        a, s = batch.arc_offsets.tolist(), batch.state_offsets.tolist()
        self.arc_weights = torch.nn.ParameterList(
            [arc_weights.detach()[a[i]:a[i + 1]].clone() for i in range(batch.batch_size)])
        self.final_weights = [final_weights.detach()[s[i]:s[i + 1]] for i in range(batch.batch_size)]

    def prepare(self, batch):
        which = [self.index[id(lat)] for lat in batch.lattices]
        arc_w = torch.cat([self.arc_weights[i] for i in which])
        final_w = torch.cat([self.final_weights[i] for i in which])
        if self.local:
            arc_lp, stop_lp = arc_w, final_w
        else:
            arc_lp, stop_lp = transition_log_probs(batch, arc_w, final_w)
        padded = torch.where(batch.out_arcs >= 0, arc_lp[batch.out_arcs.clamp(min=0)],
                             torch.full_like(batch.out_arcs, float("-inf"), dtype=arc_lp.dtype))
        return torch.log_softmax(torch.cat([padded, stop_lp[:, None]], 1), 1)  # (S, D + 1)

    def start(self, batch, context, lattice):
        return self.initial_walk(batch, lattice, None)

    def log_probs(self, batch, context, walk):
        return context[walk.state]

    def advance(self, batch, context, walk, choice):
        return self.moved(batch, walk, choice)


def unigram_scorer(vocab_size: int, seed: int, scale: float = 1.5) -> ArcFactoredScorer:
    """A locally normalised unigram scorer θ = log_softmax(noise) over Ω ∪ {EOS}."""
    g = torch.Generator().manual_seed(seed)
    return ArcFactoredScorer(torch.log_softmax(
        torch.randn(vocab_size + 1, generator=g, dtype=torch.float64) * scale, 0))


CIPHER = cipher_mfst(substitution_ciphers(list("abc"), 2, seed=1))
PAIRS = [("ab", "ba"), ("a", "b"), ("abc", "ca"), ("ab", "c")]
"""Lattices of 16, 5, 32 and 8 paths, all over the same 9-mark vocabulary."""


def small_batch(device: torch.device | str = "cpu") -> LatticeBatch:
    return LatticeBatch([compile_lattice(CIPHER, x, y) for x, y in PAIRS], device)


def exact_sampler(batch: LatticeBatch, scorer: ArcFactoredScorer) -> FixedWeightSampler:
    """The exact posterior p(z | x, y) as a proposal."""
    return FixedWeightSampler(batch, scorer.arc_weights(batch), scorer.final_weights(batch))


def noisy_sampler(batch: LatticeBatch, seed: int, scale: float = 0.5) -> FixedWeightSampler:
    """A poor proposal: a local softmax of random arc weights unrelated to the scorer (its
    importance weights stay light-tailed on ``small_batch``: Var(p/q) ≤ 10 per lattice)."""
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(batch.num_arcs, generator=g, dtype=torch.float64) * scale).to(batch.device)
    final = batch.final_weights().masked_fill(batch.final, 0.0)
    return FixedWeightSampler(batch, w, final, local=True)


def path_scores(batch: LatticeBatch, scorer: ArcFactoredScorer) -> list[dict[tuple, float]]:
    """For each lattice, every path (tuple of batch-global arc ids) -> log p̃ by enumeration."""
    theta = scorer.weights.detach()
    out = []
    for b, lat in enumerate(batch.lattices):
        offset = int(batch.arc_offsets[b])
        scores = {}
        for p in lattice_paths(lat):
            arcs = tuple(a + offset for a in p)
            scores[arcs] = float(theta[batch.arc_mark[list(arcs)]].sum() + theta[-1]) if arcs \
                else float(theta[-1])
        out.append(scores)
    return out
