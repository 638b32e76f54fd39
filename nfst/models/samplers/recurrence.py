"""The GRU recurrence over the positions of known paths, for teacher forcing in one pass
(``prefix.PrefixGRU.run``), from a table of input gates W_ih e[ω] + b_ih per mark.

On a CPU, :class:`Recurrence` runs it over the rows of a ``route.Packing`` and writes its
reverse pass out: per step, one matmul for the hidden state's gradient and one for W_hh's,
where autograd through a cell per step would need four; when a walk drew the paths, its
recorded states (``record.WalkRecord``) stand in for the forward pass. On a GPU it is one
cuDNN call (:func:`fused_recurrence`).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .route import Packing


def gru_step(gi: Tensor, h: Tensor, weight_hh: Tensor, bias_hh: Tensor
             ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """One GRU step (PyTorch's equations and gate order r, z, n) from input gates gi (n, 3d):

        r, z = σ(gi_rz + W_hr,hz h + b_hr,hz),   c = tanh(gi_n + r ⊙ (W_hn h + b_hn)),
        h'   = (1 − z) ⊙ c + z ⊙ h.

    Returns h' (n, d) and what the reverse pass needs: [r z] (n, 2d), c, W_hn h + b_hn and h."""
    d = h.shape[1]
    gh = torch.addmm(bias_hh, h, weight_hh.T)
    rz = torch.sigmoid(gi[:, :2 * d] + gh[:, :2 * d])
    gh_n = gh[:, 2 * d:]
    c = torch.tanh(torch.addcmul(gi[:, 2 * d:], rz[:, :d], gh_n))
    return torch.addcmul(c, rz[:, d:], h - c), rz, c, gh_n, h


class Recurrence(torch.autograd.Function):
    """h at every row of a :class:`Packing` (P, d), h_0 = 0 before t = 0, from a table of
    input gates (V + 1, 3d) and optionally each path's dropout mask on them (N, 3d). Gradients
    flow to the table, W_hh and b_hh; every step works on its own rows only, so no buffer of
    P × 3d gates or gradients is ever formed."""

    @staticmethod
    def forward(ctx, table: Tensor, weight_hh: Tensor, bias_hh: Tensor, packing: Packing,
                mask: Optional[Tensor] = None, walked: Optional[list[tuple[Tensor, ...]]] = None):
        """``walked``: :func:`gru_step`'s states of each step's rows, when a walk already
        computed them; the forward pass is then only the output's concatenation."""
        if walked is None:
            walked, h = [], None
            for t, rows in enumerate(packing.spans()):
                gi = table[packing.marks[rows]]
                if mask is not None:
                    gi = gi * mask[packing.paths[rows]]
                h_prev = gi.new_zeros(len(gi), weight_hh.shape[1]) if t == 0 else \
                    h[packing.parent[rows]]
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
        grad_table, grad_w = torch.zeros_like(table), torch.zeros_like(weight_hh)
        grad_b = weight_hh.new_zeros(3 * d)
        spans = packing.spans()
        carry = None  # dL/dh of step t + 1's rows' h_t, through step t + 1
        for t in reversed(range(len(spans))):
            rows = spans[t]
            _, rz, c, gh_n, h_prev = walked[t]
            dh = grad_out[rows]
            if carry is not None:
                dh = dh.index_add(0, packing.parent[spans[t + 1]], carry)
            r, z = rz[:, :d], rz[:, d:]
            d_c = (dh - dh * z) * (1 - c * c)                       # through tanh
            d_rz = torch.cat([d_c * gh_n, dh * (h_prev - c)], 1) * rz * (1 - rz)
            grad_gh = torch.cat([d_rz, d_c * r], 1)
            if t:
                grad_w.addmm_(grad_gh.T, h_prev)
            grad_b += grad_gh.sum(0)
            grad_gi = torch.cat([d_rz, d_c], 1)
            if mask is not None:
                grad_gi = grad_gi * mask[packing.paths[rows]]
            grad_table.index_add_(0, packing.marks[rows], grad_gi)
            carry = torch.addmm(dh * z, grad_gh, weight_hh) if t else None
        return grad_table, grad_w, grad_b, None, None, None


def fused_recurrence(gi: Tensor, lengths: Tensor, weight_hh: Tensor, bias_hh: Tensor) -> Tensor:
    """What :class:`Recurrence` computes, (N, T, d) from input gates gi (N, T, 3d) and path
    lengths (N,), as one library call (cuDNN on a GPU, where a loop of small kernels is
    launch-bound): a GRU whose input weights are the identity reads gi as its input gates
    (exactly: each product is one term times 1)."""
    d = weight_hh.shape[1]
    packed = pack_padded_sequence(gi, lengths.cpu(), batch_first=True, enforce_sorted=False)
    weights = [torch.eye(3 * d, dtype=gi.dtype, device=gi.device), weight_hh,
               gi.new_zeros(3 * d), bias_hh]
    h0 = gi.new_zeros(1, len(gi), d)
    out = torch._VF.gru(packed.data, packed.batch_sizes, h0, weights, True, 1, 0.0,
                        torch.is_grad_enabled(), False)[0]
    return pad_packed_sequence(packed._replace(data=out), batch_first=True,
                               total_length=gi.shape[1])[0]
