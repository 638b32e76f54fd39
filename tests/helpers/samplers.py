"""Samplers for the tests: the free-weight sampler (one weight per arc, exact when the weights
are an arc-factored scorer's), small neural samplers and a quick training configuration, and
exact quantities by enumeration."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import torch
from torch import nn

from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import transition_log_probs, transition_table
from nfst.models.samplers import SamplerConfig, make_sampler
from nfst.models.samplers.base import Sampler
from nfst.models.scorer import ArcFactoredScorer
from nfst.train.objectives import inclusive_kl_loss
from nfst.train.sampler import SamplerTrainConfig
from tests.helpers.brute import lattice_paths
from tests.helpers.lattices import vocabulary_of
from tests.helpers.scorers import random_scorer

SAMPLER_NAMES = ("nolookahead", "swa", "sws", "sws-mlp", "swp", "swp-prefix", "swp-sws")


class FreeWeightSampler(Sampler):
    """q from one free log weight per arc (and per STOP) of the lattices of ``batch``:
    globally normalised, q(a | s) = exp(w_a + β(dst) − β(s)) (003 Alg. 1), or, with
    ``local``, a softmax over each state's out-arcs and STOP (no lookahead at all). The weights
    belong to the lattice objects, so any later batch of them (in any order, repeated) works;
    ``log_w`` (A,) is the one parameter."""

    name = "free-weights"

    def __init__(
        self,
        batch: LatticeBatch,
        arc_weights: Optional[torch.Tensor] = None,
        final_weights: Optional[torch.Tensor] = None,
        local: bool = False,
    ):
        super().__init__(len(batch.mark_vocab))
        self.local = local
        if arc_weights is None:
            arc_weights = torch.zeros(batch.num_arcs, dtype=torch.float64, device=batch.device)
        if final_weights is None:
            final_weights = batch.final_weights(arc_weights.dtype)
        self.log_w = nn.Parameter(arc_weights.detach().clone())
        self.register_buffer("final_w", final_weights.detach().clone())
        a, s = batch.arc_offsets.tolist(), batch.state_offsets.tolist()
        self.ranges = {
            id(lat): ((a[i], a[i + 1]), (s[i], s[i + 1])) for i, lat in enumerate(batch.lattices)
        }

    def prepare(self, batch):
        ranges = [self.ranges[id(lat)] for lat in batch.lattices]
        arc_index = torch.cat([torch.arange(*r[0]) for r in ranges]).to(self.log_w.device)
        state_index = torch.cat([torch.arange(*r[1]) for r in ranges]).to(self.log_w.device)
        arc_w, final_w = self.log_w[arc_index], self.final_w[state_index]
        if self.local:
            arc_lp, stop_lp = arc_w, final_w
        else:
            arc_lp, stop_lp = transition_log_probs(batch, arc_w, final_w)
        return torch.log_softmax(transition_table(batch, arc_lp, stop_lp), 1)  # (S, D + 1)

    def start(self, batch, context, lattice, record=None):
        return self.initial_walk(batch, lattice, None, record)

    def log_probs(self, batch, context, walk):
        return context[walk.state]

    def advance(self, batch, context, walk, choice):
        return self.moved(batch, walk, choice)


def exact_sampler(batch: LatticeBatch, scorer: ArcFactoredScorer) -> FreeWeightSampler:
    """The exact posterior p(z | x, y) as a proposal."""
    return FreeWeightSampler(batch, scorer.arc_weights(batch), scorer.final_weights(batch))


def noisy_sampler(batch: LatticeBatch, seed: int, scale: float = 0.5) -> FreeWeightSampler:
    """A poor proposal: a local softmax of random arc weights unrelated to the scorer (its
    importance weights stay light-tailed on ``small_batch``: Var(p/q) ≤ 10 per lattice)."""
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(batch.num_arcs, generator=g, dtype=torch.float64) * scale).to(batch.device)
    final = batch.final_weights().masked_fill(batch.final, 0.0)
    return FreeWeightSampler(batch, w, final, local=True)


def new_sampler(name, lattices, d=8, seed=0):
    """A small float64 sampler with dropout off, so recomputations agree to rounding."""
    torch.manual_seed(seed)
    return make_sampler(name, vocabulary_of(lattices), SamplerConfig(d=d, dropout=0.0)).double()


def dropout_sampler(name, lattices, seed=0):
    """A small float64 sampler in training mode with dropout 0.5, its weights moved away from
    their initialisation (swp-prefix's prefix weights start at zero)."""
    torch.manual_seed(seed)
    sampler = (
        make_sampler(name, vocabulary_of(lattices), SamplerConfig(d=8, dropout=0.5))
        .double()
        .train()
    )
    with torch.no_grad():
        for p in sampler.parameters():
            p.add_(0.5 * torch.randn_like(p))
    return sampler


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
            arcs[b, i, : len(path)] = torch.tensor(path, dtype=torch.long) + offset
            mask[b, i] = i < len(paths)
    return arcs, mask


def exact_log_p(scorer, batch, arcs):
    """log p̃ (B, P) of enumerated paths under a scorer."""
    marks, lengths = batch.marks_of(arcs), (arcs >= 0).sum(-1)
    B, P, L = marks.shape
    return scorer.log_prob(marks.view(B * P, L), lengths.view(-1)).view(B, P)


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


def assert_same_parameter_gradients(
    module: nn.Module, got: torch.Tensor, want: torch.Tensor
) -> None:
    """The gradients of a random linear readout of ``got`` and of ``want`` (same shape, float64)
    agree in every parameter of ``module``: a fast path and its plain reference."""
    readout = torch.randn(got.shape, dtype=torch.float64)
    params = list(module.parameters())
    grads = torch.autograd.grad((readout * got).sum(), params, retain_graph=True, allow_unused=True)
    expected = torch.autograd.grad((readout * want).sum(), params, allow_unused=True)
    for g, e in zip(grads, expected):
        assert (g is None) == (e is None)
        if e is not None:
            torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)


