"""Randomized DP (004 §3): exact at full budget, unbiased for Z and ∇Z, one level's variance as
004 Thm B.1, log Ẑ biased low with a bias that shrinks with the budget.

Statistical tests replicate a few lattices many times in one batch (the selection is drawn per
lattice, so copies are independent runs) and compare means within 3 standard errors."""

import functools
import math

import numpy as np
import pytest
import torch

from nfst.bench.common import cipher_lattices
from nfst.dp import LatticeBatch, arc_posteriors, backward, forward, log_partition
from nfst.dp.randomized import randomized_backward, randomized_forward
from nfst.dp.selection import RDPConfig, level_groups
from nfst.fst.lattice import Lattice
from tests.helpers.brute import lattice_paths
from tests.helpers.lattices import small_lattices


def tiled_weights(lattices, copies, seed, noise=0.5):
    """Per-lattice arc weights θ[mark] + noise (the same for every copy), and θ[mark] alone:
    the cheap arc-factored model of the alpha-beta proposal."""
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(
        max(len(lat.mark_vocab) for lat in lattices), generator=g, dtype=torch.float64
    )
    w, cheap = [], []
    for lat in lattices:
        mark = torch.as_tensor(lat.arc_mark)
        cheap.append(theta[mark])
        w.append(theta[mark] + noise * torch.randn(lat.num_arcs, generator=g, dtype=torch.float64))
    return torch.cat(w).repeat(copies), torch.cat(cheap).repeat(copies)


@functools.lru_cache(maxsize=1)
def cipher_test(n=2):
    return tuple(cipher_lattices(n, "test", processes=1))


def z_ratios(lattices, copies, runs, config, seed=0):
    """(runs · copies · len(lattices),) samples of Ẑ/Z, and of log Ẑ − log Z."""
    batch = LatticeBatch(list(lattices) * copies)
    w, cheap = tiled_weights(lattices, copies, seed)
    log_z = log_partition(batch, w)
    alpha = forward(batch, cheap)
    g = torch.Generator().manual_seed(seed + 1)
    diffs = torch.cat(
        [
            randomized_backward(batch, w, config=config, generator=g, cheap_alpha=alpha).log_z
            - log_z
            for _ in range(runs)
        ]
    )
    return torch.exp(diffs), diffs


def mean_se(x):
    return float(x.mean()), float(x.std() / math.sqrt(len(x)))


def test_full_budget_is_exact_backward_forward_and_gradient():
    lats = small_lattices() + list(cipher_test())
    batch = LatticeBatch(lats)
    w, cheap = tiled_weights(lats, 1, seed=3)
    for budget in (1.0, 10**6):
        config = RDPConfig(budget=budget, proposal="alpha-beta")
        w_ = w.clone().requires_grad_(True)
        rdp = randomized_backward(batch, w_, config=config, cheap_alpha=forward(batch, cheap))
        assert torch.allclose(rdp.values, backward(batch, w), atol=1e-12, rtol=0)
        assert bool((rdp.log_c == 0).all())
        rdp.log_z.sum().backward()
        assert torch.allclose(w_.grad, arc_posteriors(batch, w), atol=1e-12, rtol=0)
        fwd = randomized_forward(batch, w, config=config, cheap_beta=backward(batch, cheap))
        assert torch.allclose(fwd.values, forward(batch, w), atol=1e-12, rtol=0)
        assert torch.allclose(fwd.log_z, log_partition(batch, w), atol=1e-12, rtol=0)


def test_budget_limits_the_kept_states_per_level():
    lat = cipher_test()[0]
    batch = LatticeBatch([lat])
    w, _ = tiled_weights([lat], 1, seed=0)
    rdp = randomized_backward(
        batch,
        w,
        config=RDPConfig(budget=0.1, sampling="replacement"),
        generator=torch.Generator().manual_seed(0),
    )
    kept = torch.isfinite(rdp.log_c).numpy()
    per_level = np.bincount(lat.height, minlength=lat.height.max() + 1)
    kept_per_level = np.bincount(lat.height[kept], minlength=lat.height.max() + 1)
    assert (kept_per_level <= np.ceil(0.1 * per_level)).all()
    assert kept.mean() < 0.2


@pytest.mark.parametrize("budget", [0.01, 0.05, 0.1, 0.2])
def test_z_is_unbiased_on_cipher_test_lattices(budget):
    config = RDPConfig(budget=budget, proposal="alpha-beta")
    ratio, _ = z_ratios(cipher_test(), copies=100, runs=4, config=config)
    mean, se = mean_se(ratio)
    assert abs(mean - 1) <= 3 * se, (mean, se)
    assert ratio.std() > 0  # it is random at all


@pytest.mark.parametrize(
    "proposal,sampling,top_share",
    [
        ("uniform", "replacement", 0.9),
        ("beta", "bernoulli", 0.9),
        ("alpha-beta", "replacement", 0.9),
        ("beta", "bernoulli", 0.0),  # K₂ q > 1 for some states: p = min(1, K₂ q)
        # K₁ = 0: all K states of a level drawn, K₂ = K up to 4 on the 72-state cipher lattice's
        # levels of 5 to 8 states (and 2 on the del/ins lattices'), so states are drawn twice
        ("uniform", "replacement", 0.0),
        ("alpha-beta", "replacement", 0.0),
    ],
)
def test_z_is_unbiased_for_every_proposal_and_sampling(proposal, sampling, top_share):
    config = RDPConfig(budget=0.5, proposal=proposal, sampling=sampling, top_share=top_share)
    if top_share == 0.0:  # some lattice level is sampled with more than one draw
        groups = level_groups(LatticeBatch(small_lattices()), config).values()
        assert any(bool(((g.k - g.k1 > 1) & (g.counts > g.k)).any()) for g in groups)
    ratio, _ = z_ratios(small_lattices(), copies=400, runs=3, config=config)
    mean, se = mean_se(ratio)
    assert abs(mean - 1) <= 3 * se, (mean, se)


