"""Drawing from a mixture of samplers (nfst.models.samplers.mixture), against enumeration."""

import math

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers.mixture import mixture_counts, mixture_draw, score_distinct
from tests.helpers.lattices import cipher_lattice, small_batch
from tests.helpers.samplers import (
    SAMPLER_NAMES,
    FreeWeightSampler,
    all_paths,
    exact_log_p,
    exact_sampler,
    new_sampler,
    repeated_paths,
)
from tests.helpers.scorers import random_scorer


def test_counts_follow_the_shares():
    assert mixture_counts([1, 1], 16) == (8, 8)
    assert mixture_counts([0.25, 0.75], 10) == (3, 7) or mixture_counts([0.25, 0.75], 10) == (2, 8)
    assert sum(mixture_counts([0.2, 0.3, 0.5], 7)) == 7
    assert mixture_counts([0.01, 0.99], 2) == (1, 1)  # largest remainders
    with pytest.raises(ValueError):
        mixture_counts([1, 0], 4)


def test_every_path_is_weighted_against_the_whole_mixture():
    batch = small_batch()
    g = torch.Generator().manual_seed(3)
    a = FreeWeightSampler(batch, torch.randn(batch.num_arcs, dtype=torch.float64, generator=g))
    b = FreeWeightSampler(batch, torch.randn(batch.num_arcs, dtype=torch.float64, generator=g))
    drawn = mixture_draw([a, b], [1, 3], batch, 8, torch.Generator().manual_seed(0), grad=[0])
    assert drawn.counts == (2, 6) and drawn.log_q.shape == (2, batch.batch_size, 8)
    drawn.log_q.sum().backward()  # only the component named in grad gets gradients
    assert a.log_w.grad is not None and b.log_w.grad is None
    with torch.no_grad():
        qa, qb = a.score(batch, drawn.arcs), b.score(batch, drawn.arcs)
    assert torch.allclose(drawn.log_q[0].detach(), qa) and torch.allclose(drawn.log_q[1], qb)
    expected = torch.logaddexp(qa + math.log(2 / 8), qb + math.log(6 / 8))
    assert torch.allclose(drawn.log_r, expected, atol=1e-12)
    assert (drawn.arcs[:, :2] >= 0).sum() > 0  # the first component's paths come first


def test_the_mixture_density_uses_the_counts_drawn_not_the_shares():
    """Shares 1 : 2 over k = 4 paths draw 1 and 3: r = (1/4) q_a + (3/4) q_b, the density the
    paths came from, not (1/3) q_a + (2/3) q_b."""
    batch = small_batch()
    g = torch.Generator().manual_seed(4)
    a = FreeWeightSampler(batch, torch.randn(batch.num_arcs, dtype=torch.float64, generator=g))
    b = FreeWeightSampler(batch, torch.randn(batch.num_arcs, dtype=torch.float64, generator=g))
    drawn = mixture_draw([a, b], [1, 2], batch, 4, torch.Generator().manual_seed(0))
    assert drawn.counts == (1, 3)
    with torch.no_grad():
        qa, qb = a.score(batch, drawn.arcs), b.score(batch, drawn.arcs)
    expected = torch.logaddexp(qa + math.log(1 / 4), qb + math.log(3 / 4))
    assert torch.allclose(drawn.log_r, expected, rtol=0, atol=1e-12), drawn.log_r - expected


