"""Drawing a choice and the forced-row shortcut, against their plain versions: torch.multinomial,
and every sampler's network run on every row."""

import math
import sys

import numpy as np
import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers import Sampler
from nfst.models.samplers.choices import choose, forced_log_probs, legal_log_softmax
from nfst.models.samplers.record import WalkRecord
from nfst.models.samplers.route import route_of_arcs
from nfst.models.samplers.walk import Walk
from tests.helpers.brute import chi_square_critical
from tests.helpers.lattices import cipher_lattice, del_ins_lattices, stop_among_arcs_lattice
from tests.helpers.samplers import SAMPLER_NAMES, all_paths, dropout_sampler, new_sampler


def random_walk(batch: LatticeBatch, states: torch.Tensor, seed: int) -> tuple[Walk, torch.Tensor]:
    """Walkers at ``states``, about one in five of them dead, and random log q over the legal
    columns of each state (N, D + 1)."""
    g = torch.Generator().manual_seed(seed)
    n = len(states)
    legal = torch.cat([batch.out_arcs[states] >= 0, batch.final[states][:, None]], 1)
    logits = torch.randn(legal.shape, generator=g, dtype=torch.float64) * 2
    log_q = torch.log_softmax(logits.masked_fill(~legal, float("-inf")), 1)
    walk = Walk(
        lattice=torch.zeros(n, dtype=torch.long),
        state=states,
        alive=torch.rand(n, generator=g) > 0.2,
        length=torch.zeros(n, dtype=torch.long),
        last_mark=torch.zeros(n, dtype=torch.long),
        hidden=None,
    )
    return walk, log_q


def test_choose_draws_what_torch_multinomial_draws():
    """choose's draw (an exponential race, without multinomial's host sync) is
    torch.multinomial(probs, 1) on the same generator, number for number; dead walkers
    choose STOP, and the arc is the chosen column's (-1 for STOP)."""
    batch = LatticeBatch(del_ins_lattices() + [cipher_lattice()])
    states = torch.arange(batch.num_states).repeat(4)
    walk, log_q = random_walk(batch, states, seed=0)
    stop = batch.out_arcs.shape[1]
    for seed in range(5):
        choice, arc = choose(batch, walk, log_q, torch.Generator().manual_seed(seed))
        probs = torch.where(walk.alive[:, None], log_q.exp(), torch.zeros_like(log_q))
        probs[~walk.alive, stop] = 1.0
        expected = torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(choice, expected.squeeze(1))
        moving = walk.alive & (choice != stop)
        assert torch.equal(arc[moving], batch.out_arcs[states[moving], choice[moving]])
        assert (arc[~moving] == -1).all() and (choice[~walk.alive] == stop).all()


def test_legal_log_softmax_normalises_the_legal_marks_and_stop():
    """At each state, the logits (V + 1, STOP last) of its out-arcs' marks, in the columns of
    ``out_arcs``, and of STOP if final, normalised over just those; -inf elsewhere. Where
    there is one legal choice, the row is ``forced_log_probs``'s."""
    batch = LatticeBatch(del_ins_lattices() + [stop_among_arcs_lattice()])
    D, V = batch.out_arcs.shape[1], len(batch.mark_vocab)
    assert (batch.final & (batch.out_arcs[:, 0] >= 0)).any()  # STOP among other choices
    states = torch.arange(batch.num_states)
    logits = torch.randn(
        len(states), V + 1, generator=torch.Generator().manual_seed(3), dtype=torch.float64
    )
    lp = legal_log_softmax(batch, states, logits)
    for s in states.tolist():
        arcs = batch.out_arcs[s]
        real = (arcs >= 0).nonzero().squeeze(1)
        columns = real.tolist() + ([D] if batch.final[s] else [])
        picked = logits[s, batch.arc_mark[arcs[real]].tolist() + ([V] if batch.final[s] else [])]
        expected = torch.full((D + 1,), -math.inf, dtype=torch.float64)
        expected[columns] = torch.log_softmax(picked, 0)
        torch.testing.assert_close(lp[s], expected, rtol=0, atol=1e-12)
    forced = batch.choices == 1
    assert forced.any()
    assert torch.equal(lp[forced], forced_log_probs(batch, states, lp.dtype)[forced])
    with pytest.raises(ValueError):
        legal_log_softmax(batch, states, logits[:, 1:])


