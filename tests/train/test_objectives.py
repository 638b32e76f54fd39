"""Objectives: their values and gradients against exact enumeration on small lattices."""

import math

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import log_partition
from nfst.train.objectives import (
    EMABaseline,
    exclusive_kl_loss,
    inclusive_kl_loss,
    iwae_bound,
    iwae_loss,
    normalized_weights,
    sampler_loss,
)
from tests.helpers.lattices import cipher_lattice
from tests.helpers.samplers import FreeWeightSampler, all_paths, exact_log_p
from tests.helpers.scorers import random_scorer


def setting(seed=0):
    """The cipher lattice, a random arc-factored scorer and a random free-weight q."""
    lat = cipher_lattice()
    batch = LatticeBatch([lat])
    scorer = random_scorer(len(lat.mark_vocab), seed=seed, scale=0.7)
    g = torch.Generator().manual_seed(seed + 100)
    q = FreeWeightSampler(
        batch, torch.randn(batch.num_arcs, generator=g, dtype=torch.float64) * 0.7
    )
    return batch, scorer, q


def exact(batch, scorer, q):
    arcs, _ = all_paths(batch)
    log_p_tilde = exact_log_p(scorer, batch, arcs)[0]
    log_q = q.score(batch, arcs)[0]
    return log_p_tilde, log_q


def flat_grad(loss, q):
    return torch.autograd.grad(loss, [q.log_w])[0]


def test_weights_are_a_detached_softmax():
    log_p = torch.tensor([[0.0, 1.0, 2.0]])
    log_q = torch.tensor([[0.0, 0.0, 1.0]], requires_grad=True)
    w = normalized_weights(log_p, log_q)
    torch.testing.assert_close(w, torch.softmax(torch.tensor([[0.0, 1.0, 1.0]]), 1))
    assert not w.requires_grad


def test_inclusive_gradient_approaches_the_exact_gradient():
    """With many samples, −Σ w̄ ∇log q → −Σ_z p(z) ∇log q(z) = ∇ KL(p ‖ q)."""
    batch, scorer, q = setting()
    log_p_tilde, log_q = exact(batch, scorer, q)
    p = torch.softmax(log_p_tilde, 0)
    expected = flat_grad(-(p * log_q).sum(), q)
    estimates = []
    g = torch.Generator().manual_seed(0)
    for _ in range(10):
        paths = q.sample(batch, 2000, g)
        estimates.append(flat_grad(inclusive_kl_loss(scorer.score_paths(paths), paths.log_q), q))
    est = torch.stack(estimates)
    se = est.std(0) / math.sqrt(len(est))
    assert ((est.mean(0) - expected).abs() <= 5 * se + 2e-3).all(), (est.mean(0), expected)


def test_exclusive_gradient_is_unbiased():
    """E_q[(d − b) ∇log q] = ∇ KL(q ‖ p) for any constant baseline b (000:43–45)."""
    batch, scorer, q = setting(1)
    log_p_tilde, log_q = exact(batch, scorer, q)
    log_z = torch.logsumexp(log_p_tilde, 0)
    kl = (log_q.exp() * (log_q - (log_p_tilde - log_z))).sum()
    expected = flat_grad(kl, q)
    estimates = []
    g = torch.Generator().manual_seed(1)
    baseline = EMABaseline()
    for _ in range(20):
        paths = q.sample(batch, 1000, g)
        estimates.append(
            flat_grad(exclusive_kl_loss(scorer.score_paths(paths), paths.log_q, baseline), q)
        )
    est = torch.stack(estimates)
    se = est.std(0) / math.sqrt(len(est))
    assert ((est.mean(0) - expected).abs() <= 5 * se + 1e-3).all(), (est.mean(0), expected)


def test_ema_baseline_follows_000_appendix_b():
    b = EMABaseline()
    log_q = torch.zeros(2, 3, requires_grad=True)
    exclusive_kl_loss(torch.full((2, 3), -4.0), log_q, b)  # d̄ = 4: the first value
    assert b.value == 4.0
    exclusive_kl_loss(torch.full((2, 3), -2.0), log_q, b)  # d̄ = 2
    assert b.value == pytest.approx(0.1 * 4.0 + 0.9 * 2.0)


