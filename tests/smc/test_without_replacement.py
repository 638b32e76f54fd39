"""Stochastic beam search and priority-sampling estimators against enumeration."""

import itertools
import math

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.evaluate.metrics import expected_length, partial_kl
from nfst.smc.without_replacement import (
    distinct_particles,
    log_z,
    priority_log_weights,
    sample_without_replacement,
)
from tests.helpers.brute import chi_square_critical, lattice_paths
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import noisy_sampler
from tests.helpers.scorers import random_scorer

K, RUNS = 3, 400


def exact_inclusion(q: dict, k: int) -> dict:
    """P(ω among the first k draws without replacement from q), by summing over every
    ordered sequence of k distinct paths (Plackett–Luce)."""
    keys = list(q)
    out = dict.fromkeys(keys, 0.0)
    for seq in itertools.permutations(keys, min(k, len(keys))):
        p, left = 1.0, 1.0
        for key in seq:
            p *= q[key] / left
            left -= q[key]
        for key in seq:
            out[key] += p
    return out


def enumerate_paths(lattice, sampler, scorer):
    """Every path of ``lattice`` (tuples of local arc ids) -> (q, log p̃, length)."""
    keys = [tuple(p) for p in lattice_paths(lattice)]
    arcs = torch.full((1, len(keys), max(1, max(map(len, keys)))), -1)
    for i, key in enumerate(keys):
        arcs[0, i, : len(key)] = torch.tensor(key, dtype=torch.long)
    one = LatticeBatch([lattice])
    log_q = sampler.score(one, arcs)[0].detach().double()
    marks = torch.where(arcs >= 0, one.arc_mark[arcs.clamp(min=0)], arcs)[0]
    log_p = scorer.log_prob(marks, torch.tensor([len(k) for k in keys])).detach().double()
    return {key: (float(lq.exp()), float(lp), len(key)) for key, lq, lp in zip(keys, log_q, log_p)}


@pytest.fixture(scope="module")
def setup():
    base = small_batch()
    sampler = noisy_sampler(base, seed=1)
    scorer = random_scorer(len(base.mark_vocab), seed=0, normalised=True)
    batch = LatticeBatch(base.lattices * RUNS)  # RUNS independent runs in one call
    paths = sample_without_replacement(sampler, batch, K, torch.Generator().manual_seed(0))
    local = torch.where(paths.arcs >= 0, paths.arcs - batch.arc_offsets[:-1, None, None], -1)
    samples = [
        [
            tuple(a for a in row if a >= 0)
            for row, ok in zip(local[b].tolist(), paths.valid[b].tolist())
            if ok
        ]
        for b in range(batch.batch_size)
    ]
    exact = [enumerate_paths(lat, sampler, scorer) for lat in base.lattices]
    log_p = torch.tensor(
        [
            [exact[b % base.batch_size].get(key, (0, -math.inf))[1] for key in samples[b]]
            + [-math.inf] * (K - len(samples[b]))
            for b in range(batch.batch_size)
        ],
        dtype=torch.float64,
    )
    return base, paths, samples, log_p, exact


def test_samples_are_distinct_and_inclusion_matches_enumeration(setup):
    """Each run gives min(k, #paths) distinct paths, and how often each path is included
    matches its exact inclusion probability under draws without replacement (per path within
    4 SE, and jointly by a χ² bound, p ≈ 0.001)."""
    base, _, samples, _, exact = setup
    B = base.batch_size
    for b0 in range(B):
        q = {key: v[0] for key, v in exact[b0].items()}
        counts = dict.fromkeys(q, 0)
        for r in range(RUNS):
            sample = samples[r * B + b0]
            assert len(set(sample)) == len(sample) == min(K, len(q))
            for key in sample:
                counts[key] += 1
        incl = exact_inclusion(q, K)
        z = [
            (counts[key] / RUNS - p) / math.sqrt(p * (1 - p) / RUNS)
            for key, p in incl.items()
            if 1e-9 < p < 1 - 1e-9
        ]
        assert max(map(abs, z), default=0.0) < 4.0, (b0, max(map(abs, z)))
        assert sum(v * v for v in z) < chi_square_critical(len(z)), b0


def test_priority_estimators_are_unbiased(setup):
    """Over RUNS runs, within 3 SE: E[Ẑ] = Z, E[partial KL estimate] = E_q[log q − log p̃]
    and E[Σ_i W_i |ω_i|] = Σ_ω p̃(ω) |ω| (the numerator of the expected-length estimate)."""
    base, paths, _, log_p, exact = setup
    B = base.batch_size
    z_hat = log_z(paths, log_p).exp().view(RUNS, B)
    kl_hat = partial_kl(paths.log_q, log_p, paths.log_inclusion).view(RUNS, B)
    weights = priority_log_weights(paths, log_p).exp()
    len_hat = (weights * paths.lengths).sum(1).view(RUNS, B)
    for b0 in range(B):
        vals = exact[b0].values()
        Z = sum(math.exp(lp) for _, lp, _ in vals)
        kl = sum(q * (math.log(q) - lp) for q, lp, _ in vals)
        total_length = sum(math.exp(lp) * n for _, lp, n in vals)
        for est, truth in ((z_hat[:, b0], Z), (kl_hat[:, b0], kl), (len_hat[:, b0], total_length)):
            se = float(est.std()) / math.sqrt(RUNS)
            assert abs(float(est.mean()) - truth) <= 3 * se + 1e-12 * abs(truth), (b0, truth)


