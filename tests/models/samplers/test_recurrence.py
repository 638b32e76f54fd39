"""The GRU recurrence's fast paths against plain PyTorch, in float64, values and gradients:
the hand-written reverse pass (Recurrence) and the library call with identity input weights
(fused_recurrence), each against torch.nn.GRU and autograd."""

import warnings

import pytest
import torch

from nfst.models.samplers.recurrence import Recurrence, fused_recurrence
from nfst.models.samplers.route import Packing

LENGTHS = [2, 5, 1, 4, 5, 3]


def reference_gru(weight_hh, bias_hh, d: int) -> torch.nn.GRU:
    """A torch.nn.GRU whose input weights are the identity and input bias 0, so that its input
    at a step is its input gates; W_hh, b_hh copied from the given ones."""
    gru = torch.nn.GRU(3 * d, d).double()
    with torch.no_grad():
        gru.weight_ih_l0.copy_(torch.eye(3 * d))
        gru.bias_ih_l0.zero_()
        gru.weight_hh_l0.copy_(weight_hh)
        gru.bias_hh_l0.copy_(bias_hh)
    return gru


@pytest.mark.parametrize("masked", [False, True])
def test_recurrence_matches_torch_gru_with_autograd(masked):
    """h at every row of a Packing, and the gradients of a random readout with respect to the
    gate table, W_hh and b_hh, against nn.GRU run over each path alone (its gates: a row of
    the table per mark, times the path's dropout mask) with autograd."""
    torch.manual_seed(0)
    V, d, N = 4, 3, len(LENGTHS)
    marks = torch.randint(V + 1, (N, max(LENGTHS)))
    packing = Packing.of(marks, torch.tensor(LENGTHS))
    table = torch.randn(V + 1, 3 * d, dtype=torch.float64, requires_grad=True)
    weight_hh = torch.randn(3 * d, d, dtype=torch.float64, requires_grad=True)
    bias_hh = torch.randn(3 * d, dtype=torch.float64, requires_grad=True)
    mask = (torch.rand(N, 3 * d) < 0.7).double() / 0.7 if masked else None
    readout = torch.randn(len(packing.paths), d, dtype=torch.float64)

    h = Recurrence.apply(table, weight_hh, bias_hh, packing, mask)
    got = torch.autograd.grad((h * readout).sum(), [table, weight_hh, bias_hh])

    gru = reference_gru(weight_hh.detach(), bias_hh.detach(), d)
    ref_table = table.detach().clone().requires_grad_()
    expected = torch.zeros(N, max(LENGTHS), d, dtype=torch.float64)
    loss = 0
    for i, n in enumerate(LENGTHS):
        gates = ref_table[marks[i, :n]]
        if masked:
            gates = gates * mask[i]
        out, _ = gru(gates[:, None])
        expected[i, :n] = out[:, 0].detach()
        rows = packing.paths == i  # path i's rows, in step order
        loss = loss + (out[:, 0] * readout[rows]).sum()
    loss.backward()
    torch.testing.assert_close(h, packing.at(expected), rtol=0, atol=1e-12)
    for g, e in zip(got, [ref_table.grad, gru.weight_hh_l0.grad, gru.bias_hh_l0.grad]):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("masked", [False, True])
def test_recurrence_gradients_pass_gradcheck(masked):
    """Paths of 2, 4, 1, 4 positions (4, 3, 2, 2 rows per step), with and without each
    path's dropout mask on its input gates."""
    torch.manual_seed(0)
    V, d = 3, 3
    packing = Packing.of(torch.randint(V + 1, (4, 4)), torch.tensor([2, 4, 1, 4]))
    assert packing.running == [4, 3, 2, 2]
    table = torch.randn(V + 1, 3 * d, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3 * d, d, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3 * d, dtype=torch.float64, requires_grad=True)
    mask = (torch.rand(4, 3 * d) < 0.7).double() * 2 if masked else None
    assert torch.autograd.gradcheck(lambda *x: Recurrence.apply(*x, packing, mask), (table, w, b))


def test_fused_recurrence_matches_torch_gru_with_autograd(device):
    """fused_recurrence (a GRU library call whose input weights are the identity: cuDNN on a
    GPU) over input gates W_ih e + b_ih, against nn.GRU with those W_ih, b_ih over the
    embeddings e, path by path: h at every position (zero past each end) and the gradients
    of a random readout with respect to every weight and the embeddings; no warning."""
    torch.manual_seed(1)
    d, N, T = 4, len(LENGTHS), max(LENGTHS)
    gru = torch.nn.GRU(d, d).double().to(device)
    x = torch.randn(N, T, d, dtype=torch.float64, device=device, requires_grad=True)
    readout = torch.randn(N, T, d, dtype=torch.float64, device=device)
    lengths = torch.tensor(LENGTHS, device=device)
    params = [x] + list(gru.parameters())

    gi = torch.nn.functional.linear(x, gru.weight_ih_l0, gru.bias_ih_l0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # cuDNN's, on each call, about copying the weights
        h = fused_recurrence(gi, lengths, gru.weight_hh_l0, gru.bias_hh_l0)
    got = torch.autograd.grad((h * readout).sum(), params)

    expected = torch.zeros(N, T, d, dtype=torch.float64, device=device)
    loss = 0
    for i, n in enumerate(LENGTHS):
        out, _ = gru(x[i, :n, None])
        expected[i, :n] = out[:, 0].detach()
        loss = loss + (out[:, 0] * readout[i, :n]).sum()
    want = torch.autograd.grad(loss, params)
    torch.testing.assert_close(h, expected, rtol=0, atol=1e-12)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)