def test_mixture_interpolates():
    log_p = torch.tensor([[-1.0, -3.0, -2.0]])
    log_q = torch.tensor([[-0.5, -1.5, -2.5]], requires_grad=True)
    inc = inclusive_kl_loss(log_p, log_q)
    assert sampler_loss(log_p, log_q, 0.0) == inc
    exc = exclusive_kl_loss(log_p, log_q, EMABaseline(value=0.3))
    assert sampler_loss(log_p, log_q, 1.0, EMABaseline(value=0.3)) == exc
    mixed = sampler_loss(log_p, log_q, 0.25, EMABaseline(value=0.3))
    torch.testing.assert_close(mixed, 0.75 * inc + 0.25 * exc)
    with pytest.raises(ValueError):
        sampler_loss(log_p, log_q, 1.5)
    # without a running baseline the exclusive term takes the leave-one-out baselines
    loo = exclusive_kl_loss(log_p, log_q)
    torch.testing.assert_close(sampler_loss(log_p, log_q, 0.25), 0.75 * inc + 0.25 * loo)


def test_iwae_bound_is_exact_for_the_exact_posterior_and_a_bound_otherwise():
    batch, scorer, q = setting(2)
    w, f = scorer.arc_weights(batch).detach(), scorer.final_weights(batch).detach()
    log_z = log_partition(batch, w, f)
    # q = the exact posterior: a WFST with the scorer's weights (STOP weight folded into β)
    exact_q = FreeWeightSampler(batch, w.clone())
    paths = exact_q.sample(batch, 8, torch.Generator().manual_seed(0))
    # the free-weight sampler has final weight 0; the scorer's EOS weight is a constant per path
    torch.testing.assert_close(
        iwae_bound(scorer.score_paths(paths), paths.log_q), log_z, rtol=0, atol=1e-10
    )
    # any other q: E[bound] ≤ log Z, and the bound grows with K (003:14)
    means = []
    for K in (1, 4, 32):
        paths = q.sample(batch, 400 * K, torch.Generator().manual_seed(K))
        log_w = (scorer.score_paths(paths) - paths.log_q).view(400, K)
        bounds = torch.logsumexp(log_w, 1) - math.log(K)
        means.append((bounds.mean().item(), bounds.std().item() / 20))
    for m, se in means:
        assert m <= log_z.item() + 4 * se
    assert means[0][0] < means[1][0] < means[2][0]


def test_iwae_loss_gradient_uses_the_surrogate_with_normalised_weights():
    log_p = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    log_q = torch.tensor([[-0.5, -0.5]], requires_grad=True)
    iwae_loss(log_p, log_q).backward()
    torch.testing.assert_close(log_p.grad, -torch.softmax(torch.tensor([[-1.0, -2.0]]), 1))
    assert log_q.grad is None
    surrogate = torch.tensor([[-3.0, -4.0]], requires_grad=True)
    iwae_loss(log_p.detach(), log_q, surrogate).backward()
    torch.testing.assert_close(surrogate.grad, -torch.softmax(torch.tensor([[-1.0, -2.0]]), 1))


