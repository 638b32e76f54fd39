"""The prefix GRU against an independent nn.GRU, its reuse of a recorded walk, and loading
parameters saved under its old names."""

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers.base import Sampler
from nfst.models.samplers.prefix import PrefixGRU
from nfst.models.samplers.record import WalkRecord
from nfst.models.samplers.recurrence import fused_recurrence
from nfst.models.samplers.route import Route, route_of_arcs
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import SAMPLER_NAMES, all_paths, dropout_sampler, new_sampler


def random_route(V: int, lengths: list[int]) -> Route:
    """Paths of random marks (ids < V) with the given numbers of marks, -1 padded."""
    marks = torch.full((len(lengths), max(lengths)), -1)
    for i, n in enumerate(lengths):
        marks[i, :n] = torch.randint(V, (n,))
    return Route(
        lattice=torch.zeros(len(lengths), dtype=torch.long),
        states=None,
        choice=None,
        marks=marks,
        lengths=torch.tensor(lengths),
    )


def test_run_matches_an_independent_gru_in_values_and_gradients():
    """PrefixGRU.run over paths of different lengths (given in no particular order) against
    torch.nn.GRU run over each path alone, with the same weights: h at every position, zeros
    past each end, and the gradient of a random readout with respect to every parameter."""
    torch.manual_seed(1)
    V, d, lengths = 6, 5, [3, 7, 1, 5, 7, 0]
    prefix = PrefixGRU(V, d, dropout=0.0).double()
    reference = torch.nn.GRU(d, d).double()
    reference.load_state_dict(
        {k.removeprefix("gru."): v for k, v in prefix.state_dict().items() if k.startswith("gru.")}
    )
    embed = torch.nn.Embedding(V + 1, d).double()
    embed.load_state_dict(prefix.embed.state_dict())
    route = random_route(V, lengths)
    marks, T = route.marks, max(lengths)
    readout = torch.randn(len(lengths), T + 1, d, dtype=torch.float64)

    h = prefix.run(route, bos=V)
    (h * readout).sum().backward()
    expected = torch.zeros_like(h)
    loss = 0
    for i, n in enumerate(lengths):
        ids = torch.cat([torch.tensor([V]), marks[i, :n]])
        out, _ = reference(embed(ids)[:, None])
        expected[i, : n + 1] = out[:, 0].detach()
        loss = loss + (out[:, 0] * readout[i, : n + 1]).sum()
    loss.backward()
    torch.testing.assert_close(h, expected)
    for name, p in reference.named_parameters():
        torch.testing.assert_close(getattr(prefix.gru, name).grad, p.grad, msg=name)
    torch.testing.assert_close(prefix.embed.weight.grad, embed.weight.grad)


def test_the_fused_gpu_recurrence_matches_the_hand_written_one():
    """fused_recurrence (one cuDNN call on a GPU, run here on the CPU) against Recurrence via
    PrefixGRU.run: values and gradients, paths of different lengths."""
    torch.manual_seed(2)
    V, d = 5, 4
    prefix = PrefixGRU(V, d, dropout=0.0).double()
    route = random_route(V, [3, 6, 1, 4])
    marks, lengths = route.marks, route.lengths
    readout = torch.randn(4, 7, d, dtype=torch.float64)
    g = prefix.gru
    h = prefix.run(route, bos=V)
    grads = torch.autograd.grad((h * readout).sum(), [g.weight_hh_l0, g.bias_hh_l0, g.weight_ih_l0])
    ids = torch.cat([torch.full((4, 1), V), marks.clamp(min=0)], 1)
    fused = fused_recurrence(prefix.input_gates(ids), lengths + 1, g.weight_hh_l0, g.bias_hh_l0)
    fused_grads = torch.autograd.grad(
        (fused * readout).sum(), [g.weight_hh_l0, g.bias_hh_l0, g.weight_ih_l0]
    )
    torch.testing.assert_close(fused, h)
    for a, b in zip(fused_grads, grads):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("name", ["nolookahead", "swa", "sws", "sws-mlp", "swp-prefix", "swp-sws"])
