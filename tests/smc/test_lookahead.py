import math

import pytest
import torch

from nfst.dp.passes import backward
from nfst.smc.engine import SMCConfig, smc
from nfst.smc.fitting import fit_lookahead
from nfst.smc.lookahead import (
    BetaLookahead,
    LearnedLookahead,
    LookaheadProposal,
    ScorerWalk,
    ZeroLookahead,
)
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import exact_sampler, noisy_sampler
from tests.helpers.scorers import path_scores, random_scorer


@pytest.fixture(scope="module")
def setup():
    batch = small_batch()
    return batch, random_scorer(len(batch.mark_vocab), seed=0, normalised=True)


def prefixes(batch, scores):
    """(lattice, state after the prefix, prefix arcs, log p̃ of the prefix's marks, brute-force
    log-prob-to-go H = log Σ_{paths z ⊒ prefix} p̃(z) − log p̃(prefix))."""
    out = []
    for b, table in enumerate(scores):
        seen = {}
        for path, score in table.items():
            for t in range(len(path) + 1):
                seen.setdefault(path[:t], []).append(score)
        for prefix, ext in seen.items():
            state = int(batch.arc_dst[prefix[-1]]) if prefix else int(batch.start[b])
            out.append(
                (
                    b,
                    state,
                    prefix,
                    torch.logsumexp(torch.tensor(ext, dtype=torch.float64), 0).item(),
                )
            )
    return out


def all_states_walk(batch, scorer):
    """A walk with one walker on every state of the batch (empty prefix)."""
    S = batch.num_states
    lattice = batch.state_lattice
    return ScorerWalk(
        lattice=lattice,
        state=torch.arange(S),
        alive=torch.ones(S, dtype=torch.bool),
        length=torch.zeros(S, dtype=torch.long),
        last_mark=torch.full((S,), scorer.vocab_size),
        hidden=scorer.start(S),
        scorer=scorer,
    )


def test_exact_lookahead_is_the_brute_force_log_prob_to_go(setup):
    batch, scorer = setup
    look = BetaLookahead.exact(scorer)
    context = look.prepare(batch)
    theta = scorer.weights.detach()
    for _, state, prefix, log_ext in prefixes(batch, path_scores(batch, scorer)):
        g = float(theta[batch.arc_mark[list(prefix)]].sum()) if prefix else 0.0
        assert context[state].item() == pytest.approx(log_ext - g, abs=1e-9)


def test_lookahead_proposal_is_the_bootstrap_filter_with_zero_and_the_posterior_with_exact(setup):
    """000:26 with C = 0: p_θ renormalised over the legal choices; with C = H: the posterior's
    transition probabilities (003 Alg. 1 on the scorer's weights)."""
    batch, scorer = setup
    walk = all_states_walk(batch, scorer)
    theta = scorer.weights.detach()
    zero = LookaheadProposal(scorer, ZeroLookahead())
    lq = zero.log_probs(batch, zero.prepare(batch), walk)
    arcs = batch.out_arcs
    logits = torch.cat(
        [
            torch.where(
                arcs >= 0,
                theta[batch.arc_mark[arcs.clamp(min=0)]],
                torch.tensor(float("-inf"), dtype=theta.dtype),
            ),
            theta[-1].expand(len(arcs)).masked_fill(~batch.final, float("-inf"))[:, None],
        ],
        1,
    )
    assert torch.allclose(lq, torch.log_softmax(logits, 1), atol=1e-9)
    exact = LookaheadProposal(scorer, BetaLookahead.exact(scorer))
    lq = exact.log_probs(batch, exact.prepare(batch), walk)
    assert torch.allclose(lq.exp(), exact_sampler(batch, scorer).prepare(batch).exp(), atol=1e-9)


def test_untrained_learned_lookahead_is_a_uniform_unigram_beta(setup):
    batch, scorer = setup
    look = LearnedLookahead(scorer.vocab_size)
    context = look.prepare(batch)
    u = -math.log(scorer.vocab_size + 1)
    final = torch.full((batch.num_states,), u).masked_fill(~batch.final, float("-inf"))
    beta = backward(batch, torch.full((batch.num_arcs,), u), final)
    walk = all_states_walk(batch, scorer)
    assert torch.allclose(look(batch, context, walk), beta, atol=1e-5)


def test_regression_target_is_exact_under_the_exact_proposal(setup):
    """With q = the posterior every path's log-weight-to-go is H_t exactly, so a head that
    equals the exact log β (u = θ, zero MLP) has zero regression loss; under a poor
    proposal the targets are noisy and the loss is not zero."""
    batch, scorer = setup
    look = LearnedLookahead(scorer.vocab_size).double()
    with torch.no_grad():
        look.mark_weights.copy_(scorer.weights)
    for sampler, zero in ((exact_sampler(batch, scorer), True), (noisy_sampler(batch, 1), False)):
        with torch.no_grad():
            r = smc(
                batch,
                sampler,
                scorer,
                None,
                SMCConfig(particles=8, resample_threshold=0.0),
                torch.Generator().manual_seed(0),
            )
            loss = look.regression_loss(batch, r.arcs, r.step_log_p, r.step_log_q).item()
        assert (loss < 1e-18) if zero else (loss > 1e-2)


def test_fitted_lookahead_approaches_the_true_log_prob_to_go(setup):
    """Regression on exact-proposal particles brings c_φ from > 5 nats off H_t to < 0.3 nats,
    averaged over prefixes weighted by their posterior probability (prefixes the posterior
    never visits get no training signal)."""
    batch, scorer = setup
    torch.manual_seed(0)
    look = LearnedLookahead(scorer.vocab_size)
    truth = backward(batch, scorer.arc_weights(batch), scorer.final_weights(batch)).detach()
    log_z = truth[batch.start]
    cases = prefixes(batch, path_scores(batch, scorer))
    states = torch.tensor([s for _, s, _, _ in cases])
    last = torch.tensor(
        [int(batch.arc_mark[p[-1]]) if p else scorer.vocab_size for _, _, p, _ in cases]
    )
    length = torch.tensor([len(p) for _, _, p, _ in cases])
    mass = torch.tensor([math.exp(ext - log_z[b]) for b, _, _, ext in cases])

    def error():
        with torch.no_grad():
            c = look.values(batch, look.prepare(batch), states, last, length)
        return float(((c.double() - truth[states]).abs() * mass).sum() / mass.sum())

    before = error()
    fit_lookahead(
        look,
        exact_sampler(batch, scorer),
        scorer,
        batch.lattices,
        steps=150,
        batch_size=4,
        particles=8,
        lr=0.1,
    )
    after = error()
    assert before > 5 and after < 0.3, (before, after)


def test_swp_beta_lookahead_is_swps_own_backward_value(setup):
    from nfst.models.samplers import SamplerConfig, Vocabulary, make_sampler

    batch, scorer = setup
    torch.manual_seed(0)
    swp = make_sampler("swp", Vocabulary(batch.mark_vocab), SamplerConfig(d=8, dropout=0.0)).eval()
    with torch.no_grad():
        c = BetaLookahead.from_sampler(swp, scale=0.5).prepare(batch)
        _, log_beta, _ = swp.arc_log_weights(batch)
    assert torch.allclose(c, 0.5 * log_beta, atol=1e-5)
