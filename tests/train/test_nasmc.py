import math

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import log_partition
from nfst.smc.engine import SMCConfig, smc
from nfst.smc.lookahead import BetaLookahead, LearnedLookahead, LookaheadProposal
from nfst.train.nasmc import AdaptConfig, adapt, mixture_loss, nasmc_loss
from nfst.train.objectives import EMABaseline, inclusive_kl_loss
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import noisy_sampler
from tests.helpers.scorers import path_scores, random_scorer


@pytest.fixture(scope="module")
def setup():
    """A flat scorer and a poor global WFST proposal: SMC gradients are then informative."""
    batch = small_batch()
    scorer = random_scorer(len(batch.mark_vocab), seed=0, scale=0.3, normalised=True)
    return batch, scorer


def poor_proposal(batch, seed=1):
    sampler = noisy_sampler(batch, seed, scale=0.3)
    sampler.local = False  # q(a | s) ∝ w_a β(dst): all the weights are free parameters
    return sampler


def exact_kl(batch, scorer, sampler):
    """Mean over lattices of KL(p ‖ q) by enumeration, differentiable in q's parameters."""
    table = sampler.prepare(batch)  # (S, D + 1) log q
    log_z = log_partition(batch, scorer.arc_weights(batch), scorer.final_weights(batch)).detach()
    stop = table.shape[1] - 1
    total = 0.0
    for b, paths in enumerate(path_scores(batch, scorer)):
        for path, score in paths.items():
            states = [int(batch.start[b])] + [int(batch.arc_dst[a]) for a in path]
            cols = [a - int(batch.out_arcs[batch.arc_src[a], 0]) for a in path] + [stop]
            log_q = table[states, cols].sum()
            log_p = score - float(log_z[b])
            total = total + math.exp(log_p) * (log_p - log_q)
    return total / batch.batch_size


def flat_grad(sampler):
    g = sampler.log_w.grad.reshape(-1)
    sampler.zero_grad()
    return g


def test_nasmc_loss_is_the_filtering_weighted_sum_of_step_log_q(setup):
    """002:1 without resampling and with C = 0: slot m keeps its particle, its filtering
    weight after step t is the normalised p̃/q of its prefix, and the loss is
    −Σ_t Σ_m w̃_t^m log q(z_t^m | z_{<t}^m)."""
    batch, scorer = setup
    r = smc(
        batch,
        poor_proposal(batch),
        scorer,
        None,
        SMCConfig(particles=8, resample_threshold=0.0),
        torch.Generator().manual_seed(0),
    )
    T = r.step_choice_log_q.shape[1]
    steps_q = torch.nn.functional.pad(r.step_log_q, (0, T - r.step_log_q.shape[-1]))
    steps_p = torch.nn.functional.pad(r.step_log_p, (0, T - r.step_log_p.shape[-1]))
    assert torch.allclose(r.step_choice_log_q.detach().transpose(1, 2), steps_q, atol=1e-9)
    prefix_w = (steps_p - steps_q).cumsum(-1).transpose(1, 2)  # (B, T, M)
    expected_w = torch.log_softmax(prefix_w, dim=-1)
    assert torch.allclose(r.filtering_log_weights, expected_w, atol=1e-9)
    manual = -(expected_w.exp() * steps_q.transpose(1, 2)).sum((1, 2)).mean()
    assert nasmc_loss(r).item() == pytest.approx(manual.item(), abs=1e-9)


def test_mixture_with_lambda_zero_is_the_inclusive_kl_of_importance_sampling(setup):
    batch, scorer = setup
    sampler = poor_proposal(batch)
    r = smc(
        batch,
        sampler,
        scorer,
        None,
        SMCConfig(particles=8, resample_threshold=0.0),
        torch.Generator().manual_seed(0),
    )
    mixture_loss(r, lam=0.0).backward()
    ours = flat_grad(sampler)
    log_q = sampler.score(batch, r.arcs)
    inclusive_kl_loss(r.log_p, log_q).backward()
    assert torch.allclose(ours, flat_grad(sampler), atol=1e-9)


