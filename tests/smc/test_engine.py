import math

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import log_partition
from nfst.errors import PathTooLongError
from nfst.smc.beam import beam_search
from nfst.smc.engine import SMCConfig, smc, trace
from nfst.smc.lookahead import BetaLookahead, LookaheadProposal, ZeroLookahead
from nfst.smc.resampling import RESAMPLERS
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import exact_sampler, noisy_sampler
from tests.helpers.scorers import path_scores, random_scorer


@pytest.fixture(scope="module")
def setup():
    batch = small_batch()
    scorer = random_scorer(len(batch.mark_vocab), seed=0, normalised=True)
    log_z = log_partition(batch, scorer.arc_weights(batch), scorer.final_weights(batch)).detach()
    return batch, scorer, log_z


def noisy_lookahead(scorer, seed):
    """An inexact lookahead: log β under the scorer's weights plus per-arc noise."""

    def weights(batch):
        g = torch.Generator().manual_seed(seed)
        noise = 0.3 * torch.randn(batch.num_arcs, generator=g, dtype=torch.float64).to(batch.device)
        return scorer.arc_weights(batch).detach() + noise, scorer.final_weights(batch).detach()

    return BetaLookahead(weights)


UNBIASED_CASES = [
    ("none", 0.0, "zero"),
    ("multinomial", 0.5, "zero"),
    ("stratified", 1.0, "zero"),
] + [(scheme, 0.5, "noisy") for scheme in sorted(RESAMPLERS)]


@pytest.mark.parametrize("scheme,tau,look", UNBIASED_CASES)
def test_z_hat_is_unbiased(scheme, tau, look, device):
    """(i) E[Ẑ] = p̃(x, y): R independent runs (the batch's lattices repeated R times) of M = 8
    particles with a poor proposal; the mean of Ẑ / Z is 1 within 4.5 standard errors of the
    mean (estimated from the R runs).

    Ẑ is heavy-tailed when the proposal misses a dominant path (most runs underestimate, a
    few overestimate hugely), and then the sample standard error is unreliable. The flat
    scorer (scale 0.3) and mild lookahead noise keep the tails light: over 20 seeds per case
    no |z| exceeded 3.7."""
    batch = small_batch(device)
    scorer = random_scorer(len(batch.mark_vocab), seed=0, scale=0.3, normalised=True).to(device)
    log_z = log_partition(batch, scorer.arc_weights(batch), scorer.final_weights(batch)).detach()
    R, M = 300, 8
    big = LatticeBatch(batch.lattices * R, device)
    lookahead = ZeroLookahead() if look == "zero" else noisy_lookahead(scorer, seed=3)
    config = SMCConfig(
        particles=M,
        resample_threshold=tau,
        resampling="multinomial" if scheme == "none" else scheme,
    )
    with torch.no_grad():
        r = smc(
            big,
            noisy_sampler(batch, seed=1),
            scorer,
            lookahead,
            config,
            torch.Generator(device).manual_seed(7),
        )
    assert r.log_z.device == batch.device
    if tau > 0:
        assert r.resampled.any()
    else:
        assert not r.resampled.any()
    ratio = torch.exp(r.log_z.view(R, -1) - log_z)  # (R, lattices)
    mean, se = ratio.mean(0), ratio.std(0) / math.sqrt(R)
    assert ((mean - 1).abs() < 4.5 * se).all(), (mean, se)
    assert (se < 0.25).all()  # the check has power: the runs are not hopelessly noisy


def test_resampling_lowers_the_variance_of_log_z_with_exact_lookahead(setup):
    """With the true lookahead, resampling targets the true prefix marginals: log Ẑ is
    less noisy than plain importance sampling with the same poor proposal."""
    batch, scorer, log_z = setup
    R, M = 200, 8
    big = LatticeBatch(batch.lattices * R)
    spread = {}
    for tau in (0.0, 0.5):
        with torch.no_grad():
            r = smc(
                big,
                noisy_sampler(batch, seed=1),
                scorer,
                BetaLookahead.exact(scorer),
                SMCConfig(particles=M, resample_threshold=tau, resampling="systematic"),
                torch.Generator().manual_seed(0),
            )
        spread[tau] = r.log_z.view(R, -1).var(0).sum()
    assert spread[0.5] < 0.8 * spread[0.0], spread


