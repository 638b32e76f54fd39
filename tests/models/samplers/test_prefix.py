"""The prefix GRU's hand-written recurrence against torch.autograd and an independent nn.GRU."""

import torch

from nfst.models.samplers.forcing import Route
from nfst.models.samplers.prefix import PrefixGRU, Recurrence, fused_recurrence


def random_route(V: int, lengths: list[int]) -> Route:
    """Paths of random marks (ids < V) with the given numbers of marks, -1 padded."""
    marks = torch.full((len(lengths), max(lengths)), -1)
    for i, n in enumerate(lengths):
        marks[i, :n] = torch.randint(V, (n,))
    return Route(lattice=torch.zeros(len(lengths), dtype=torch.long), states=None, choice=None,
                 marks=marks, lengths=torch.tensor(lengths))


def test_recurrence_gradients_pass_gradcheck():
    """Paths of lengths 4, 4, 2, 1 packed time-major (running 4, 2, 2, 1 rows per step)."""
    torch.manual_seed(0)
    running, d = [4, 4, 2, 1], 3
    gi = torch.randn(sum(running), 3 * d, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3 * d, d, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3 * d, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda *x: Recurrence.apply(*x, running), (gi, w, b))


def test_run_matches_an_independent_gru_in_values_and_gradients():
    """PrefixGRU.run over paths of different lengths (given in no particular order) against
    torch.nn.GRU run over each path alone, with the same weights: h at every position, zeros
    past each end, and the gradient of a random readout with respect to every parameter."""
    torch.manual_seed(1)
    V, d, lengths = 6, 5, [3, 7, 1, 5, 7, 0]
    prefix = PrefixGRU(V, d, dropout=0.0).double()
    reference = torch.nn.GRU(d, d).double()
    reference.load_state_dict({k.removeprefix("gru."): v for k, v in prefix.state_dict().items()
                               if k.startswith("gru.")})
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
        expected[i, :n + 1] = out[:, 0].detach()
        loss = loss + (out[:, 0] * readout[i, :n + 1]).sum()
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
    fused_grads = torch.autograd.grad((fused * readout).sum(),
                                      [g.weight_hh_l0, g.bias_hh_l0, g.weight_ih_l0])
    torch.testing.assert_close(fused, h)
    for a, b in zip(fused_grads, grads):
        torch.testing.assert_close(a, b)
