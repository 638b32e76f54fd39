"""The prefix state h_{t-1} that every autoregressive sampler conditions on (003:2, 003:4, 003:16):
a GRU over BOS and the marks emitted so far.

A mark enters the GRU only through its input gates W_ih e[ω] + b_ih, so those are one row of a
(V + 1, 3d) table, formed once per call (once per walk), instead of a matmul per step; dropout
acts on them. Scoring known paths (teacher forcing) runs the recurrence in :class:`Recurrence`
on a CPU, whose reverse pass is written out: per step, one matmul for the hidden state's
gradient and one for W_hh's, where autograd through a cell per step would need four; when a
walk drew the paths, its recorded states stand in for the forward pass. On a GPU it is one
cuDNN call (:func:`fused_recurrence`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ...dp.batch import LatticeBatch
from .walk import Walk
from .forcing import Route, WalkDropout, WalkMemory, replay


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


@dataclass
class Rows:
    """Positions of N known paths as rows, time-major: step t's rows are the paths with more
    than t positions (or some of them), in path order, as a walk reaches them: a walker reads
    position t at its t-th step."""

    paths: Tensor
    """(P,): each row's path."""
    steps: Tensor
    """(P,): its position t."""
    running: list[int]
    """Rows per step."""

    def at(self, values: Tensor) -> Tensor:
        """(P, ...): each row's entry of per-position ``values`` (N, T, ...)."""
        return values[self.paths, self.steps]

    def place(self, rows: Tensor, into: Tensor) -> Tensor:
        """``into`` (N, T, ...) with per-row ``rows`` (P, ...) at their positions."""
        return into.index_put((self.paths, self.steps), rows)

    def spans(self) -> list[slice]:
        """Each step's rows."""
        ends = list(itertools.accumulate(self.running))
        return [slice(end - n, end) for n, end in zip(self.running, ends)]


@dataclass
class Packing(Rows):
    """The first ``lengths`` positions of N known paths (:meth:`of`), as :class:`Rows`, with
    what a recurrence over them reads."""

    marks: Tensor
    """(P,): the mark each row reads (BOS at t = 0)."""
    parent: Tensor
    """(P,): the row, among step t - 1's, of the same path (0 at t = 0)."""

    @staticmethod
    def of(marks: Tensor, lengths: Tensor) -> "Packing":
        """Rows of paths reading ``marks`` (N, T), ``lengths`` (N,) positions each."""
        t = torch.arange(marks.shape[1], device=marks.device)
        going = lengths[None, :] > t[:, None]  # (T, N)
        steps, paths = going.nonzero(as_tuple=True)
        rank = going.cumsum(1) - 1  # a path's row among its step's rows
        parent = rank[(steps - 1).clamp(min=0), paths]
        return Packing(paths, steps, going.sum(1).tolist(), marks[paths, steps], parent)

    def where(self, keep: Tensor) -> tuple[Tensor, Rows]:
        """The rows where ``keep`` (P,) holds: their indices (m,) and their :class:`Rows`
        (one host sync)."""
        index = keep.nonzero().squeeze(1)
        steps = self.steps[index]
        running = torch.bincount(steps, minlength=len(self.running)).tolist()
        return index, Rows(self.paths[index], steps, running)


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


