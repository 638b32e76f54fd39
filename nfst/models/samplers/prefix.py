"""The prefix state h_{t-1} that every autoregressive sampler conditions on (003:2, 003:4, 003:16):
a GRU over BOS and the marks emitted so far."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .base import Walk
from .forcing import Route, StepDropout


class PrefixGRU(nn.Module):
    """h_t = GRU(e[ω_t], h_{t-1}) over the mark prefix, h_0 = GRU(e[BOS], 0): the h_{t-1} of
    003:2, 003:4 and 003:16. Ids 0..V-1 are marks, V is BOS. :meth:`step` advances N walkers
    by one mark, :meth:`run` reads known prefixes whole (one recurrence for all paths); the
    two share dropout masks through :class:`StepDropout`."""

    def __init__(self, vocab_size: int, d: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size + 1, d)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.drop = StepDropout(dropout)
        self._register_load_state_dict_pre_hook(_rename_cell)

    def step(self, marks: Tensor, h: Optional[Tensor] = None, rows: Optional[Tensor] = None
             ) -> Tensor:
        """h after reading ``marks`` (N,); with ``rows`` (n,), only those walkers read (the
        others' h is returned as it was), which saves the work of dead walkers on a CPU."""
        x = self.drop(self.embed(marks))
        g = self.gru
        if h is None:
            h = x.new_zeros(len(marks), g.hidden_size)
        if rows is None:
            return torch.gru_cell(x, h, g.weight_ih_l0, g.weight_hh_l0, g.bias_ih_l0, g.bias_hh_l0)
        new = torch.gru_cell(x[rows], h[rows], g.weight_ih_l0, g.weight_hh_l0, g.bias_ih_l0,
                             g.bias_hh_l0)
        return h.index_copy(0, rows, new)

    def advance(self, walk: Walk, moved: Walk) -> Tensor:
        """The hidden state after ``walk`` moved to ``moved``: only walkers that emitted a
        mark read it; walkers that stopped keep theirs."""
        emitted = moved.length > walk.length
        if emitted.device.type == "cpu":  # skip the dead (finding them syncs a GPU)
            return self.step(moved.last_mark, walk.hidden, emitted.nonzero().squeeze(1))
        h = self.step(moved.last_mark, walk.hidden)
        return torch.where(emitted[:, None], h, walk.hidden)

    def run(self, route: Route, bos: int) -> Tensor:
        """(N, T, d): h at every position of known paths (h_0 after BOS, h_t after mark t)
        in one recurrence over all N paths; positions past a path's end are zero."""
        marks = torch.cat([torch.full_like(route.marks[:, :1], bos), route.marks.clamp(min=0)], 1)
        x = self.drop(self.embed(marks))  # (N, T, d)
        if x.is_cuda:  # one cuDNN call
            packed = pack_padded_sequence(x, (route.lengths + 1).cpu(), batch_first=True,
                                          enforce_sorted=False)
            return pad_packed_sequence(self.gru(packed)[0], batch_first=True,
                                       total_length=marks.shape[1])[0]
        return self._run_cpu(x, route.lengths + 1)

    def _run_cpu(self, x: Tensor, lengths: Tensor) -> Tensor:
        """The recurrence over positions, each step on just the paths still running. (A packed
        nn.GRU does that too, but on a CPU its backward pass costs time quadratic in T.)"""
        N, T, d = x.shape
        order = torch.argsort(lengths, descending=True, stable=True)
        running = (lengths[order][None, :] > torch.arange(T)[:, None]).sum(1).tolist()
        g = self.gru
        inputs = x[order].unbind(1)
        h, outs = x.new_zeros(N, d), []
        for t, n in enumerate(running):
            h = torch.gru_cell(inputs[t][:n], h[:n], g.weight_ih_l0, g.weight_hh_l0,
                               g.bias_ih_l0, g.bias_hh_l0)
            outs.append(h)
        # packed rows (time-major) -> (N, T), a zero row past each path's end
        packed = torch.cat(outs + [x.new_zeros(1, d)])
        start = torch.tensor([0] + running[:-1]).cumsum(0)
        rank = torch.empty_like(order)
        rank[order] = torch.arange(N)
        t = torch.arange(T)
        row = torch.where(t[None, :] < lengths[:, None], start[None, :] + rank[:, None],
                          torch.full((N, T), len(packed) - 1))
        return packed[row]


def _rename_cell(state_dict, prefix, *args) -> None:
    """Load parameters saved when the recurrence was an nn.GRUCell (``cell.weight_ih``...)."""
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        if prefix + "cell." + name in state_dict:
            state_dict[prefix + "gru." + name + "_l0"] = state_dict.pop(prefix + "cell." + name)
