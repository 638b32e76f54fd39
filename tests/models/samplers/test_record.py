"""A walk's record: each walker's dropout masks, and the steps the one-pass scoring replays."""

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers.record import ReplayedLinear, WalkRecord
from nfst.models.samplers.route import route_of_arcs
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import all_paths, dropout_sampler


def test_replay_hands_out_a_recorded_walk_only_for_the_paths_it_walked():
    """A walk's record of 3, 2 and 1 rows fits scoring with those rows per step, and nothing
    else; an empty record is no record."""
    site = torch.nn.Linear(1, 1)
    record = WalkRecord(3)
    assert record.replay(site, [3, 2, 1]) is None
    tape = [torch.zeros(3, 4), torch.zeros(2, 4), torch.zeros(1, 4)]
    with torch.no_grad():  # a walk records only without gradients
        for entry in tape:
            record.keep(site, entry)
    assert record.replay(site, [3, 2, 1]) == tape
    assert record.replay(torch.nn.Linear(1, 1), [3, 2, 1]) is None  # another module's
    for running in ([3, 2], [3, 1, 1], [3, 2, 1, 1]):
        with pytest.raises(RuntimeError, match="not the paths being scored"):
            record.replay(site, running)


def test_replayed_linear_has_a_linear_layers_gradients():
    """Its value is the recorded one; its gradients are nn.functional.linear's."""
    torch.manual_seed(0)
    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(3, dtype=torch.float64, requires_grad=True)
    out = torch.nn.functional.linear(x, weight, bias)
    steps = list(out.detach().split([3, 2, 1]))
    readout = torch.randn(6, 3, dtype=torch.float64)
    replayed = ReplayedLinear.apply(x, weight, bias, steps)
    torch.testing.assert_close(replayed, out, rtol=0, atol=0)
    got = torch.autograd.grad((replayed * readout).sum(), [x, weight, bias])
    expected = torch.autograd.grad((out * readout).sum(), [x, weight, bias])
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("name", ["nolookahead", "swa", "sws", "sws-mlp", "swp-prefix", "swp-sws"])
def test_two_walks_in_turn_keep_their_own_records(name):
    """Two walks without gradients stepped in turn, over the paths of the lattices in two
    orders, each with its own record; then each record's one-pass scoring (which replays what
    its walk recorded) gives the log q and gradients of scoring those paths afresh. Nothing of
    one walk reaches the other: no module keeps it."""
    lats = [cipher_lattice()] + del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = dropout_sampler(name, lats).eval()
    arcs, _ = all_paths(batch)
    B, k, L = arcs.shape
    orders = [torch.arange(k), torch.arange(k).flip(0)]
    routes = [
        route_of_arcs(
            batch,
            torch.arange(B).repeat_interleave(k),
            arcs[:, order].reshape(B * k, L),
            per_lattice=k,
        )
        for order in orders
    ]
    context = sampler.prepare(batch)
    records = [WalkRecord(B * k), WalkRecord(B * k)]
    with torch.no_grad():
        walks = [
            sampler.start(batch, context, route.lattice, record)
            for route, record in zip(routes, records)
        ]
        for t in range(L + 1):
            for i, route in enumerate(routes):
                sampler.log_probs(batch, context, walks[i])
                walks[i] = sampler.advance(batch, context, walks[i], route.choice[:, t])
    params = list(sampler.parameters())
    for route, record in zip(routes, records):
        assert record.steps  # the walk recorded its states
        replayed = sampler._route_log_q(batch, context, route, record)
        fresh = sampler._route_log_q(batch, context, route, WalkRecord(B * k))
        torch.testing.assert_close(replayed, fresh, rtol=0, atol=1e-12)
        got = torch.autograd.grad(replayed.sum(), params, retain_graph=True, allow_unused=True)
        want = torch.autograd.grad(fresh.sum(), params, retain_graph=True, allow_unused=True)
        for g, w in zip(got, want):
            assert (g is None) == (w is None)
            if w is not None:
                torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-12)


def test_a_walk_with_gradients_records_nothing_and_keeps_no_constant():
    """With gradients on, every value must stay in the graph: nothing is kept for a replay,
    and a constant is computed again at every call."""
    site, record, calls = torch.nn.Linear(1, 1), WalkRecord(2), []

    def compute():
        calls.append(1)
        return torch.zeros(2)

    record.keep(site, torch.zeros(2, 4))
    record.constant(site, compute)
    record.constant(site, compute)
    assert record.replay(site, [2]) is None and len(calls) == 2
    with torch.no_grad():
        record.constant(site, compute)
        record.constant(site, compute)
    assert len(calls) == 3
