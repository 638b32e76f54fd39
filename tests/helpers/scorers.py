"""Arc-factored test scorers: the exact posterior of each is computable (a WFST on the lattice)."""

from __future__ import annotations

import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.ngram import NgramScorer
from nfst.models.scorer import ArcFactoredScorer
from tests.helpers.brute import lattice_paths


def random_scorer(
    vocab_size: int, seed: int, scale: float = 1.5, normalised: bool = False
) -> ArcFactoredScorer:
    """Random float64 weights θ over Ω ∪ {EOS}; with ``normalised``, θ = log_softmax(noise)
    (a locally normalised unigram model)."""
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(vocab_size + 1, generator=g, dtype=torch.float64) * scale
    return ArcFactoredScorer(torch.log_softmax(theta, 0) if normalised else theta)


def padded(strings: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Mark strings as a scorer's (marks (N, L) long, -1 after each end; lengths (N,))."""
    L = max(1, max(len(s) for s in strings))
    marks = torch.full((len(strings), L), -1, dtype=torch.long)
    for i, s in enumerate(strings):
        marks[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return marks, torch.tensor([len(s) for s in strings])


def path_scores(batch: LatticeBatch, scorer: ArcFactoredScorer) -> list[dict[tuple, float]]:
    """For each lattice, every path (tuple of batch-global arc ids) -> log p̃ by enumeration."""
    theta = scorer.weights.detach()
    out = []
    for b, lat in enumerate(batch.lattices):
        offset = int(batch.arc_offsets[b])
        scores = {}
        for p in lattice_paths(lat):
            arcs = tuple(a + offset for a in p)
            scores[arcs] = (
                float(theta[batch.arc_mark[list(arcs)]].sum() + theta[-1])
                if arcs
                else float(theta[-1])
            )
        out.append(scores)
    return out


def random_bigram(lats, seed=0) -> NgramScorer:
    """A frozen mark bigram with N(0, 1.5²) weights over the lattices' mark vocabulary: a WFST
    scorer whose log Z and posterior are exact."""
    torch.manual_seed(seed)
    scorer = NgramScorer(len(lats[0].mark_vocab), order=2)
    with torch.no_grad():
        scorer.logits.normal_(0, 1.5)
    return scorer.freeze()
