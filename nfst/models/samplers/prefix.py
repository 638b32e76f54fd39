"""The prefix state h_{t-1} that every autoregressive sampler conditions on (003:2, 003:4, 003:16):
a GRU over BOS and the marks emitted so far.

A mark enters the GRU only through its input gates W_ih e[ω] + b_ih, so those are one row of a
(V + 1, 3d) table, computed once per call, instead of a matmul per step; dropout acts on them.
Scoring known paths (teacher forcing) runs the recurrence in :class:`Recurrence` on a CPU, whose
reverse pass is written out: one matmul per step for the hidden state's gradient and one for
all of W_hh's, where autograd through a cell per step would need four; on a GPU it is one
cuDNN call (:func:`fused_recurrence`).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .base import Walk
from .forcing import Route, WalkDropout, WalkMemory


def gru_step(gi: Tensor, h: Tensor, weight_hh: Tensor, bias_hh: Tensor
             ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One GRU step (PyTorch's equations and gate order r, z, n) from input gates gi (n, 3d):

        r, z = σ(gi_rz + W_hr,hz h + b_hr,hz),   c = tanh(gi_n + r ⊙ (W_hn h + b_hn)),
        h'   = (1 − z) ⊙ c + z ⊙ h.

    Returns h' (n, d) and what the reverse pass needs: [r z] (n, 2d), c and W_hn h + b_hn."""
    d = h.shape[1]
    gh = torch.addmm(bias_hh, h, weight_hh.T)
    rz = torch.sigmoid(gi[:, :2 * d] + gh[:, :2 * d])
    gh_n = gh[:, 2 * d:]
    c = torch.tanh(torch.addcmul(gi[:, 2 * d:], rz[:, :d], gh_n))
    return torch.addcmul(c, rz[:, d:], h - c), rz, c, gh_n


class Recurrence(torch.autograd.Function):
    """h at every position of paths of different lengths from their input gates, h_0 = 0.

    Rows are packed time-major: step t's rows are the ``running[t]`` longest paths (sorted
    longest first), so ``gi`` is (P, 3d) with P = Σ running and the output (P, d) is laid out
    the same way. Gradients flow to gi, W_hh and b_hh."""

    @staticmethod
    def forward(ctx, gi: Tensor, weight_hh: Tensor, bias_hh: Tensor, running: list[int],
                walked: Optional[tuple[Tensor, ...]] = None):
        """``walked``: h, [r z], c and W_hn h + b_hn of every row (packed like gi), when a
        walk already computed them; the forward pass is then only the reverse pass's setup."""
        if walked is None:
            walked = Recurrence.states(gi, weight_hh, bias_hh, running)
        out = walked[0]
        ctx.save_for_backward(weight_hh, *walked)
        ctx.running = running
        return out

    @staticmethod
    def states(gi: Tensor, weight_hh: Tensor, bias_hh: Tensor, running: list[int]
               ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """h, [r z], c and W_hn h + b_hn of every row (see :func:`gru_step`)."""
        P, d = gi.shape[0], weight_hh.shape[1]
        out, rz_all = gi.new_empty(P, d), gi.new_empty(P, 2 * d)
        c_all, gh_n_all = gi.new_empty(P, d), gi.new_empty(P, d)
        h, lo = gi.new_zeros(running[0], d), 0
        for n in running:
            h, rz, c, gh_n = gru_step(gi[lo:lo + n], h[:n], weight_hh, bias_hh)
            rows = slice(lo, lo + n)
            out[rows], rz_all[rows], c_all[rows], gh_n_all[rows] = h, rz, c, gh_n
            lo += n
        return out, rz_all, c_all, gh_n_all

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out: Tensor):
        weight_hh, out, rz_all, c_all, gh_n_all = ctx.saved_tensors
        running, d = ctx.running, weight_hh.shape[1]
        starts = [0]
        for n in running[:-1]:
            starts.append(starts[-1] + n)
        # h_{t-1} of every row (0 at t = 0), for the gradients of z's blend and of W_hh
        prev = torch.cat([out.new_zeros(running[0], d)]
                         + [out[starts[t - 1]:starts[t - 1] + running[t]]
                            for t in range(1, len(running))])
        grad_gh = out.new_empty(len(out), 3 * d)
        grad_gi = torch.empty_like(grad_gh)
        carry = out.new_zeros(running[0], d)  # dL/dh_t through step t + 1 (0 past a path's end)
        for t in reversed(range(len(running))):
            lo, n = starts[t], running[t]
            rows = slice(lo, lo + n)
            dh = grad_out[rows] + carry[:n]
            rz, c, h_prev = rz_all[rows], c_all[rows], prev[rows]
            r, z = rz[:, :d], rz[:, d:]
            d_c = (dh - dh * z) * (1 - c * c)                       # through tanh
            d_rz = torch.cat([d_c * gh_n_all[rows], dh * (h_prev - c)], 1) * rz * (1 - rz)
            grad_gi[rows, :2 * d] = grad_gh[rows, :2 * d] = d_rz
            grad_gi[rows, 2 * d:] = d_c
            grad_gh[rows, 2 * d:] = d_c * r
            carry[:n] = torch.addmm(dh * z, grad_gh[rows], weight_hh)
        return grad_gi, grad_gh.T @ prev, grad_gh.sum(0), None, None


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


