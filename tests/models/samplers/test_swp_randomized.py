"""Randomized SWP: Algorithm 1 on the kept sub-lattice equals the exact one at full budget (with
gradients), its hand-written gradient is right on a real sub-lattice, and the defensive mixture
keeps every path's probability positive, so importance sampling stays unbiased."""

import math

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import forward
from nfst.dp.selection import RDPConfig
from nfst.experiment.options import apply_overrides
from nfst.experiment.presets import preset
from nfst.models.samplers import SamplerConfig, make_sampler
from nfst.models.samplers.swp import Algorithm1
from nfst.models.samplers.swp_randomized import RandomizedAlgorithm1, randomized_weights
from tests.helpers.lattices import cipher_lattice, del_ins_lattices, vocabulary_of
from tests.helpers.samplers import all_paths, exact_log_p, new_sampler
from tests.helpers.scorers import random_scorer


def inputs(swp):
    return swp.U_mark(swp.mark_embed.weight), swp.U_state.weight, swp.w.weight[0]


def algorithm1_parameters(swp):
    return [
        swp.mark_embed.weight,
        swp.U_mark.weight,
        swp.U_mark.bias,
        swp.U_state.weight,
        swp.w.weight,
    ]


def test_full_budget_equals_algorithm1_with_gradients():
    lats = [cipher_lattice()] * 2
    batch = LatticeBatch(lats)
    swp = new_sampler("swp-prefix", lats)
    g = torch.Generator().manual_seed(0)
    r_w = torch.randn(batch.num_arcs, generator=g, dtype=torch.float64)
    r_b = torch.randn(batch.num_states, generator=g, dtype=torch.float64)
    r_e = torch.randn(batch.num_arcs, swp.config.d, generator=g, dtype=torch.float64)

    def total(log_w, beta, embed):
        return (r_w * log_w).sum() + (r_b * beta).sum() + (r_e * embed).sum()

    exact = Algorithm1.apply(*inputs(swp), batch)
    log_w, beta, embed, _ = randomized_weights(
        *inputs(swp), batch, RDPConfig(budget=1.0), arc_embed=True
    )
    for a, b in zip((log_w, beta, embed), exact):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    grads = torch.autograd.grad(total(log_w, beta, embed), algorithm1_parameters(swp))
    ref = torch.autograd.grad(total(*exact), algorithm1_parameters(swp))
    for a, b in zip(grads, ref):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def test_gradient_on_a_sub_lattice_matches_finite_differences():
    lats = [cipher_lattice()] * 2
    batch = LatticeBatch(lats)
    swp = new_sampler("swp", lats, d=3)
    mark_part, U, w = (t.detach().clone().requires_grad_(True) for t in inputs(swp))
    alpha = forward(batch, torch.zeros(batch.num_arcs, dtype=torch.float64))
    config = RDPConfig(budget=0.5, top_share=1.0)  # deterministic: the selection is fixed

    def fn(mark_part, U, w):
        log_w, beta, embed, _, log_c = RandomizedAlgorithm1.apply(
            mark_part, U, w, batch, config, alpha
        )
        assert bool(torch.isinf(log_c).any())  # states were dropped
        return (
            torch.where(torch.isfinite(log_w), log_w, torch.zeros_like(log_w)).sum(),
            beta[batch.start].sum(),
            embed.sum(),
        )

    assert torch.autograd.gradcheck(lambda *x: sum(fn(*x)), (mark_part, U, w))


def test_every_path_keeps_positive_probability_and_rows_sum_to_one():
    lats = del_ins_lattices()
    batch = LatticeBatch(lats * 20)
    swp = new_sampler("swp", lats)
    swp.config.budget = 0.2
    torch.manual_seed(0)
    table = swp.prepare(batch).table
    legal = torch.cat([batch.out_arcs >= 0, batch.final[:, None]], dim=1)
    assert bool(torch.isfinite(table[legal]).all()) and bool(torch.isinf(table[~legal]).all())
    torch.testing.assert_close(
        torch.logsumexp(table, 1), torch.zeros(batch.num_states, dtype=table.dtype)
    )


def test_importance_weights_stay_unbiased_for_z():
    """E_q[p̃/q] = Σ p̃ = Z for each lattice: needs q > 0 wherever p̃ > 0 and the right log q."""
    lats = [cipher_lattice()]
    copies, k = 400, 8
    batch = LatticeBatch(lats * copies)
    swp = new_sampler("swp", lats)
    swp.config.budget = 0.2
    scorer = random_scorer(len(lats[0].mark_vocab), seed=1, scale=1.0)
    one = LatticeBatch(lats)
    arcs, mask = all_paths(one)
    log_z = torch.logsumexp(exact_log_p(scorer, one, arcs).masked_fill(~mask, -math.inf), 1)
    torch.manual_seed(0)
    with torch.no_grad():
        paths = swp.sample(batch, k, torch.Generator().manual_seed(1))
        log_p = scorer.log_prob(paths.marks.flatten(0, 1), paths.lengths.flatten()).view(-1, k)
    ratio = torch.exp(log_p - paths.log_q - log_z.repeat(copies)[:, None])
    ratio = ratio.view(copies, len(lats), k)
    ratio = ratio.transpose(0, 1).reshape(len(lats), -1)
    mean, se = ratio.mean(1), ratio.std(1) / math.sqrt(ratio.shape[1])
    assert bool(((mean - 1).abs() <= 3 * se + 1e-9).all()), (mean, se)


@pytest.mark.parametrize("name", ["swp", "swp-prefix", "swp-sws"])
def test_paths_are_scored_with_the_selection_they_were_sampled_with(name):
    """Scoring under ``Paths.context`` gives the log q each path was sampled with, exactly;
    a fresh ``prepare`` draws another selection, so the same paths score differently."""
    lats = [cipher_lattice()]
    batch = LatticeBatch(lats * 4)
    swp = new_sampler(name, lats).eval()
    swp.config.budget = 0.1
    with torch.no_grad():
        paths = swp.sample(batch, 8, torch.Generator().manual_seed(0))
        again = swp.score(batch, paths.arcs, paths.context)
        fresh = swp.score(batch, paths.arcs)
    torch.testing.assert_close(again, paths.log_q, rtol=0, atol=1e-9)
    assert float((fresh - paths.log_q).abs().max()) > 1e-3


def test_budget_option_reaches_swp():
    lats = del_ins_lattices()
    config = apply_overrides(preset("small"), ["sampler.sampler.budget=0.1"]).sampler.sampler
    swp = make_sampler("swp", vocabulary_of(lats), config)
    assert swp.config.budget == 0.1
    with pytest.raises(ValueError, match="budget"):
        make_sampler("swp", vocabulary_of(lats), SamplerConfig(d=4, budget=0.0)).prepare(
            LatticeBatch(lats)
        )
