"""The GRU recurrence over the positions of known paths, for teacher forcing in one pass
(``prefix.PrefixGRU.run``), from a table of input gates W_ih e[ω] + b_ih per mark.

On a CPU, :class:`Recurrence` runs it over the rows of a ``route.Packing`` and writes its
reverse pass out: per step, one matmul for the hidden state's gradient and one for W_hh's,
where autograd through a cell per step would need four; when a walk drew the paths, its
recorded states (``record.WalkRecord``) stand in for the forward pass. On a GPU it is one
cuDNN call (:func:`fused_recurrence`).
"""

from __future__ import annotations

import warnings
from typing import Optional

import torch
from torch import Tensor
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .route import Packing


def gru_step(
    gi: Tensor, h: Tensor, weight_hh: Tensor, bias_hh: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """One GRU step (PyTorch's equations and gate order r, z, n) from input gates gi (n, 3d):

        r, z = σ(gi_rz + W_hr,hz h + b_hr,hz),   c = tanh(gi_n + r ⊙ (W_hn h + b_hn)),
        h'   = (1 − z) ⊙ c + z ⊙ h.

    Returns h' (n, d) and what the reverse pass needs: [r z] (n, 2d), c, W_hn h + b_hn and h.
    tanh x is taken as 2σ(2x) − 1 (within 2 ulp of 1 of it): a CPU's torch.tanh is several
    times slower than its sigmoid."""
    d = h.shape[1]
    gh = torch.addmm(bias_hh, h, weight_hh.T)
    rz = torch.sigmoid(gi[:, : 2 * d] + gh[:, : 2 * d])
    gh_n = gh[:, 2 * d :]
    c = torch.sigmoid(torch.addcmul(gi[:, 2 * d :], rz[:, :d], gh_n).mul_(2)).mul(2).sub_(1)
    return torch.addcmul(c, rz[:, d:], h - c), rz, c, gh_n, h


class Recurrence(torch.autograd.Function):
    """h at every row of a :class:`Packing` (P, d), h_0 = 0 before t = 0, from a table of
    input gates (V + 1, 3d) and optionally each path's dropout mask on them (N, 3d). Gradients
    flow to the table, W_hh and b_hh; every step works on its own rows only, so no buffer of
    P × 3d gates or gradients is ever formed."""

    @staticmethod
    def forward(
        ctx,
        table: Tensor,
        weight_hh: Tensor,
        bias_hh: Tensor,
        packing: Packing,
        mask: Optional[Tensor] = None,
        walked: Optional[list[tuple[Tensor, ...]]] = None,
    ):
        """``walked``: :func:`gru_step`'s states of each step's rows, when a walk already
        computed them; the forward pass is then only the output's concatenation."""
        if walked is None:
            walked, h = [], None
            for t, rows in enumerate(packing.spans()):
                gi = table[packing.marks[rows]]
                if mask is not None:
                    gi = gi * mask[packing.paths[rows]]
                h_prev = (
                    gi.new_zeros(len(gi), weight_hh.shape[1]) if t == 0 else h[packing.parent[rows]]
                )
                walked.append(gru_step(gi, h_prev, weight_hh, bias_hh))
                h = walked[-1][0]
        ctx.save_for_backward(table, weight_hh, mask)
        ctx.packing, ctx.walked = packing, walked
        return torch.cat([states[0] for states in walked])

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out: Tensor):
        table, weight_hh, mask = ctx.saved_tensors
        packing, walked, d = ctx.packing, ctx.walked, weight_hh.shape[1]
        spans = packing.spans()
        grad_table = torch.zeros_like(table)
        # each row's adjoint of W_hn h + b_hh (P, 3d); W_hh's and b_hh's gradients are sums
        # over the rows, formed after the loop in one matmul (h_0 = 0 adds nothing to W_hh's)
        grad_gh = grad_out.new_empty(len(grad_out), 3 * d)
        carry = None  # dL/dh of step t + 1's rows' h_t, through step t + 1
        for t in reversed(range(len(spans))):
            rows = spans[t]
            _, rz, c, gh_n, h_prev = walked[t]
            dh = grad_out[rows]
            if carry is not None:
                dh = dh.index_add(0, packing.parent[spans[t + 1]], carry)
            dz = dh * rz[:, d:]
            grad_gi = torch.empty_like(grad_gh[rows])  # [d_r d_z d_c], the input gates'
            d_c = torch.ops.aten.tanh_backward.grad_input(
                dh - dz,
                c,  # through tanh
                grad_input=grad_gi[:, 2 * d :],
            )
            torch.mul(d_c, gh_n, out=grad_gi[:, :d])
            torch.mul(dh, h_prev - c, out=grad_gi[:, d : 2 * d])
            d_rz = torch.ops.aten.sigmoid_backward.grad_input(
                grad_gi[:, : 2 * d], rz, grad_input=grad_gi[:, : 2 * d]
            )
            gh = grad_gh[rows]
            gh[:, : 2 * d] = d_rz
            torch.mul(d_c, rz[:, :d], out=gh[:, 2 * d :])
            if mask is not None:
                grad_gi *= mask[packing.paths[rows]]
            grad_table.index_add_(0, packing.marks[rows], grad_gi)
            carry = torch.addmm(dz, gh, weight_hh) if t else None
        later = slice(packing.running[0], None)  # the rows of t ≥ 1
        h_prev = (
            torch.cat([states[4] for states in walked[1:]])
            if len(walked) > 1
            else grad_out.new_zeros(0, d)
        )
        return grad_table, grad_gh[later].T @ h_prev, grad_gh.sum(0), None, None, None


def fused_recurrence(gi: Tensor, lengths: Tensor, weight_hh: Tensor, bias_hh: Tensor) -> Tensor:
    """What :class:`Recurrence` computes, (N, T, d) from input gates gi (N, T, 3d) and path
    lengths (N,), as one library call (cuDNN on a GPU, where a loop of small kernels is
    launch-bound): a GRU whose input weights are the identity reads gi as its input gates
    (exactly: each product is one term times 1)."""
    d = weight_hh.shape[1]
    packed = pack_padded_sequence(gi, lengths.cpu(), batch_first=True, enforce_sorted=False)
    weights = [
        torch.eye(3 * d, dtype=gi.dtype, device=gi.device),
        weight_hh,
        gi.new_zeros(3 * d),
        bias_hh,
    ]
    h0 = gi.new_zeros(1, len(gi), d)
    with warnings.catch_warnings():
        # cuDNN copies the weights into one buffer, and warns that it does so on every call:
        # they are made here for each call (the identity beside W_hh), so the copy is due
        warnings.filterwarnings("ignore", "RNN module weights are not part", UserWarning)
        # bias, layers, dropout, training, bidirectional
        flags = (True, 1, 0.0, torch.is_grad_enabled(), False)
        out = torch._VF.gru(packed.data, packed.batch_sizes, h0, weights, *flags)[0]
    return pad_packed_sequence(
        packed._replace(data=out), batch_first=True, total_length=gi.shape[1]
    )[0]