def test_choose_follows_the_probabilities():
    """Chi-square goodness of fit of 20000 draws at one state against its q."""
    batch = LatticeBatch([cipher_lattice()])
    s = int((batch.choices > 2).nonzero()[0])
    walk, log_q = random_walk(batch, torch.full((20000,), s), seed=1)
    walk.alive[:] = True
    log_q[:] = log_q[0]
    choice, _ = choose(batch, walk, log_q, torch.Generator().manual_seed(2))
    q = log_q[0].exp().numpy()
    legal = q > 0
    observed = np.bincount(choice.numpy(), minlength=len(q))
    assert observed[~legal].sum() == 0
    expected = len(choice) * q[legal]
    chi2 = float(((observed[legal] - expected) ** 2 / expected).sum())
    assert chi2 < chi_square_critical(int(legal.sum()) - 1), (observed, expected)


def test_sampling_consumes_the_generator_as_multinomial_does():
    """The sampling loop draws each choice like torch.multinomial(probs, 1) (without its host
    sync), so in eval mode a SWP sample is what a multinomial walk of its table gives."""
    lats = del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = new_sampler("swp", lats).eval()
    paths = sampler.sample(batch, 5, torch.Generator().manual_seed(7))
    table = sampler.prepare(batch).table
    generator = torch.Generator().manual_seed(7)
    state = batch.start.repeat_interleave(5)
    alive = torch.ones_like(state, dtype=torch.bool)
    stop = batch.out_arcs.shape[1]
    taken = []
    for _ in range(batch.max_height + 1):
        probs = torch.where(alive[:, None], table[state], torch.full_like(table[state], -math.inf))
        probs[~alive, stop] = 0.0
        choice = torch.multinomial(probs.exp(), 1, generator=generator).squeeze(1)
        moving = alive & (choice != stop)
        arc = torch.where(moving, batch.out_arcs[state, choice.clamp(max=stop - 1)], -1)
        taken.append(arc)
        state = torch.where(moving, batch.arc_dst[arc.clamp(min=0)], state)
        alive = moving
    expected = torch.stack(taken, 1)[:, : paths.arcs.shape[2]]
    assert torch.equal(paths.arcs.view(15, -1), expected)


def every_row(monkeypatch) -> None:
    """Make every sampler run its network on every walker's row, as on a GPU: ``choosing``
    finds no rows to restrict to, in every module that uses it."""
    patched = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("nfst.models.samplers.") and hasattr(module, "choosing"):
            monkeypatch.setattr(module, "choosing", lambda batch, walk: None)
            patched.add(name.rsplit(".", 1)[1])
    assert {"nolookahead", "sws", "hybrids"} <= patched


@pytest.mark.parametrize("name", SAMPLER_NAMES)
@pytest.mark.parametrize("train", [False, True])
def test_heads_run_only_where_a_walker_chooses_as_if_on_every_row(name, train, monkeypatch):
    """log q of every column at every position of every path of the lattices, and the
    gradients of a random readout of the chosen columns, in float64: stepping with heads only
    for the walkers that have a choice and the one-pass scoring (heads only at such
    positions, the GRU stopping at the last one) against stepping with heads on every row.
    In training mode all three share one record, so one set of dropout masks."""
    lats = [cipher_lattice()] + del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = dropout_sampler(name, lats).train(train)
    arcs, _ = all_paths(batch)
    B, k, L = arcs.shape
    route = route_of_arcs(
        batch, torch.arange(B).repeat_interleave(k), arcs.view(B * k, L), per_lattice=k
    )
    valid = route.valid
    assert (batch.choices[route.states[valid]] == 1).any()  # there are forced positions
    weights = torch.randn(valid.shape, dtype=torch.float64) * valid
    params = list(sampler.parameters())
    context = sampler.prepare(batch)
    record = WalkRecord(B * k)

    def scored(path_log_probs):
        lp = path_log_probs(batch, context, route, record)
        chosen = lp.gather(2, route.choice[..., None]).squeeze(2) * valid
        return lp[valid], torch.autograd.grad(
            (weights * chosen).sum(), params, retain_graph=True, allow_unused=True
        )

    one_pass = scored(sampler.path_log_probs)
    stepped = scored(lambda *args: Sampler.path_log_probs(sampler, *args))
    every_row(monkeypatch)
    reference = scored(lambda *args: Sampler.path_log_probs(sampler, *args))
    for fast in (one_pass, stepped):
        torch.testing.assert_close(fast[0], reference[0], rtol=0, atol=1e-12)
        for g, r in zip(fast[1], reference[1]):
            if r is None:
                assert g is None or not g.any()
            else:
                torch.testing.assert_close(g, r, rtol=1e-9, atol=1e-12)