class PrefixGRU(nn.Module, WalkMemory):
    """h_t = GRU(e[ω_t], h_{t-1}) over the mark prefix, h_0 = GRU(e[BOS], 0): the h_{t-1} of
    003:2, 003:4 and 003:16. Ids 0..V-1 are marks, V is BOS. :meth:`step` advances N walkers
    by one mark, :meth:`run` reads known prefixes whole (one recurrence for all paths); the
    two share dropout masks (on the input gates) through :class:`WalkDropout`.

    Inside :func:`forcing.one_walk` on a CPU, a walk without gradients keeps what each step
    computed, and :meth:`run` on its paths hands that to :class:`Recurrence` instead of
    computing it again."""

    def __init__(self, vocab_size: int, d: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size + 1, d)
        self.gru = nn.GRU(d, d, batch_first=True)  # holds the weights
        self.drop = WalkDropout(dropout)
        self._register_load_state_dict_pre_hook(_rename_cell)
        self.tape: Optional[list[tuple[Tensor, ...]]] = None
        self.walk_table: Optional[Tensor] = None

    def begin_walk(self, walkers: int) -> None:
        self.tape, self.walk_table = [], None

    def end_walk(self) -> None:
        self.tape, self.walk_table = None, None

    def gate_table(self) -> Tensor:
        """(V + 1, 3d): W_ih e[ω] + b_ih of every mark and BOS (formed once per walk without
        gradients: the weights cannot change during it)."""
        in_walk = self.tape is not None and not torch.is_grad_enabled()
        if in_walk and self.walk_table is not None:
            return self.walk_table
        g = self.gru
        table = torch.addmm(g.bias_ih_l0, self.embed.weight, g.weight_ih_l0.T)
        if in_walk:
            self.walk_table = table
        return table

    def input_gates(self, marks: Tensor) -> Tensor:
        """W_ih e[ω] + b_ih (..., 3d) for marks (...), with dropout (see WalkDropout)."""
        return self.drop(nn.functional.embedding(marks, self.gate_table()))

    def step(self, marks: Tensor, h: Optional[Tensor] = None, rows: Optional[Tensor] = None
             ) -> Tensor:
        """h after reading ``marks`` (N,); with ``rows`` (n,), only those walkers read (the
        others' h is returned as it was), which saves the work of dead walkers on a CPU."""
        g = self.gru
        table = self.gate_table()
        if h is None:
            h = table.new_zeros(len(marks), g.hidden_size)
        if rows is None:
            gi, h_in = self.drop(table[marks]), h
        else:
            gi, h_in = self.drop(table[marks[rows]], walkers=rows), h[rows]
        states = gru_step(gi, h_in, g.weight_hh_l0, g.bias_hh_l0)
        if self.tape is not None and not torch.is_grad_enabled() and marks.device.type == "cpu":
            self.tape.append(states)  # this step's position of the walkers that read
        return states[0] if rows is None else h.index_copy(0, rows, states[0])

    def advance(self, batch: LatticeBatch, walk: Walk, moved: Walk, h: Optional[Tensor] = None
                ) -> Tensor:
        """The prefix state after ``walk`` moved to ``moved``: only walkers that emitted a
        mark and still have a choice ahead (``batch.choice_ahead``) read it; the others keep
        theirs, which no head reads again: their q is forced from here on (see
        :func:`base.forced_log_probs`). ``h``: the walkers' prefix state (N, d), when
        ``walk.hidden`` holds more than it."""
        h = walk.hidden if h is None else h
        reading = (moved.length > walk.length) & batch.choice_ahead[moved.state]
        if reading.device.type == "cpu":  # skip the others (finding them syncs a GPU)
            return self.step(moved.last_mark, h, reading.nonzero().squeeze(1))
        return torch.where(reading[:, None], self.step(moved.last_mark, h), h)

    def run(self, route: Route, bos: int, batch: Optional[LatticeBatch] = None) -> Tensor:
        """(N, T, d): h at every position of known paths (h_0 after BOS, h_t after mark t)
        in one recurrence over all N paths; positions past a path's end are zero, and with
        ``batch``, so are those a walk leaves alone (see :meth:`positions`)."""
        marks, lengths = self.positions(route, bos, batch)
        if marks.is_cuda:
            return self.fused(marks, lengths)
        packing = Packing.of(marks, lengths)
        h = self.run_packed(packing, len(marks))
        return packing.place(h, h.new_zeros(*marks.shape, h.shape[1]))

    def run_choosing(self, batch: LatticeBatch, route: Route, bos: int) -> tuple[Tensor, Rows]:
        """:meth:`run` at just the positions where the walker has a choice (see
        :func:`base.forced_log_probs`): h (m, d) at the Rows returned. The recurrence
        reads every mark up to each path's last choice (two host syncs to lay out the rows)."""
        marks, lengths = self.positions(route, bos, batch)
        packing = Packing.of(marks, lengths)
        if marks.is_cuda:
            h = packing.at(self.fused(marks, lengths))
        else:
            h = self.run_packed(packing, len(marks))
        pick, rows = packing.where(batch.choices[packing.at(route.states)] > 1)
        return h[pick], rows

    @staticmethod
    def positions(route: Route, bos: int, batch: Optional[LatticeBatch] = None
                  ) -> tuple[Tensor, Tensor]:
        """The marks read at each position (N, T), BOS first, and how many positions of
        each path (N,) the recurrence reads: all up to its end, or with ``batch`` those a
        walk reads (:meth:`advance`): up to its last with a choice ahead, and at least h_0."""
        marks = torch.cat([torch.full_like(route.marks[:, :1], bos), route.marks.clamp(min=0)], 1)
        if batch is None:
            return marks, route.lengths + 1
        ahead = batch.choice_ahead[route.states] & route.valid  # a prefix of each path
        return marks, ahead.sum(1).clamp(min=1)

    def fused(self, marks: Tensor, lengths: Tensor) -> Tensor:
        g = self.gru
        return fused_recurrence(self.input_gates(marks), lengths, g.weight_hh_l0, g.bias_hh_l0)

    def run_packed(self, packing: Packing, walkers: int) -> Tensor:
        """(P, d): h at the rows of ``packing``, paths of ``walkers`` walkers (on a CPU)."""
        g = self.gru
        table = self.gate_table()
        mask = self.drop.walker_mask(table, walkers)
        return Recurrence.apply(table, g.weight_hh_l0, g.bias_hh_l0, packing, mask,
                                self.walked(packing))

    def walked(self, packing: Packing) -> Optional[list[tuple[Tensor, ...]]]:
        """The recorded walk's :func:`gru_step` states of each step of ``packing``, or None
        if no walk was recorded (see :func:`forcing.replay`)."""
        return replay(self.tape, packing.running, lambda states: len(states[0]))


def _rename_cell(state_dict, prefix, *args) -> None:
    """Load parameters saved when the recurrence was an nn.GRUCell (``cell.weight_ih``...)."""
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        if prefix + "cell." + name in state_dict:
            state_dict[prefix + "gru." + name + "_l0"] = state_dict.pop(prefix + "cell." + name)
