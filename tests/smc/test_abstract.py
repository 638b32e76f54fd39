"""Abstract particles: coverage, the region invariant and unbiased Ẑ, against enumeration."""

import math

import numpy as np
import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import log_partition
from nfst.models.scorer import LSTMScorer
from nfst.smc.abstract import AbstractConfig, AbstractProposal, MarkNgram, build_regions
from nfst.smc.engine import SMCConfig, smc
from nfst.smc.without_replacement import distinct_particles
from tests.helpers.brute import lattice_paths
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import noisy_sampler
from tests.helpers.scorers import random_scorer

RUNS = 300


def lstm_scorer(vocab: int) -> LSTMScorer:
    torch.manual_seed(0)
    return LSTMScorer(vocab, hidden=8, layers=1, dropout=0.0).double().freeze()


def all_paths(lattice):
    """(1, n, L) local arc ids of every path, -1 padded, and their keys."""
    keys = [tuple(p) for p in lattice_paths(lattice)]
    arcs = torch.full((1, len(keys), max(1, max(map(len, keys)))), -1)
    for i, key in enumerate(keys):
        arcs[0, i, : len(key)] = torch.tensor(key, dtype=torch.long)
    return keys, arcs


@pytest.fixture(scope="module")
def setup():
    batch = small_batch()
    scorer = lstm_scorer(len(batch.mark_vocab))
    surrogate = MarkNgram.fit(
        scorer, noisy_sampler(batch, seed=1), batch.lattices, depth=2, paths=8
    )
    # k = 1 region per state: most states need their catch-all
    proposal = AbstractProposal(surrogate, AbstractConfig(regions=1, depth=2))
    return batch, scorer, proposal


def test_every_path_has_positive_probability_and_q_sums_to_one(setup):
    batch, _, proposal = setup
    catch_alls = 0
    for lat in batch.lattices:
        _, arcs = all_paths(lat)
        log_q = proposal.score(LatticeBatch([lat]), arcs)[0]
        assert bool(torch.isfinite(log_q).all())
        assert float(log_q.exp().sum()) == pytest.approx(1.0, abs=1e-9)
        catch_alls += sum(h is None for h in proposal.regions(lat).history)
    assert catch_alls > 0


def test_a_region_is_its_state_and_the_last_d_marks(setup):
    """Walking any path through the region lattice: each region's state is the path's state
    and its concrete history is the suffix of BOS + the marks so far (at most d of them)."""
    batch, _, proposal = setup
    V = proposal.vocab_size
    for lat in batch.lattices:
        built = proposal.regions(lat)
        out = built.lattice.arc_offsets
        for key in all_paths(lat)[0]:
            r, seq = 0, (V,)
            for a in key:
                h = built.history[r]
                assert built.state[r] == lat.arc_src[a]
                assert h is None or (len(h) <= 2 and seq[len(seq) - len(h) :] == h)
                column = a - lat.arc_offsets[lat.arc_src[a]]
                r = int(built.lattice.arc_dst[out[r] + column])
                seq += (int(lat.arc_mark[a]),)
            assert built.state[r] == (lat.arc_dst[key[-1]] if key else 0)


@pytest.mark.parametrize("how", ["with replacement", "without replacement"])
def test_z_hat_is_unbiased(setup, how):
    """The proposal corrected by the LSTM scorer: E[Ẑ] = Σ_ω p̃_θ(ω) within 3 SE over RUNS
    runs, importance sampling with replacement (M = 4) or priority sampling (k = 4)."""
    batch, scorer, proposal = setup
    repeated = LatticeBatch(batch.lattices * RUNS)
    generator = torch.Generator().manual_seed(0)
    if how == "with replacement":
        z = smc(
            repeated,
            proposal,
            scorer,
            None,
            SMCConfig(particles=4, resample_threshold=0.0),
            generator,
        ).log_z
    else:
        z = distinct_particles(proposal, scorer, repeated, 4, generator).log_z
    z = z.exp().view(RUNS, batch.batch_size)
    for b, lat in enumerate(batch.lattices):
        _, arcs = all_paths(lat)
        one = LatticeBatch([lat])
        marks = torch.where(arcs >= 0, one.arc_mark[arcs.clamp(min=0)], arcs)[0]
        Z = float(scorer.log_prob(marks, (arcs[0] >= 0).sum(-1)).exp().sum())
        se = float(z[:, b].std()) / math.sqrt(RUNS)
        assert abs(float(z[:, b].mean()) - Z) <= 3 * se + 1e-12, (b, Z, float(z[:, b].mean()), se)