def test_expected_length_is_exact_when_every_path_is_drawn():
    """k ≥ #paths: the estimate Σ W_i |ω_i| / Σ W_i equals E_p|ω| = Σ_ω p̃(ω)|ω| / Σ_ω p̃(ω)
    computed by enumeration, in every run (the inclusion probabilities are all 1)."""
    base = small_batch()
    sampler = noisy_sampler(base, seed=2)
    scorer = random_scorer(len(base.mark_vocab), seed=3, normalised=True)
    lat = base.lattices[3]  # 8 paths of different lengths
    exact = enumerate_paths(lat, sampler, scorer)
    truth = sum(math.exp(lp) * n for _, lp, n in exact.values()) / sum(
        math.exp(lp) for _, lp, _ in exact.values()
    )
    assert len({n for _, _, n in exact.values()}) > 1
    batch = LatticeBatch([lat] * 3)
    paths = sample_without_replacement(sampler, batch, 9, torch.Generator().manual_seed(0))
    local = torch.where(paths.arcs >= 0, paths.arcs - batch.arc_offsets[:-1, None, None], -1)
    log_p = torch.tensor(
        [
            [
                exact[tuple(a for a in row if a >= 0)][1] if ok else -math.inf
                for row, ok in zip(local[b].tolist(), paths.valid[b].tolist())
            ]
            for b in range(3)
        ],
        dtype=torch.float64,
    )
    assert torch.allclose(
        expected_length(priority_log_weights(paths, log_p), paths.lengths),
        torch.full((3,), truth, dtype=torch.float64),
        atol=1e-9,
    )


def test_all_paths_and_exact_estimates_when_the_lattice_has_at_most_k():
    """k ≥ #paths: every path exactly once, κ = −∞, π = 1, Ẑ exact, in every run."""
    base = small_batch()
    sampler = noisy_sampler(base, seed=2)
    scorer = random_scorer(len(base.mark_vocab), seed=3, normalised=True)
    batch = LatticeBatch([base.lattices[1], base.lattices[3]])  # 5 and 8 paths
    for seed in range(3):
        p = distinct_particles(sampler, scorer, batch, 8, torch.Generator().manual_seed(seed))
        for b, lat in enumerate(batch.lattices):
            exact = enumerate_paths(lat, sampler, scorer)
            local = p.arcs[b] - batch.arc_offsets[b]
            got = {
                tuple(a for a in row if a >= 0)
                for row, lw in zip(
                    torch.where(p.arcs[b] >= 0, local, -1).tolist(), p.log_weights[b].tolist()
                )
                if lw > -math.inf
            }
            assert got == set(exact)
            Z = math.log(sum(math.exp(v[1]) for v in exact.values()))
            assert float(p.log_z[b]) == pytest.approx(Z, abs=1e-9)


def test_distinct_summary_and_training_loss_are_exact_when_every_path_is_drawn():
    """k ≥ #paths: the dedup ESS without replacement is (Σ p̃)² / Σ p̃² over every path, the
    partial KL estimate is E_q[log q − log p̃], and the training loss is the cross-entropy
    −Σ_ω p(ω) log q(ω) with the sampler's gradient."""
    from nfst.evaluate.samplers import summarize_distinct
    from nfst.smc.without_replacement import inclusive_kl_loss

    base = small_batch()
    sampler = noisy_sampler(base, seed=2)
    scorer = random_scorer(len(base.mark_vocab), seed=3, normalised=True)
    lat = base.lattices[1]  # 5 paths
    exact = enumerate_paths(lat, sampler, scorer)
    p = torch.tensor([math.exp(v[1]) for v in exact.values()])
    q = torch.tensor([v[0] for v in exact.values()])
    summary = summarize_distinct(sampler, scorer, [lat], k=6)
    assert summary["ess_wor"] == pytest.approx(float(p.sum() ** 2 / (p**2).sum()))
    exact_kl = float((q * (q.log() - p.log())).sum())
    assert summary["partial_kl_wor"] == pytest.approx(exact_kl, rel=1e-6)
    loss = inclusive_kl_loss(sampler, scorer, LatticeBatch([lat]), 6)
    assert float(loss.detach()) == pytest.approx(float(-(p / p.sum() * q.log()).sum()), rel=1e-6)
    loss.backward()
    assert any(w.grad is not None and bool(w.grad.abs().sum() > 0) for w in sampler.parameters())