def test_scoring_a_recorded_walk_reuses_its_states_with_the_same_values_and_gradients(name):
    """A walk without gradients records the prefix GRU's states in its WalkRecord and the
    one-pass scoring of its paths reuses them: log q and every parameter's gradient equal
    those of stepping through the paths with autograd (training mode, the walk's masks)."""
    lats = [cipher_lattice()] + del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = dropout_sampler(name, lats)
    arcs, _ = all_paths(batch)
    B, k, L = arcs.shape
    route = route_of_arcs(
        batch, torch.arange(B).repeat_interleave(k), arcs.view(B * k, L), per_lattice=k
    )
    weights = torch.randn(route.states.shape, dtype=torch.float64) * route.valid
    prefix = next(m for m in sampler.modules() if isinstance(m, PrefixGRU))
    for _ in range(2):  # and again after the weights change, as after an optimizer step
        record = WalkRecord(B * k)
        context = sampler.prepare(batch)
        with torch.no_grad():
            Sampler.path_log_probs(sampler, batch, context, route, record)  # the walk
        assert len(record.steps[prefix]) >= L + 1
        recorded = sampler._route_log_q(batch, context, route, record)
        stepped = Sampler.path_log_probs(sampler, batch, context, route, record)
        stepped = stepped.gather(2, route.choice[..., None]).squeeze(2) * route.valid
        params = [p for p in sampler.parameters() if p.requires_grad]
        grads = torch.autograd.grad(
            (weights * recorded).sum(), params, retain_graph=True, allow_unused=True
        )
        expected = torch.autograd.grad((weights * stepped).sum(), params, allow_unused=True)
        torch.testing.assert_close(recorded, stepped, rtol=0, atol=1e-10)
        for g, e in zip(grads, expected):
            if e is not None:
                torch.testing.assert_close(g, e, rtol=1e-8, atol=1e-10)
        with torch.no_grad():
            for p in sampler.parameters():
                p.add_(0.1 * torch.randn_like(p))


def test_parameters_saved_under_the_old_cell_names_load():
    """A sampler saved when the prefix recurrence was an nn.GRUCell (``prefix.cell.weight_ih``
    ...) loads, each tensor where it belongs."""
    lats = del_ins_lattices()
    saved = dropout_sampler("swa", lats).state_dict()
    old = {
        key.replace("prefix.gru.", "prefix.cell.").removesuffix("_l0")
        if key.startswith("prefix.gru.")
        else key: value
        for key, value in saved.items()
    }
    assert "prefix.cell.weight_hh" in old and "prefix.gru.weight_hh_l0" not in old
    fresh = dropout_sampler("swa", lats, seed=1)
    fresh.load_state_dict(old)
    for key, value in fresh.state_dict().items():
        assert torch.equal(value, saved[key]), key


def independent_prefix_states(prefix, marks: list[int], bos: int) -> torch.Tensor:
    """(len(marks) + 1, d): h_0 … h_T of a separate torch.nn.GRU, with the PrefixGRU's weights,
    run over BOS ω_1 … ω_T; h_t is the state that should score ω_{t+1} (003:2's h_{t-1})."""
    d = prefix.gru.hidden_size
    gru = torch.nn.GRU(d, d).to(prefix.gru.weight_ih_l0.dtype)
    with torch.no_grad():
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            getattr(gru, name).copy_(getattr(prefix.gru, name))
        out, _ = gru(prefix.embed(torch.tensor([bos] + marks))[:, None])
    return out[:, 0]


def prefix_state(walk) -> torch.Tensor:
    """The walkers' h (N, d): walk.hidden, or its first part (SWA keeps its attention values)."""
    return (walk.hidden[0] if isinstance(walk.hidden, tuple) else walk.hidden).clone()


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_prefix_state_is_a_gru_over_exactly_the_marks_so_far(name):
    """After t marks, while it still has a choice ahead (after that no head reads it), each
    walker's prefix state equals an independent GRU's over BOS ω_1 … ω_t: a GRU reading one
    mark late or early fails here. Samplers without a prefix GRU (SWP) are named, so that a
    new one cannot slip through unchecked."""
    lats = [cipher_lattice()] + del_ins_lattices()
    batch = LatticeBatch(lats)
    sampler = new_sampler(name, lats).eval()
    grus = [m for m in sampler.modules() if isinstance(m, PrefixGRU)]
    if name == "swp":
        assert not grus
        return
    assert len(grus) == 1
    k, g = 4, torch.Generator().manual_seed(0)
    stop = batch.out_arcs.shape[1]
    with torch.no_grad():
        context = sampler.prepare(batch)
        walk = sampler.start(batch, context, torch.arange(len(lats)).repeat_interleave(k))
        marks = [[] for _ in range(len(walk))]
        seen = [(prefix_state(walk), walk.length.clone(), batch.choice_ahead[walk.state])]
        while walk.alive.any():
            lp = sampler.log_probs(batch, context, walk)
            choice = torch.multinomial(lp.exp(), 1, generator=g).squeeze(1)
            choice = torch.where(walk.alive, choice, torch.full_like(choice, stop))
            walk = sampler.advance(batch, context, walk, choice)
            for n in range(len(walk)):
                if int(walk.length[n]) > len(marks[n]):
                    marks[n].append(int(walk.last_mark[n]))
            seen.append((prefix_state(walk), walk.length.clone(), batch.choice_ahead[walk.state]))
    checked = set()
    for n, path in enumerate(marks):
        expected = independent_prefix_states(grus[0], path, sampler.bos)
        for hidden, length, ahead in seen:
            if ahead[n]:
                torch.testing.assert_close(hidden[n], expected[int(length[n])], rtol=0, atol=1e-10)
                checked.add((n, int(length[n])))
    assert max(t for _, t in checked) >= 6 and len(checked) >= 3 * len(marks)