def test_nasmc_with_exact_lookahead_estimates_the_kl_gradient(setup):
    """With C = H the filtering targets are the posterior's prefix marginals, so the NASMC
    gradient (averaged over R runs) points along the exact ∇_φ KL(p ‖ q_φ) (cosine > 0.9;
    measured 0.97). With C = 0 the targets ignore the future and the estimate is biased
    (measured cosine 0.4): that is what the lookahead buys training."""
    batch, scorer = setup
    sampler = poor_proposal(batch)
    exact_kl(batch, scorer, sampler).backward()
    truth = flat_grad(sampler)
    R = 200
    big = LatticeBatch(batch.lattices * R)
    cosine = {}
    for name, look in (("exact", BetaLookahead.exact(scorer)), ("zero", None)):
        r = smc(
            big,
            sampler,
            scorer,
            look,
            SMCConfig(particles=16, resample_threshold=0.5),
            torch.Generator().manual_seed(0),
        )
        (nasmc_loss(r) * R).backward()  # nasmc_loss averages over the R copies of each lattice
        cosine[name] = torch.nn.functional.cosine_similarity(flat_grad(sampler), truth, 0).item()
    assert cosine["exact"] > 0.9 and cosine["exact"] > cosine["zero"] + 0.2, cosine


@pytest.mark.parametrize("objective", ["nasmc", "mixture"])
def test_training_from_particles_lowers_the_kl(setup, objective):
    batch, scorer = setup
    sampler = poor_proposal(batch)
    before = exact_kl(batch, scorer, sampler).item()
    adapt(
        sampler,
        scorer,
        batch.lattices,
        AdaptConfig(
            objective=objective, steps=40, batch_size=4, lr=0.02, smc=SMCConfig(particles=16)
        ),
        lookahead=BetaLookahead.exact(scorer),
    )
    after = exact_kl(batch, scorer, sampler).item()
    # measured over training seeds 0–5 (NASMC) and 0–15 (mixture): from 1.95 to 0.05–0.06 of
    # it with NASMC and the exact lookahead, to 0.06–0.70 with the mixture, whose exclusive-KL
    # term is noisy (0.42 at seed 0)
    assert after < (0.3 if objective == "nasmc" else 0.8) * before, (before, after)


def test_lookahead_trained_through_its_proposal_as_in_000():
    """000 §5: c_φ defines q ∝ p_θ · exp(C) (000:26); the λ-mixture on that proposal's own
    particles trains φ, and q moves toward the posterior: KL(q ‖ p), estimated from 400
    paths per lattice, falls by more than half (measured 1.39 -> 0.15 nats)."""
    batch = small_batch()
    scorer = random_scorer(
        len(batch.mark_vocab), seed=0, normalised=True
    )  # peaked: C starts far from H
    log_z = log_partition(batch, scorer.arc_weights(batch), scorer.final_weights(batch)).detach()
    torch.manual_seed(0)
    proposal = LookaheadProposal(scorer, LearnedLookahead(scorer.vocab_size).double())

    def kl():
        R = 50
        with torch.no_grad():
            r = smc(
                LatticeBatch(batch.lattices * R),
                proposal,
                scorer,
                None,
                SMCConfig(particles=8, resample_threshold=0.0),
                torch.Generator().manual_seed(1),
            )
        return ((r.log_q - r.log_p).view(R, -1, 8) + log_z[:, None]).mean().item()

    before = kl()
    adapt(
        proposal,
        scorer,
        batch.lattices,
        AdaptConfig(
            objective="mixture",
            lam=0.5,
            steps=40,
            batch_size=4,
            lr=0.05,
            smc=SMCConfig(particles=16),
        ),
    )
    after = kl()
    assert after < 0.5 * before, (before, after)


def test_objective_errors_are_clear(setup):
    batch, scorer = setup
    r = smc(
        batch,
        poor_proposal(batch),
        scorer,
        None,
        SMCConfig(particles=4, resample_threshold=1.0),
        torch.Generator().manual_seed(0),
    )
    assert r.resampled.any()
    with pytest.raises(ValueError, match="resample_threshold=0"):
        mixture_loss(r, lam=0.5, baseline=EMABaseline())
    with pytest.raises(ValueError, match="nasmc"):
        adapt(poor_proposal(batch), scorer, batch.lattices, AdaptConfig(objective="elbo"))