def test_the_mixture_estimate_of_z_is_unbiased():
    """Ẑ = mean p̃/r over many draws against the exact Z, within 4 standard errors; a mixture
    weighted by the drawing component alone (a wrong r) is far off."""
    batch = small_batch()
    scorer = random_scorer(len(batch.mark_vocab), seed=4)
    arcs, mask = all_paths(batch)
    log_z = torch.logsumexp(
        exact_log_p(scorer, batch, arcs).detach().masked_fill(~mask, -math.inf), 1
    )
    g = torch.Generator().manual_seed(5)
    narrow = FreeWeightSampler(
        batch, 3 * torch.randn(batch.num_arcs, dtype=torch.float64, generator=g)
    )
    good = exact_sampler(batch, scorer)
    drawn = mixture_draw([narrow, good], [0.5, 0.5], batch, 4000, torch.Generator().manual_seed(1))
    with torch.no_grad():
        log_p = scorer.score_arcs(batch, drawn.arcs)
    ratio = torch.exp(log_p - drawn.log_r - log_z[:, None])  # Ẑ/Z per path
    mean, se = ratio.mean(1), ratio.std(1) / math.sqrt(4000)
    assert torch.all((mean - 1).abs() < 4 * se + 1e-9), (mean, se)
    own = torch.cat([drawn.log_q[0][:, :2000], drawn.log_q[1][:, 2000:]], 1)
    wrong = torch.exp(log_p - own - log_z[:, None]).mean(1)
    assert torch.any((wrong - 1).abs() > 10 * se)


def test_a_randomized_component_scores_every_path_under_the_selection_it_drew_with(monkeypatch):
    """Randomized SWP (budget 0.1) beside another sampler: its log q of every path, its own and
    the other's, is its score under the one selection it sampled with (a fresh selection
    scores the same paths differently), so r is one density."""
    batch = LatticeBatch([cipher_lattice()] * 4)
    swp = new_sampler("swp", batch.lattices)
    swp.config.budget = 0.1
    other = FreeWeightSampler(
        batch,
        torch.randn(
            batch.num_arcs, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
        ),
    )
    contexts = []  # every selection swp prepares, in order
    prepare = swp.prepare
    monkeypatch.setattr(swp, "prepare", lambda b: contexts.append(prepare(b)) or contexts[-1])
    torch.manual_seed(0)  # the selection's randomness
    drawn = mixture_draw([swp, other], [1, 1], batch, 8, torch.Generator().manual_seed(1))
    with torch.no_grad():
        drew_with = swp.score(batch, drawn.arcs, contexts[0])
        fresh = swp.score(batch, drawn.arcs)
    assert torch.allclose(drawn.log_q[0], drew_with, rtol=0, atol=1e-9), drawn.log_q[0] - drew_with
    assert float((fresh - drew_with).abs().max()) > 1e-3


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_scoring_each_distinct_path_once_gives_every_copy_its_own_score(name):
    """Paths that repeat (a sharp posterior's), their order shuffled within each lattice:
    each copy gets the log q that scoring it among all the copies gives, to rounding."""
    batch = small_batch()
    arcs = repeated_paths(batch).arcs
    shuffle = torch.argsort(torch.rand(arcs.shape[:2], generator=torch.Generator().manual_seed(5)))
    arcs = arcs.gather(1, shuffle[..., None].expand_as(arcs))
    sampler = new_sampler(name, batch.lattices).eval()
    with torch.no_grad():
        context = sampler.prepare(batch)
        every = sampler.score(batch, arcs, context)
        distinct = score_distinct(sampler, batch, arcs, context)
    assert distinct.shape == every.shape and every.isfinite().all()
    assert torch.allclose(distinct, every, rtol=0, atol=1e-9), (distinct - every).abs().max()
    # the paths repeat, and not alike in every lattice (else a mix-up between them could pass)
    counts = [len(torch.unique(a, dim=0)) for a in arcs]
    assert max(counts) < arcs.shape[1] and len(set(counts)) > 1


def test_an_evaluation_mixture_scores_distinct_paths_and_keeps_the_density():
    """With no component training, r of every path is the mixture's as scored path by path."""
    batch = small_batch()
    g = torch.Generator().manual_seed(6)
    a = FreeWeightSampler(batch, 4 * torch.randn(batch.num_arcs, dtype=torch.float64, generator=g))
    b = new_sampler("swa", batch.lattices)
    drawn = mixture_draw([a, b], [1, 1], batch, 16, torch.Generator().manual_seed(0))
    with torch.no_grad():
        qa, qb = a.score(batch, drawn.arcs), b.eval().score(batch, drawn.arcs)
    expected = torch.logaddexp(qa + math.log(1 / 2), qb + math.log(1 / 2))
    assert torch.allclose(drawn.log_r, expected, rtol=0, atol=1e-9), drawn.log_r - expected