def suffix_logits_at_every_state(name: str, train: bool):
    """An SWS-like sampler ``name`` (d 8, dropout 0.5, float64) on the cipher lattice with one
    walker at each state, all with h_0: (sampler, lattice, its context, the walk's mark
    logits (S, D + 1), h_0 per walker, and the walkers' dropout masks of h, x and y (ones in
    eval mode)), to check the logits against a formula state by state."""
    from nfst.models.samplers.record import WalkRecord
    from tests.helpers.lattices import cipher_lattice

    lat = cipher_lattice()
    batch = LatticeBatch([lat])
    torch.manual_seed(0)
    sampler = (
        make_sampler(name, vocabulary_of([lat]), SamplerConfig(d=8, dropout=0.5))
        .double()
        .train(train)
    )
    states = torch.arange(lat.num_states)
    record = WalkRecord(len(states))
    context = sampler.prepare(batch)
    walk = sampler.start(batch, context, torch.zeros_like(states), record)
    walk.state = states
    logits = sampler.mark_logits(batch, walk)
    h = walk.hidden[0]
    masks = tuple(
        record.masks[m] if train else torch.ones_like(h)
        for m in (sampler.drop_h, sampler.drop_x, sampler.drop_y)
    )
    return sampler, lat, context, logits, h, masks


def enumerated(sampler, scorer, lats):
    """Per lattice: log Z, KL(q ‖ p), KL(p ‖ q) and the variances of the two log ratios, under
    q and p, by enumeration of every path."""
    batch = LatticeBatch(lats)
    arcs, mask = all_paths(batch)
    with torch.no_grad():
        log_p = exact_log_p(scorer, batch, arcs).masked_fill(~mask, -math.inf)
        log_q = sampler.eval().score(batch, arcs).double().masked_fill(~mask, -math.inf)
    log_z = torch.logsumexp(log_p, 1)
    out = []
    for b in range(len(lats)):
        m = mask[b]
        lp, lq = log_p[b, m] - log_z[b], log_q[b, m]
        d = lq - lp
        q, p = lq.exp(), lp.exp()
        kl_qp, kl_pq = float((q * d).sum()), float((p * -d).sum())
        out.append(
            {
                "log_z": float(log_z[b]),
                "exclusive": kl_qp,
                "inclusive": kl_pq,
                "var_q": float((q * (d - kl_qp) ** 2).sum()),
                "var_p": float((p * (-d - kl_pq) ** 2).sum()),
            }
        )
    return out


def exact_exclusive_kl(sampler, scorer, lattices):
    """KL(q ‖ p) in nats on one small lattice, by enumerating its paths."""
    batch = LatticeBatch(lattices, sampler.device)
    arcs, _ = all_paths(batch.to("cpu"))
    with torch.no_grad():
        log_q = sampler.eval().score(batch, arcs.to(batch.device))[0].double()
        log_p = exact_log_p(scorer, batch, arcs.to(batch.device))[0]
    return float((log_q.exp() * (log_q - torch.log_softmax(log_p, 0))).sum())


def small_config(**changes) -> SamplerTrainConfig:
    """Sampler training of a few steps on small minibatches, with ``changes``."""
    config = SamplerTrainConfig(
        sampler=SamplerConfig(d=8, dropout=0.2),
        lr=0.01,
        steps=6,
        batch_size=2,
        k=4,
        eval_every=2,
        eval_k=4,
        patience=10,
        checkpoint_every=2,
    )
    return dataclasses.replace(config, **changes)


def repeated_paths(batch, k=32):
    """k paths per lattice from a sharp posterior: most of them repeats, as a trained
    sampler's are."""
    sharp = random_scorer(len(batch.mark_vocab), seed=3, scale=4.0)
    return exact_sampler(batch, sharp).sample(batch, k, torch.Generator().manual_seed(0))