@pytest.mark.parametrize("proposal", ["wfst", "lookahead-proposal"])
def test_exact_lookahead_and_proposal_give_equal_weights(setup, proposal):
    """(ii) C = true log-prob-to-go and q = the posterior: every increment of 000:31 is 1, so
    all particles of a lattice end with weight Z, ESS = M at every step, log Ẑ = log Z."""
    batch, scorer, log_z = setup
    M = 16
    exact = BetaLookahead.exact(scorer)
    sampler = (
        exact_sampler(batch, scorer) if proposal == "wfst" else LookaheadProposal(scorer, exact)
    )
    with torch.no_grad():
        r = smc(
            batch,
            sampler,
            scorer,
            exact,
            SMCConfig(particles=M, resample_threshold=0.5),
            torch.Generator().manual_seed(0),
        )
    assert torch.allclose(r.log_weights, log_z[:, None].expand_as(r.log_weights), atol=1e-9)
    assert torch.allclose(r.ess, torch.full_like(r.ess, M), atol=1e-9)
    assert not r.resampled.any()
    assert torch.allclose(r.log_z, log_z, atol=1e-9)
    assert (r.lengths.min(1).values < r.lengths.max(1).values).any()  # different lengths


@pytest.mark.parametrize("tau", [0.0, 1.0])
def test_ancestry_reconstructs_the_particles_paths(setup, tau):
    """(iv) Tracing ``ancestors`` back through ``step_arcs`` gives each final particle's path;
    the path is a lattice path from the start to a final state, and its independently
    recomputed log p̃ and log q match the ones carried through resampling."""
    batch, scorer, _ = setup
    M = 8
    sampler = noisy_sampler(batch, seed=2)
    with torch.no_grad():
        r = smc(
            batch,
            sampler,
            scorer,
            noisy_lookahead(scorer, 5),
            SMCConfig(particles=M, resample_threshold=tau),
            torch.Generator().manual_seed(3),
        )
        if tau > 0:
            assert r.resampled.sum() >= 4
        traced = trace(r.ancestors, r.step_arcs)
        L = r.arcs.shape[-1]
        assert torch.equal(traced[..., :L], r.arcs) and (traced[..., L:] == -1).all()
        scores = path_scores(batch, scorer)
        for b in range(batch.batch_size):
            for m in range(M):
                path = tuple(r.arcs[b, m, : r.lengths[b, m]].tolist())
                assert path in scores[b], "not a complete lattice path of this lattice"
                assert r.log_p[b, m].item() == pytest.approx(scores[b][path], abs=1e-9)
        assert torch.allclose(
            r.log_p,
            scorer.log_prob(r.marks.view(-1, L), r.lengths.view(-1)).view_as(r.log_p),
            atol=1e-9,
        )
        assert torch.allclose(r.log_q, sampler.score(batch, r.arcs), atol=1e-9)
        assert torch.allclose(r.step_log_p.sum(-1), r.log_p, atol=1e-9)
        assert torch.allclose(r.step_log_q.sum(-1), r.log_q, atol=1e-9)
        if tau == 0:  # no resampling: w = p̃ / q exactly (C_0 and the C_t telescope away)
            assert torch.allclose(r.log_weights, r.log_p - r.log_q, atol=1e-9)
            assert torch.equal(r.ancestors, torch.arange(M).expand_as(r.ancestors))


def test_step_log_q_keeps_the_samplers_gradient(setup):
    batch, scorer, _ = setup
    sampler = noisy_sampler(batch, seed=2)
    r = smc(
        batch,
        sampler,
        scorer,
        None,
        SMCConfig(particles=4, resample_threshold=1.0),
        torch.Generator().manual_seed(0),
    )
    (r.step_choice_log_q * r.filtering_log_weights.exp()).sum().backward()
    assert sampler.log_w.grad is not None and float(sampler.log_w.grad.abs().sum()) > 0


