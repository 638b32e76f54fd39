"""The walk that draws a sampler's paths (``Sampler._walk``), eager (``eager``) and with static
shapes (``graph``): the log q it computes along the way is the teacher-forced log q of the paths it
drew, its samples are those the walk drew before the static walk existed, and the static walk
draws the eager walk's samples (on a CPU), capture or no capture."""

import hashlib
import json
import warnings

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.errors import PathTooLongError
from nfst.models.samplers import SAMPLERS, WalkRecord, graph
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import dropout_sampler, new_sampler

NAMES = sorted(SAMPLERS)
# The walks, with dropout off and on (without a record, each call draws fresh dropout masks)
WALKS = [
    ("eager", False),
    ("eager", True),
    ("static", False),
    ("static", True),
    ("no record", False),
]

# sha256 (first 16 hex digits) of json.dumps(paths.arcs.tolist()) for two calls of
# sample(batch, 5, generator) in a row (one generator seeded 8, torch.manual_seed(7) first) on
# lattices(), with new_sampler (plain) and dropout_sampler (dropout), at commit 6c86e50, before
# the static walk: the default (eager) walk on a CPU must still draw exactly these paths.
SAMPLES_6C86E50 = {
    "nolookahead/dropout": ("ce5ab77f154db525", "63fd9ad312bb2fbf"),
    "nolookahead/plain": ("c6b70820f7a1438b", "088f3f8fc4f05777"),
    "swa/dropout": ("d8fa6546d06d581f", "6e61aefe6b8a9b54"),
    "swa/plain": ("dac6a90dd5d1ba46", "cdfb9a0d0d2a9710"),
    "swp-prefix/dropout": ("abe3a4466d66fddc", "58e2942043232e7f"),
    "swp-prefix/plain": ("7c640b4b6d96bfea", "84f77d07977b4252"),
    "swp-sws/dropout": ("e37d7b85766bfa1f", "ff83ba767a4e6f19"),
    "swp-sws/plain": ("318af4ffa45326a4", "8b575a0c964cc1ed"),
    "swp/dropout": ("fa830d0ebf81ead7", "16507bb40379654d"),
    "swp/plain": ("7c640b4b6d96bfea", "84f77d07977b4252"),
    "sws/dropout": ("fd8f67d0b9b9b339", "23710b488bf6c48e"),
    "sws/plain": ("32208a37bdb284eb", "e2e1187ee37a3ef6"),
    # sws-mlp came later: recorded the same way with it added to 140a396, before the static walk
    "sws-mlp/dropout": ("ac394dfcbd924f36", "7a5367332a3a2f7f"),
    "sws-mlp/plain": ("e33b99b9572478f7", "665055faf497de5a"),
}


def lattices():
    """A cipher lattice (paths of two lengths) and three del/ins lattices (1 to 3 marks)."""
    return [cipher_lattice()] + del_ins_lattices()


def make(name, dropout, static=False, moved=False):
    """A float64 sampler of width 8: in training mode with dropout 0.5, or without dropout
    (``moved``: its weights away from their initialisation, as ``dropout_sampler``'s, and in
    evaluation mode; swp-prefix starts out as SWP)."""
    lats = lattices()
    if dropout or moved:
        sampler = dropout_sampler(name, lats).train(dropout)
    else:
        sampler = new_sampler(name, lats)
    sampler.config.static_walk = static
    return sampler


def digest(arcs):
    return hashlib.sha256(json.dumps(arcs.tolist()).encode()).hexdigest()[:16]


def test_every_registered_sampler_has_recorded_samples():
    assert {key.split("/")[0] for key in SAMPLES_6C86E50} == set(SAMPLERS)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("walk, dropout", WALKS, ids=["-".join(map(str, w)) for w in WALKS])