def _exclusive_gradients(baseline_of, k=4, R=4000, seed=0):
    """Per-row REINFORCE estimates (R, P) of ∇_θ KL(q_θ ‖ p) for q_θ = softmax(θ) over the P
    paths of an enumerable lattice and p its posterior under an arc-factored scorer, each row
    from k draws with the baselines ``baseline_of(d)`` (R, k); and the exact gradient (P,)."""
    from tests.helpers.brute import lattice_paths
    from tests.helpers.lattices import cipher_lattice
    from tests.helpers.scorers import random_scorer

    lattice = cipher_lattice()
    scorer = random_scorer(len(lattice.mark_vocab), seed=2, scale=1.0)
    paths = lattice_paths(lattice)
    theta_ = scorer.weights.detach()
    log_p = torch.stack([theta_[lattice.arc_mark[p]].sum() + theta_[-1] for p in paths])
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(len(paths), generator=g, dtype=torch.float64) * 0.5
    rows = theta.expand(R, -1).clone().requires_grad_()
    log_q_all = torch.log_softmax(rows, -1)
    idx = torch.multinomial(log_q_all.detach().exp(), k, replacement=True, generator=g)
    log_q, lp = log_q_all.gather(1, idx), log_p[idx]
    d = (log_q - lp).detach()
    loss = ((d - baseline_of(d)) * log_q).mean()
    (estimates,) = torch.autograd.grad(loss * R, rows)
    exact_theta = theta.clone().requires_grad_()
    q = torch.softmax(exact_theta, 0)
    kl = (q * (torch.log_softmax(exact_theta, 0) - torch.log_softmax(log_p, 0))).sum()
    (exact,) = torch.autograd.grad(kl, exact_theta)
    return estimates, exact


def test_leave_one_out_reinforce_is_unbiased_and_a_baseline_with_the_sample_is_not():
    """003 §6: the leave-one-out estimator's mean equals ∇ KL(q ‖ p) (every coordinate within
    4.5 SE over 4,000 draws of k = 4), through exclusive_kl_loss; the mean over all k samples,
    the sample itself included, is (k − 1)/k of it and fails the same check."""
    from nfst.train.objectives import exclusive_kl_loss, leave_one_out

    est, exact = _exclusive_gradients(leave_one_out)
    mean, se = est.mean(0), est.std(0) / math.sqrt(len(est))
    assert exact.abs().max() > 0.05  # a gradient worth estimating
    assert ((mean - exact).abs() <= 4.5 * se).all(), (mean - exact) / se
    # the loss function itself, with no baseline object, is the leave-one-out surrogate
    d = torch.randn(3, 4, dtype=torch.float64)
    log_q = torch.randn(3, 4, dtype=torch.float64)
    assert torch.allclose(
        exclusive_kl_loss(log_q - d, log_q, None), ((d - leave_one_out(d)) * log_q).mean()
    )
    est, exact = _exclusive_gradients(lambda d: d.mean(1, keepdim=True))
    mean, se = est.mean(0), est.std(0) / math.sqrt(len(est))
    assert ((mean - exact).abs() > 4.5 * se).any()


def test_leave_one_out_takes_the_mean_of_the_other_samples():
    """b_k = (1/(k − 1)) Σ_{j≠k} d_j, each pair's own (003 §6): where a pair's d are all equal,
    each b_k is that d and the surrogate's gradient vanishes."""
    from nfst.train.objectives import leave_one_out

    d = torch.tensor([[1.0, 2.0, 3.0, 6.0], [4.0, 4.0, 4.0, 4.0]])
    torch.testing.assert_close(
        leave_one_out(d), torch.tensor([[11 / 3, 10 / 3, 3.0, 2.0], [4.0, 4.0, 4.0, 4.0]])
    )
    log_q = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    exclusive_kl_loss(log_q.detach() - 2.5, log_q).backward()  # d = 2.5 for every sample
    torch.testing.assert_close(log_q.grad, torch.zeros(1, 3))


def test_ema_baseline_is_subtracted_from_d():
    """The surrogate mean_k (d − b) log q (000:45): its gradient in log q is (d − b) / (B k);
    where every d equals b, it vanishes."""
    log_p = torch.tensor([[-1.0, -3.0], [-2.0, -2.5]])
    log_q = torch.tensor([[-0.5, -1.5], [-1.0, -0.5]], requires_grad=True)
    exclusive_kl_loss(log_p, log_q, EMABaseline(value=0.3)).backward()
    torch.testing.assert_close(log_q.grad, ((log_q - log_p).detach() - 0.3) / 4)
    log_q.grad = None
    exclusive_kl_loss(log_q.detach() - 0.3, log_q, EMABaseline(value=0.3)).backward()
    torch.testing.assert_close(log_q.grad, torch.zeros(2, 2))
