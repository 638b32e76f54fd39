"""Properties every sampler must have, checked on small lattices for each registered sampler."""

import math

import numpy as np
import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.errors import PathTooLongError
from nfst.models.samplers import SAMPLERS, Sampler, Walk
from nfst.models.samplers.dropout import WalkDropout
from nfst.models.samplers.record import WalkRecord
from nfst.models.samplers.route import route_of_arcs
from tests.helpers.brute import chi_square_critical
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import (
    SAMPLER_NAMES,
    all_paths,
    dropout_sampler,
    fit_by_inclusive_kl,
    new_sampler,
)
from tests.helpers.scorers import random_scorer


def test_registry_has_every_sampler():
    assert set(SAMPLER_NAMES) <= set(SAMPLERS)


def step_by_step(sampler, batch, arcs):
    """log q (B, k) of paths by driving start/log_probs/advance directly (no score())."""
    B, k, L = arcs.shape
    context = sampler.prepare(batch)
    lattice = torch.arange(B).repeat_interleave(k)
    walk = sampler.start(batch, context, lattice)
    flat = arcs.view(B * k, L)
    total = torch.zeros(B * k, dtype=torch.float64)
    stop = batch.out_arcs.shape[1]
    for t in range(L + 1):
        lp = sampler.log_probs(batch, context, walk)
        choice = []
        for n in range(B * k):
            a = int(flat[n, t]) if t < L else -1
            row = batch.out_arcs[walk.state[n]].tolist()
            choice.append(row.index(a) if a >= 0 else stop)
        choice = torch.tensor(choice)
        total += torch.where(
            walk.alive,
            lp[torch.arange(B * k), choice].double(),
            torch.zeros(B * k, dtype=torch.float64),
        )
        walk = sampler.advance(batch, context, walk, choice)
    assert not walk.alive.any()
    return total.view(B, k)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_reported_log_q_matches_recomputations(name, device):
    """On the device: sampling, teacher-forced scoring and the per-step log q agree; on the
    CPU, stepping the same sampler by hand gives the same log q for those paths."""
    lats = del_ins_lattices()
    batch = LatticeBatch(lats, device)
    sampler = new_sampler(name, lats).to(device)
    paths = sampler.sample(batch, 6, torch.Generator(device).manual_seed(1))
    assert paths.arcs.shape[:2] == (3, 6) and paths.step_log_q.shape[2] == paths.arcs.shape[2] + 1
    assert paths.log_q.device == batch.device
    torch.testing.assert_close(paths.log_q, sampler.score(batch, paths.arcs), rtol=0, atol=1e-12)
    torch.testing.assert_close(paths.log_q, paths.step_log_q.sum(-1), rtol=0, atol=1e-12)
    by_hand = step_by_step(new_sampler(name, lats), LatticeBatch(lats), paths.arcs.cpu())
    torch.testing.assert_close(paths.log_q.cpu(), by_hand, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_scoring_under_the_sampling_context_repeats_log_q(name):
    """Sample, then score the same paths under ``paths.context``: the same log q to 1e-9,
    with the global generator left alone in between."""
    lats = del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = new_sampler(name, lats).eval()
    paths = sampler.sample(batch, 6, torch.Generator().manual_seed(3))
    torch.testing.assert_close(
        sampler.score(batch, paths.arcs, paths.context), paths.log_q, rtol=0, atol=1e-9
    )


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_samples_are_legal_paths(name, device):
    lats = del_ins_lattices() + [del_ins_lattices()[0]]
    batch = LatticeBatch(lats, device)
    sampler = new_sampler(name, lats).to(device)
    paths = sampler.sample(batch, 8, torch.Generator(device).manual_seed(2))
    batch, paths.arcs, paths.marks = batch.to("cpu"), paths.arcs.cpu(), paths.marks.cpu()
    for b in range(batch.batch_size):
        for i in range(8):
            arcs = paths.arcs[b, i]
            n = int(paths.lengths[b, i])
            assert (arcs[:n] >= 0).all() and (arcs[n:] == -1).all()
            state = int(batch.start[b])
            for a in arcs[:n].tolist():
                assert int(batch.arc_src[a]) == state
                state = int(batch.arc_dst[a])
            assert bool(batch.final[state])
            assert paths.marks[b, i, :n].tolist() == batch.arc_mark[arcs[:n]].tolist()
            assert (paths.marks[b, i, n:] == -1).all()


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_illegal_choices_have_probability_exactly_zero(name):
    lats = del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = new_sampler(name, lats)
    context = sampler.prepare(batch)
    walk = sampler.start(batch, context, torch.arange(3).repeat_interleave(2))
    for _ in range(batch.max_height + 1):
        lp = sampler.log_probs(batch, context, walk)
        arcs = batch.out_arcs[walk.state]
        alive = walk.alive
        assert torch.isneginf(lp[:, :-1][alive][arcs[alive] < 0]).all()
        assert torch.isfinite(lp[:, :-1][alive][arcs[alive] >= 0]).all()
        final = batch.final[walk.state]
        assert torch.isneginf(lp[alive & ~final, -1]).all()
        assert torch.isfinite(lp[alive & final, -1]).all()
        torch.testing.assert_close(
            lp[alive].exp().sum(1), torch.ones(int(alive.sum()), dtype=lp.dtype)
        )
        choice = torch.multinomial(
            torch.where(alive[:, None], lp, torch.zeros_like(lp)).exp(),
            1,
            generator=torch.Generator().manual_seed(0),
        ).squeeze(1)
        walk = sampler.advance(batch, context, walk, choice)
        if not walk.alive.any():
            break
    assert not walk.alive.any()


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_path_probabilities_sum_to_one_and_do_not_depend_on_the_batch(name):
    lats = del_ins_lattices()
    cipher = cipher_lattice()
    sampler = new_sampler(name, lats)
    batch = LatticeBatch(lats)
    arcs, mask = all_paths(batch)
    log_q = sampler.score(batch, arcs)
    total = torch.logsumexp(log_q.masked_fill(~mask, -math.inf), 1)
    torch.testing.assert_close(total, torch.zeros(3, dtype=total.dtype), rtol=0, atol=1e-10)
    for b, lat in enumerate(lats):  # alone, with no padding from longer strings or lattices
        alone = LatticeBatch([lat])
        arcs_b, mask_b = all_paths(alone)
        torch.testing.assert_close(
            sampler.score(alone, arcs_b)[0, mask_b[0]], log_q[b, mask[b]], rtol=0, atol=1e-10
        )
    # the cipher lattice has final states with out-arcs and paths of two lengths
    sampler = new_sampler(name, [cipher])
    batch = LatticeBatch([cipher])
    arcs, mask = all_paths(batch)
    torch.testing.assert_close(
        torch.logsumexp(sampler.score(batch, arcs), 1),
        torch.zeros(1, dtype=torch.float64),
        rtol=0,
        atol=1e-10,
    )


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_samples_follow_q(name):
    """Chi-square goodness of fit of n samples against q's exact path probabilities."""
    lat = cipher_lattice()
    sampler = new_sampler(name, [lat], seed=3)
    with torch.no_grad():
        for p in sampler.parameters():  # a less uniform q than the initialisation
            p.mul_(4.0)
    batch = LatticeBatch([lat])
    arcs, _ = all_paths(batch)
    with torch.no_grad():
        q = sampler.score(batch, arcs)[0].exp()
        n = 4000
        paths = sampler.sample(batch, n, torch.Generator().manual_seed(4))
    index = {tuple(a for a in row if a >= 0): i for i, row in enumerate(arcs[0].tolist())}
    counts = np.bincount(
        [index[tuple(a for a in row if a >= 0)] for row in paths.arcs[0].tolist()],
        minlength=len(index),
    )
    expected = n * q.numpy()
    keep = expected >= 5  # pool the rare cells
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < chi_square_critical(len(expected) - 1), (chi2, observed, expected)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_log_q_has_gradients(name):
    lats = del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = new_sampler(name, lats)
    paths = sampler.sample(batch, 4, torch.Generator().manual_seed(0))
    paths.log_q.sum().backward()
    grads = [p.grad for p in sampler.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_selected_walkers_continue_like_the_originals(name):
    lats = del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = new_sampler(name, lats)
    context = sampler.prepare(batch)
    walk = sampler.start(batch, context, torch.arange(3))
    walk = sampler.advance(batch, context, walk, torch.zeros(3, dtype=torch.long))
    index = torch.tensor([2, 0, 0, 1])
    picked = walk.select(index)
    assert isinstance(picked, Walk) and len(picked) == 4
    torch.testing.assert_close(
        sampler.log_probs(batch, context, picked), sampler.log_probs(batch, context, walk)[index]
    )


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_length_cap_raises_instead_of_looping(name):
    lats = del_ins_lattices()[:2]  # every path has 6 marks
    batch = LatticeBatch(lats)
    sampler = new_sampler(name, lats)
    with pytest.raises(PathTooLongError, match="max_length=3"):
        sampler.sample(batch, 2, max_length=3)
    assert sampler.sample(batch, 2, max_length=6).lengths.max() == 6


def test_score_rejects_paths_that_are_not_paths():
    lats = del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = new_sampler("swa", lats)
    arcs, _ = all_paths(batch)
    broken = arcs.clone()
    broken[0, 0, 1] = broken[0, 0, 0]  # the same arc twice
    with pytest.raises(ValueError, match="does not leave"):
        sampler.score(batch, broken)
    short = arcs.clone()
    short[0, 0, 2:] = -1  # stops in the middle
    with pytest.raises(ValueError, match="non-final"):
        sampler.score(batch, short)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_inclusive_kl_training_fits_an_arc_factored_posterior(name):
    """Gradients reach every part of the sampler that matters: 100 sampled inclusive-KL steps
    take KL(p ‖ q), by enumeration of the cipher lattice's 16 paths, from above 0.5 to near 0
    (a prefix-conditioned sampler can represent any distribution over one lattice's paths)."""
    lat = cipher_lattice()
    batch = LatticeBatch([lat])
    scorer = random_scorer(len(lat.mark_vocab), seed=11, scale=2.0)
    sampler = new_sampler(name, [lat], d=16, seed=0)
    before, after = fit_by_inclusive_kl(sampler, scorer, batch, steps=100, lr=0.03)
    assert before.item() > 0.5
    assert after.item() < 0.05, (before, after)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
@pytest.mark.parametrize("lattices", ["del_ins", "cipher"])
def test_one_pass_scoring_sees_the_walks_dropout(name, lattices):
    """In training mode, the one-pass teacher-forced log q of a path equals the log q that
    stepping through it gives, when both are handed one WalkRecord (one mask per walker,
    the same at every step); the cipher lattice has paths of two lengths."""
    lats = del_ins_lattices() if lattices == "del_ins" else [cipher_lattice()]
    batch = LatticeBatch(lats)
    sampler = dropout_sampler(name, lats)
    arcs, _ = all_paths(batch)
    B, k, L = arcs.shape
    context = sampler.prepare(batch)  # its own dropout is drawn once, for both passes
    route = route_of_arcs(batch, torch.arange(B).repeat_interleave(k), arcs.view(B * k, L))
    sites = {m for m in sampler.modules() if isinstance(m, WalkDropout)}
    record = WalkRecord(B * k)
    stepped = Sampler.path_log_probs(sampler, batch, context, route, record)  # step by step
    masks = dict(record.masks)
    one_pass = sampler.path_log_probs(batch, context, route, record)
    assert set(masks) == sites and bool(sites) == (name != "swp")  # SWP: no steps
    assert all(m.shape[0] == B * k for m in masks.values())
    assert all(record.masks[site] is mask for site, mask in masks.items())  # none drawn anew
    valid = route.valid
    torch.testing.assert_close(one_pass[valid], stepped[valid], rtol=0, atol=1e-10)
    if masks:  # and fresh masks do change it: dropout is really on
        fresh = sampler.path_log_probs(batch, context, route, WalkRecord(B * k))
        assert not torch.allclose(fresh[valid], stepped[valid])


@pytest.mark.parametrize("name", SAMPLER_NAMES)
@pytest.mark.parametrize("train", [False, True])
def test_sampled_log_q_is_that_of_the_network_that_drew_the_paths(name, train):
    """Sampling walks without gradients and scores the drawn paths in one pass, replaying what
    the walk recorded; its log q and the gradients of log q.sum() equal, in float64, those of
    stepping through the same paths with autograd under the same dropout masks (drawn again
    from the same seed: the walk draws one per site at its first use, from the global
    generator, in the order the stepping does)."""
    lats = [cipher_lattice()] + del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = dropout_sampler(name, lats).train(train)
    params = list(sampler.parameters())
    k = 5
    torch.manual_seed(7)
    paths = sampler.sample(batch, k, torch.Generator().manual_seed(8))
    grads = torch.autograd.grad(paths.log_q.sum(), params, allow_unused=True)
    B, _, L = paths.arcs.shape
    torch.manual_seed(7)
    context = sampler.prepare(batch)
    route = route_of_arcs(
        batch, torch.arange(B).repeat_interleave(k), paths.arcs.view(B * k, L), per_lattice=k
    )
    lp = Sampler.path_log_probs(sampler, batch, context, route, WalkRecord(B * k))
    log_q = (lp.gather(2, route.choice[..., None]).squeeze(2) * route.valid).sum(1).view(B, k)
    expected = torch.autograd.grad(log_q.sum(), params, allow_unused=True)
    torch.testing.assert_close(paths.log_q, log_q, rtol=0, atol=1e-12)
    for g, e in zip(grads, expected):
        if e is None:
            assert g is None or not g.any()
        else:
            torch.testing.assert_close(g, e, rtol=1e-9, atol=1e-12)