def test_exact_for_an_arc_factored_scorer():
    """With d = 0 the surrogate is a unigram; fitted to a unigram scorer it is the scorer, so
    the proposal is the exact posterior and every importance weight equals Z."""
    batch = small_batch()
    scorer = random_scorer(len(batch.mark_vocab), seed=0, normalised=True)
    surrogate = MarkNgram.fit(scorer, noisy_sampler(batch, seed=1), batch.lattices, depth=0)
    proposal = AbstractProposal(surrogate, AbstractConfig(regions=2, depth=0))
    log_z = log_partition(batch, scorer.arc_weights(batch), scorer.final_weights(batch))
    result = smc(
        batch,
        proposal,
        scorer,
        None,
        SMCConfig(particles=8, resample_threshold=0.0),
        torch.Generator().manual_seed(0),
    )
    assert torch.allclose(result.log_weights, log_z[:, None].expand(-1, 8).double(), atol=1e-9)


def prefix_masses(lattice, built, V: int, d: int):
    """Brute force over every prefix of ``lattice`` (every partial path from the start): walk
    it through the region lattice, multiplying the surrogate's arc weights g(m | h_r) of the
    regions it passes. Returns, per lattice state s, {h: log mass of the prefixes that reach s
    and end in h (the last d marks after BOS)} and, per prefix, (s, h, region reached, log
    mass)."""
    offsets, out = lattice.arc_offsets, built.lattice.arc_offsets
    by_state: dict[int, dict[tuple, float]] = {}
    prefixes = []
    stack = [(0, ())]
    while stack:
        s, arcs = stack.pop()
        r, log_w = 0, 0.0
        for a in arcs:
            column = a - offsets[lattice.arc_src[a]]
            log_w += float(built.arc_weights[out[r] + column])
            r = int(built.lattice.arc_dst[out[r] + column])
        h = ((V,) + tuple(int(lattice.arc_mark[a]) for a in arcs))[len(arcs) + 1 - d :]
        table = by_state.setdefault(s, {})
        table[h] = float(np.logaddexp(table.get(h, -np.inf), log_w))
        prefixes.append((s, h, r, log_w))
        for a in range(offsets[s], offsets[s + 1]):
            stack.append((int(lattice.arc_dst[a]), arcs + (a,)))
    return by_state, prefixes


def random_ngram(V: int, seed: int) -> MarkNgram:
    """A depth-1 mark bigram with random rows for every history (BOS = V) and the unigram."""
    rng = np.random.default_rng(seed)
    table = {h: rng.normal(size=V + 1) * 2.0 for h in [()] + [(m,) for m in range(V + 1)]}
    return MarkNgram(V, 1, table)


def test_kept_regions_are_the_top_k_by_forward_mass_and_the_catch_all_holds_the_rest(setup):
    """k = 1, d = 1, by enumeration of every prefix under the surrogate: at each lattice state
    the one concrete region kept is the history of largest forward mass α(s, h) (the mass of
    the prefixes reaching s that end in h, their arcs weighted by the region lattice), every
    other prefix lies in the catch-all, whose mass is the total minus the kept region's. A
    catch-all mass that also counted the kept regions inflates α downstream and keeps the
    wrong region at a later state."""
    batch, scorer, _ = setup
    V = len(batch.mark_vocab)
    fitted = MarkNgram.fit(scorer, noisy_sampler(batch, seed=1), batch.lattices, depth=1, paths=8)
    k, catch_alls = 1, 0
    for surrogate in [fitted, random_ngram(V, 0), random_ngram(V, 4)]:
        for lat in batch.lattices:
            built = build_regions(lat, surrogate, AbstractConfig(regions=k, depth=1))
            masses, prefixes = prefix_masses(lat, built, V, 1)
            region = {(int(s), h): r for r, (s, h) in enumerate(zip(built.state, built.history))}
            for s, mass in masses.items():
                ranked = sorted(mass, key=lambda h: -mass[h])
                kept = {h for (t, h) in region if t == s and h is not None}
                assert kept == set(ranked[:k]), (s, mass, kept)
                if len(ranked) > k:  # no near-tie makes the order ambiguous
                    assert mass[ranked[k - 1]] - mass[ranked[k]] > 1e-9
                assert ((s, None) in region) == (len(ranked) > k)
            catch_all_mass: dict[int, float] = {}
            for s, h, r, log_w in prefixes:
                assert r == region.get((s, h), region.get((s, None)))
                if built.history[r] is None:
                    catch_all_mass[r] = float(np.logaddexp(catch_all_mass.get(r, -np.inf), log_w))
            for r, got in catch_all_mass.items():
                mass = masses[int(built.state[r])]
                total = np.logaddexp.reduce(list(mass.values()))
                top = np.logaddexp.reduce(sorted(mass.values(), reverse=True)[:k])
                assert got == pytest.approx(total + np.log1p(-np.exp(top - total)), abs=1e-9)
            catch_alls += len(catch_all_mass)
    assert catch_alls > 0