def test_forward_z_is_unbiased():
    lats = cipher_test()
    batch = LatticeBatch(list(lats) * 100)
    w, cheap = tiled_weights(lats, 100, seed=0)
    log_z = log_partition(batch, w)
    g = torch.Generator().manual_seed(5)
    config = RDPConfig(budget=0.1, proposal="alpha-beta")
    beta = backward(batch, cheap)
    ratio = torch.cat(
        [
            torch.exp(
                randomized_forward(batch, w, config=config, generator=g, cheap_beta=beta).log_z
                - log_z
            )
            for _ in range(4)
        ]
    )
    mean, se = mean_se(ratio)
    assert abs(mean - 1) <= 3 * se, (mean, se)


def star_lattice(n):
    """start → n middle states → one final state: only the middle level is randomized."""
    src = np.concatenate([np.zeros(n, dtype=np.int64), np.arange(1, n + 1)])
    dst = np.concatenate([np.arange(1, n + 1), np.full(n, n + 1)])
    mark = np.concatenate([np.arange(n), np.zeros(n, dtype=np.int64)])
    final = np.zeros(n + 2, dtype=bool)
    final[-1] = True
    height = np.array([2] + [1] * n + [0])
    return Lattice(
        tuple(f"m{i}" for i in range(n)),
        (),
        (),
        src,
        dst,
        mark,
        final,
        np.zeros((n + 2, 2), dtype=np.int64),
        height,
    )


@pytest.mark.parametrize("sampling", ["replacement", "bernoulli"])
def test_one_level_variance_matches_theorem_b1(sampling):
    n, copies, budget = 20, 40000, 0.3  # K = 6: K1 = 3 by β, K2 = 3 sampled from 17
    lat = star_lattice(n)
    g = torch.Generator().manual_seed(0)
    w_in = torch.randn(n, generator=g, dtype=torch.float64) * 0.7
    w_out = torch.randn(n, generator=g, dtype=torch.float64)
    batch = LatticeBatch([lat] * copies)
    w = torch.cat([w_in, w_out]).repeat(copies)
    config = RDPConfig(budget=budget, top_share=0.5, sampling=sampling)  # q ∝ β(middle) = w_out
    z_hat = torch.exp(
        randomized_backward(
            batch, w, config=config, generator=torch.Generator().manual_seed(1)
        ).log_z
    )
    # 004 Thm B.1 / Cor. B.2 on the tail (all but the top K1 by β)
    a, q = torch.exp(w_in + w_out), torch.softmax(w_out, 0)
    tail = torch.argsort(w_out, descending=True)[3:]
    a, q = a[tail], q[tail] / q[tail].sum()
    if sampling == "replacement":
        theory = float(((a**2 / q).sum() - a.sum() ** 2) / 3)
    else:
        p = torch.clamp(3 * q, max=1.0)
        theory = float((a**2 * (1 - p) / p).sum())
    assert abs(float(z_hat.mean()) - float(torch.exp(w_in + w_out).sum())) < 3 * float(
        z_hat.std()
    ) / math.sqrt(copies)
    assert abs(float(z_hat.var()) / theory - 1) < 0.1, (float(z_hat.var()), theory)


def test_mean_gradient_matches_brute_force_posteriors():
    lats = small_lattices()
    copies = 3000
    batch = LatticeBatch(lats * copies)
    w, _ = tiled_weights(lats, copies, seed=2, noise=1.0)
    w.requires_grad_(True)
    log_z = log_partition(batch, w).detach()
    rdp = randomized_backward(
        batch,
        w,
        config=RDPConfig(budget=0.34, proposal="uniform"),
        generator=torch.Generator().manual_seed(3),
    )
    torch.exp(rdp.log_z - log_z).sum().backward()  # Σ_b Ẑ_b / Z_b: ∇ per copy is ∇Ẑ/Z
    grads = w.grad.view(copies, -1)
    mean, se = grads.mean(0), grads.std(0) / math.sqrt(copies)
    offsets = np.cumsum([0] + [lat.num_arcs for lat in lats])
    w1 = w.detach()[: offsets[-1]]
    exact = []
    for lat, lo in zip(lats, offsets[:-1]):
        paths = lattice_paths(lat)
        scores = torch.stack([w1[lo + torch.as_tensor(p, dtype=torch.long)].sum() for p in paths])
        post = torch.softmax(scores, 0)
        per_arc = torch.zeros(lat.num_arcs, dtype=torch.float64)
        for p, pr in zip(paths, post):
            per_arc[torch.as_tensor(p, dtype=torch.long)] += pr
        exact.append(per_arc)
    exact = torch.cat(exact)
    assert (se > 0).any()  # some arcs are randomized
    assert bool(((mean - exact).abs() <= 3 * se + 1e-12).all()), (mean - exact) / se


def test_log_z_bias_is_negative_and_shrinks_with_the_budget():
    biases = []
    for budget in (0.05, 0.1, 0.2):
        config = RDPConfig(budget=budget, proposal="alpha-beta")
        _, diff = z_ratios(cipher_test(), copies=50, runs=2, config=config)
        biases.append(mean_se(diff))
    for b, se in biases:
        assert b + 3 * se < 0, biases
    for (b_lo, se_lo), (b_hi, se_hi) in zip(biases, biases[1:]):
        assert b_lo + 3 * math.hypot(se_lo, se_hi) < b_hi, biases