def test_the_walks_log_q_is_the_teacher_forced_log_q(name, walk, dropout):
    """Float64: the log q of each choice that the walk gathers as it draws (N, L + 1) equals
    what the one-pass teacher-forced scoring of the drawn paths gives, to 1e-9, under the same
    dropout masks (the walk's record); and with dropout off, what ``score`` gives too. The
    eager walk runs with gradients here, so that it records no state for the pass to reuse
    (the pass computes everything); the static walk runs as ``sample`` runs it."""
    lats = lattices()
    batch = LatticeBatch(lats)
    sampler = make(name, dropout, moved=True)
    B, k = len(lats), 4
    lattice = torch.arange(B).repeat_interleave(k)
    record = None if walk == "no record" else WalkRecord(B * k, static=walk == "static")
    context = sampler.prepare(batch)
    torch.manual_seed(3)
    with torch.no_grad() if walk == "static" else torch.enable_grad():
        route, arcs, walked = sampler._walk(
            batch, context, lattice, k, torch.Generator().manual_seed(4), batch.max_height, record
        )
    if walk == "eager":
        assert not record.steps  # nothing to replay: the pass below recomputes every state
    forced = sampler._route_log_q(batch, context, route, record)
    assert walked.shape == forced.shape == (B * k, arcs.shape[1] + 1)
    assert (route.lengths > 0).all() and (route.lengths < route.lengths.max()).any()
    torch.testing.assert_close(walked.detach(), forced.detach(), rtol=0, atol=1e-9)
    if dropout:  # the masks matter: fresh ones give another log q (SWP has no dropout site)
        assert bool(record.masks) == (name != "swp")
        fresh = sampler._route_log_q(batch, context, route, WalkRecord(B * k))
        assert torch.allclose(fresh, forced) == (name == "swp")
    else:
        scored = sampler.score(batch, arcs.view(B, k, -1), context)
        torch.testing.assert_close(
            walked.sum(1).view(B, k).detach(), scored.detach(), rtol=0, atol=1e-9
        )


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dropout", [False, True], ids=["plain", "dropout"])
def test_samples_are_those_drawn_before_the_static_walk(name, dropout):
    """The default walk on a CPU draws, for a seed, the paths it drew at 6c86e50; so does the
    static walk in its first call (it draws the noise of every step up to the cap at once,
    which on a CPU are the same numbers, but more of them when every path ends early, so a
    second call may differ)."""
    batch = LatticeBatch(lattices())
    expected = SAMPLES_6C86E50[f"{name}/{'dropout' if dropout else 'plain'}"]
    for static in (False, True):
        sampler = make(name, dropout, static)
        torch.manual_seed(7)
        generator = torch.Generator().manual_seed(8)
        first = sampler.sample(batch, 5, generator)
        assert digest(first.arcs) == expected[0], static
        if not static:
            assert digest(sampler.sample(batch, 5, generator).arcs) == expected[1]


@pytest.mark.parametrize("name", NAMES)
def test_the_static_walk_draws_the_eager_walks_paths_and_log_q(name):
    """On walks whose paths end at different steps (k 16 on each lattice, dropout on, one
    generator for three calls), the static walk and the eager one give the same arcs and the
    same log q (to 1e-12), call after call where the longest path reaches the cap."""
    batch = LatticeBatch(lattices())
    draws = {}
    for static in (False, True):
        sampler = make(name, True, static)
        torch.manual_seed(5)
        generator = torch.Generator().manual_seed(6)
        draws[static] = [sampler.sample(batch, 16, generator) for _ in range(3)]
    for eager, static in zip(draws[False], draws[True]):
        assert torch.equal(eager.arcs, static.arcs)
        torch.testing.assert_close(eager.log_q, static.log_q, rtol=0, atol=1e-12)
    lengths = draws[False][0].lengths
    assert (lengths[0] == lengths[0].max()).any() and (lengths[0] < lengths[0].max()).any()


def test_a_failed_capture_warns_once_and_the_walk_goes_on(monkeypatch):
    """Capturing fails on a CPU (there is no CUDA graph): the walk warns once, walks the same
    paths launching each step itself, and later walks on the device no longer try."""
    monkeypatch.setattr(graph, "_FAILED", set())
    batch = LatticeBatch(lattices())
    sampler = make("sws", True)
    B, k = batch.batch_size, 3
    lattice = torch.arange(B).repeat_interleave(k)

    def walk(capture):
        torch.manual_seed(1)
        context = sampler.prepare(batch)
        with torch.no_grad():
            return graph.static_walk(
                sampler,
                batch,
                context,
                lattice,
                k,
                torch.Generator().manual_seed(2),
                batch.max_height,
                WalkRecord(B * k, static=True),
                capture=capture,
            )

    plain = walk(False)
    with pytest.warns(RuntimeWarning, match="CUDA graph failed"):
        tried = walk(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = walk(True)
    for got in (tried, again):
        assert torch.equal(got[1], plain[1]) and torch.equal(got[2], plain[2])
    assert graph._FAILED == {torch.device("cpu")}


@pytest.mark.parametrize("static", [False, True])
def test_a_walk_past_the_cap_raises(static):
    batch = LatticeBatch(lattices())
    sampler = make("nolookahead", False, static)
    with pytest.raises(PathTooLongError):
        sampler.sample(batch, 4, torch.Generator().manual_seed(0), max_length=2)