def test_scorer_from_another_task_and_length_cap_are_reported(setup):
    batch, scorer, _ = setup
    with pytest.raises(ValueError, match="different tasks"):
        smc(batch, noisy_sampler(batch, 0), random_scorer(3, 0, normalised=True))
    with pytest.raises(PathTooLongError):
        smc(batch, noisy_sampler(batch, 0), scorer, config=SMCConfig(particles=2, max_length=2))


def test_beam_search_returns_the_true_top_paths(setup):
    """With M = the largest number of paths (32), beam search keeps everything and returns
    each lattice's paths best first; with a narrower beam, distinct lattice paths with their
    exact scores, best first."""
    batch, scorer, _ = setup
    scores = path_scores(batch, scorer)
    for M in (3, 32):
        beam = beam_search(batch, scorer, M)
        for b in range(batch.batch_size):
            finite = torch.isfinite(beam.log_weights[b])
            got = [
                tuple(beam.arcs[b, m, : beam.lengths[b, m]].tolist()) for m in range(M) if finite[m]
            ]
            assert len(set(got)) == len(got) == min(M, len(scores[b]))
            for path, s in zip(got, beam.log_p[b][finite].tolist()):
                assert s == pytest.approx(scores[b][path], abs=1e-9)
            assert (beam.log_p[b][finite].diff() <= 1e-12).all()  # best first
            if M >= len(scores[b]):
                assert sorted(beam.log_p[b][finite].tolist(), reverse=True) == pytest.approx(
                    sorted(scores[b].values(), reverse=True), abs=1e-9
                )


@pytest.mark.parametrize("sampler_name", ["swa", "swp-prefix"])
def test_recurrent_scorer_and_sampler_states_follow_their_ancestors(setup, sampler_name):
    """With an LSTM scorer and a recurrent sampler, both hidden states must be reordered by
    ancestor at each resampling: the log p̃ and log q carried through SMC then equal the final
    paths rescored from scratch. (Every other SMC test uses a stateless scorer, where a
    missing reorder cannot show.)"""
    from nfst.models.scorer import LSTMScorer
    from tests.helpers.samplers import new_sampler

    batch = setup[0]
    torch.manual_seed(0)
    scorer = LSTMScorer(len(batch.mark_vocab), hidden=16, layers=2, dropout=0.0).double().freeze()
    sampler = new_sampler(sampler_name, batch.lattices).eval()
    with torch.no_grad():
        r = smc(
            batch,
            sampler,
            scorer,
            None,
            SMCConfig(particles=8, resample_threshold=1.0),
            torch.Generator().manual_seed(1),
        )
        assert r.resampled.sum() >= 8
        moved = r.ancestors != torch.arange(8).expand_as(r.ancestors)
        assert moved.any(), "resampling never changed a slot: the test could not fail"
        L = r.arcs.shape[-1]
        rescored = scorer.log_prob(r.marks.view(-1, L), r.lengths.view(-1)).view_as(r.log_p)
        assert torch.allclose(r.log_p, rescored, atol=1e-9), (r.log_p - rescored).abs().max()
        assert torch.allclose(r.log_q, sampler.score(batch, r.arcs), atol=1e-9)


@pytest.mark.parametrize("M", [2, 49, 98])
def test_residual_resampling_in_smc_keeps_ancestors_in_their_lattice(setup, M):
    """Equal weights at M = 49 made residual resampling return ancestor M, i.e. a particle of
    the next lattice (or an IndexError on the last one)."""
    batch, scorer, _ = setup
    sampler = exact_sampler(batch, scorer)  # equal weights at every step
    with torch.no_grad():
        r = smc(
            batch,
            sampler,
            scorer,
            BetaLookahead.exact(scorer),
            SMCConfig(particles=M, resample_threshold=1.0, resampling="residual"),
            torch.Generator().manual_seed(0),
        )
    assert r.resampled.any()
    assert int(r.ancestors.max()) < M and int(r.ancestors.min()) >= 0
    assert torch.allclose(r.log_weights, r.log_weights[:, :1].expand_as(r.log_weights), atol=1e-9)