class PrefixGRU(nn.Module, WalkMemory):
    """h_t = GRU(e[ω_t], h_{t-1}) over the mark prefix, h_0 = GRU(e[BOS], 0): the h_{t-1} of
    003:2, 003:4 and 003:16. Ids 0..V-1 are marks, V is BOS. :meth:`step` advances N walkers
    by one mark, :meth:`run` reads known prefixes whole (one recurrence for all paths); the
    two share dropout masks (on the input gates) through :class:`WalkDropout`.

    Inside :func:`forcing.one_walk` on a CPU, a walk without gradients keeps what each step
    computed, and :meth:`run` on its paths hands that to :class:`Recurrence` instead of
    computing it again: the one pass then only sets up the reverse pass."""

    def __init__(self, vocab_size: int, d: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size + 1, d)
        self.gru = nn.GRU(d, d, batch_first=True)  # holds the weights
        self.drop = WalkDropout(dropout)
        self._register_load_state_dict_pre_hook(_rename_cell)
        self.tape: Optional[list[tuple[Tensor, ...]]] = None

    def begin_walk(self, walkers: int) -> None:
        self.tape = []

    def end_walk(self) -> None:
        self.tape = None

    def input_gates(self, marks: Tensor, walkers: Optional[Tensor] = None) -> Tensor:
        """W_ih e[ω] + b_ih (..., 3d) for marks (...), with dropout (``walkers``: see
        WalkDropout)."""
        g = self.gru
        table = torch.addmm(g.bias_ih_l0, self.embed.weight, g.weight_ih_l0.T)  # (V + 1, 3d)
        return self.drop(nn.functional.embedding(marks, table), walkers)

    def step(self, marks: Tensor, h: Optional[Tensor] = None, rows: Optional[Tensor] = None
             ) -> Tensor:
        """h after reading ``marks`` (N,); with ``rows`` (n,), only those walkers read (the
        others' h is returned as it was), which saves the work of dead walkers on a CPU."""
        gi = self.input_gates(marks)
        g = self.gru
        if h is None:
            h = gi.new_zeros(len(marks), g.hidden_size)
        if rows is not None:
            gi, h_in = gi[rows], h[rows]
        else:
            h_in = h
        states = gru_step(gi, h_in, g.weight_hh_l0, g.bias_hh_l0)
        if self.tape is not None and not torch.is_grad_enabled() and marks.device.type == "cpu":
            self.tape.append(states)  # this step's position of the walkers that read
        return states[0] if rows is None else h.index_copy(0, rows, states[0])

    def advance(self, walk: Walk, moved: Walk, h: Optional[Tensor] = None) -> Tensor:
        """The prefix state after ``walk`` moved to ``moved``: only walkers that emitted a
        mark read it; walkers that stopped keep theirs. ``h``: the walkers' prefix state
        (N, d), when ``walk.hidden`` holds more than it."""
        h = walk.hidden if h is None else h
        emitted = moved.length > walk.length
        if emitted.device.type == "cpu":  # skip the dead (finding them syncs a GPU)
            return self.step(moved.last_mark, h, emitted.nonzero().squeeze(1))
        return torch.where(emitted[:, None], self.step(moved.last_mark, h), h)

    def run(self, route: Route, bos: int) -> Tensor:
        """(N, T, d): h at every position of known paths (h_0 after BOS, h_t after mark t)
        in one recurrence over all N paths; positions past a path's end are zero. Each step
        runs on just the paths still going (one host sync to find them)."""
        marks = torch.cat([torch.full_like(route.marks[:, :1], bos), route.marks.clamp(min=0)], 1)
        N, T = marks.shape
        lengths = route.lengths + 1
        g = self.gru
        if marks.is_cuda:
            return fused_recurrence(self.input_gates(marks), lengths, g.weight_hh_l0, g.bias_hh_l0)
        order = torch.argsort(lengths, descending=True, stable=True)
        t = torch.arange(T, device=marks.device)
        running = (lengths[order][None, :] > t[:, None]).sum(1).tolist()
        # packed row of (path order[i], position t): start[t] + i, time-major
        start = torch.tensor([0] + running[:-1], device=marks.device).cumsum(0)
        steps = torch.repeat_interleave(t, torch.tensor(running, device=marks.device))
        paths = order[torch.arange(len(steps), device=marks.device) - start[steps]]
        gi = self.input_gates(marks[paths, steps], walkers=paths)
        walked = self.walked_states(lengths, paths, steps, start)
        packed = Recurrence.apply(gi, g.weight_hh_l0, g.bias_hh_l0, running, walked)
        rank = torch.empty_like(order)
        rank[order] = torch.arange(N, device=marks.device)
        row = torch.where(t[None, :] < lengths[:, None], start[None, :] + rank[:, None], -1)
        return torch.cat([packed, packed.new_zeros(1, packed.shape[1])])[row]

    def walked_states(self, lengths: Tensor, paths: Tensor, steps: Tensor, start: Tensor
                      ) -> Optional[tuple[Tensor, ...]]:
        """The recorded walk's :func:`gru_step` states of :meth:`run`'s packed rows (path
        ``paths``, position ``steps``, (P,) each), or None if no walk was recorded. The walk
        read position t of the walkers with lengths > t in walker order, one step each."""
        if not self.tape:
            return None
        recorded = [torch.cat(parts) for parts in zip(*self.tape)]
        if len(recorded[0]) != len(steps):
            raise RuntimeError("the prefix GRU's recorded walk is not the paths it scores")
        t = torch.arange(len(start), device=lengths.device)
        earlier = (lengths[None, :] > t[:, None]).cumsum(1) - 1  # (T, N): rank among step t's
        index = start[steps] + earlier[steps, paths]
        return tuple(x[index] for x in recorded)


def _rename_cell(state_dict, prefix, *args) -> None:
    """Load parameters saved when the recurrence was an nn.GRUCell (``cell.weight_ih``...)."""
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        if prefix + "cell." + name in state_dict:
            state_dict[prefix + "gru." + name + "_l0"] = state_dict.pop(prefix + "cell." + name)
