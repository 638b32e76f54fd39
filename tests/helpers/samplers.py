"""Helpers shared by the sampler, objective, evaluation and training tests: exact path
enumeration on small lattices, and a WFST sampler with one free weight per arc."""

from __future__ import annotations

import torch
from torch import nn

from nfst.dp.batch import LatticeBatch
from nfst.train.objectives import inclusive_kl_loss
from nfst.models.samplers import SamplerConfig, make_sampler
from nfst.models.samplers.swp import WFSTSampler
from nfst.models.scorer import ArcFactoredScorer
from tests.helpers.brute import lattice_paths
from tests.helpers.lattices import small_lattices

SAMPLER_NAMES = ("nolookahead", "swa", "sws", "swp", "swp-prefix", "swp-sws")


def del_ins_lattices():
    """Three del/ins lattices sharing one mark vocabulary (3, 3 and 1 paths)."""
    return small_lattices()[:3]


def cipher_lattice():
    """A cipher lattice: 16 paths of two different lengths."""
    return small_lattices()[3]


def symbols_of(lattices):
    return sorted({s for lat in lattices for s in lat.x + lat.y})


def new_sampler(name, lattices, d=8, seed=0):
    """A small float64 sampler with dropout off, so recomputations agree to rounding."""
    torch.manual_seed(seed)
    vocab = len(lattices[0].mark_vocab)
    return make_sampler(name, vocab, SamplerConfig(d=d, dropout=0.0), symbols_of(lattices)).double()


def all_paths(batch: LatticeBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """Every path of every lattice: arcs (B, P, L) with batch-global ids, -1 padded, and a mask
    (B, P) of real entries (lattices with fewer paths repeat their first path)."""
    per = [lattice_paths(lat) for lat in batch.lattices]
    P = max(len(p) for p in per)
    L = max(len(path) for p in per for path in p)
    arcs = torch.full((batch.batch_size, P, L), -1, dtype=torch.long)
    mask = torch.zeros(batch.batch_size, P, dtype=torch.bool)
    for b, paths in enumerate(per):
        offset = int(batch.arc_offsets[b])
        for i in range(P):
            path = paths[i] if i < len(paths) else paths[0]
            arcs[b, i, :len(path)] = torch.tensor(path, dtype=torch.long) + offset
            mask[b, i] = i < len(paths)
    return arcs, mask


def path_marks(batch: LatticeBatch, arcs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Marks (…, L) and lengths (…) of arc paths (…, L)."""
    marks = torch.where(arcs >= 0, batch.arc_mark[arcs.clamp(min=0)], arcs)
    return marks, (arcs >= 0).sum(-1)


def random_scorer(vocab_size: int, seed: int, scale: float = 1.5) -> ArcFactoredScorer:
    """An unnormalised arc-factored scorer with random float64 weights."""
    g = torch.Generator().manual_seed(seed)
    return ArcFactoredScorer(torch.randn(vocab_size + 1, generator=g, dtype=torch.float64) * scale)


def exact_log_p(scorer, batch, arcs):
    """log p̃ (B, P) of enumerated paths under a scorer."""
    marks, lengths = path_marks(batch, arcs)
    B, P, L = marks.shape
    return scorer.log_prob(marks.view(B * P, L), lengths.view(-1)).view(B, P)


class FreeWeights(WFSTSampler):
    """q(s→s' | s) = w β(s') / β(s) with one free log weight per arc of one fixed batch."""

    name = "free-weights"

    def __init__(self, num_arcs: int, init: torch.Tensor | None = None):
        super().__init__(vocab_size=0)
        self.log_w = nn.Parameter(init.clone() if init is not None
                                  else torch.zeros(num_arcs, dtype=torch.float64))

    def arc_log_weights(self, batch):
        return self.log_w, None, None


def exact_inclusive_kl(sampler, scorer, batch):
    """(B,) KL(p ‖ q) by enumeration."""
    arcs, mask = all_paths(batch)
    log_p = exact_log_p(scorer, batch, arcs).masked_fill(~mask, float("-inf"))
    log_p = log_p - torch.logsumexp(log_p, 1, keepdim=True)
    log_q = sampler.score(batch, arcs)
    p = log_p.exp()
    return torch.where(mask, p * (log_p - log_q), torch.zeros_like(p)).sum(1)


def fit_by_inclusive_kl(sampler, scorer, batch, steps, lr, k=128, seed=0):
    """Sampled inclusive-KL steps (Adam); returns the exact KL(p ‖ q) (B,) before and after."""
    before = exact_inclusive_kl(sampler, scorer, batch).detach()
    opt = torch.optim.Adam(sampler.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        paths = sampler.sample(batch, k, g)
        loss = inclusive_kl_loss(scorer.score_paths(paths).detach(), paths.log_q)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return before, exact_inclusive_kl(sampler, scorer, batch)
