"""The prefix state h_{t-1} that every autoregressive sampler conditions on (003:2, 003:4, 003:16):
a GRU over BOS and the marks emitted so far.

A mark enters the GRU only through its input gates W_ih e[ω] + b_ih, so those are one row of a
(V + 1, 3d) table, formed once per call (once per walk), instead of a matmul per step; dropout
acts on them. Scoring known paths (teacher forcing) runs the recurrence of ``recurrence`` over
all of them at once.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from ...dp.batch import LatticeBatch
from .dropout import WalkDropout
from .record import WalkRecord
from .recurrence import Recurrence, fused_recurrence, gru_step
from .route import Packing, Route, Rows
from .walk import Walk


class PrefixGRU(nn.Module):
    """h_t = GRU(e[ω_t], h_{t-1}) over the mark prefix, h_0 = GRU(e[BOS], 0): the h_{t-1} of
    003:2, 003:4 and 003:16. Ids 0..V-1 are marks, V is BOS. :meth:`step` advances N walkers
    by one mark, :meth:`run` reads known prefixes whole (one recurrence for all paths); with
    the walk's :class:`~.record.WalkRecord`, the two share dropout masks (on the input gates).

    On a CPU, a walk without gradients keeps what each step computed in its record, and
    :meth:`run` on its paths hands that to :class:`~.recurrence.Recurrence` instead of
    computing it again."""

    def __init__(self, vocab_size: int, d: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size + 1, d)
        self.gru = nn.GRU(d, d, batch_first=True)  # holds the weights
        self.drop = WalkDropout(dropout)
        self.register_load_state_dict_pre_hook(_rename_cell)

    def gate_table(self, record: Optional[WalkRecord] = None) -> Tensor:
        """(V + 1, 3d): W_ih e[ω] + b_ih of every mark and BOS (formed once per walk without
        gradients: the weights cannot change during it)."""
        g = self.gru

        def table() -> Tensor:
            return torch.addmm(g.bias_ih_l0, self.embed.weight, g.weight_ih_l0.T)

        return table() if record is None else record.constant(self, table)

    def input_gates(self, marks: Tensor, record: Optional[WalkRecord] = None) -> Tensor:
        """W_ih e[ω] + b_ih (..., 3d) for marks (...), with dropout (see WalkDropout)."""
        return self.drop(nn.functional.embedding(marks, self.gate_table(record)), record)

    def step(
        self,
        marks: Tensor,
        h: Optional[Tensor] = None,
        rows: Optional[Tensor] = None,
        record: Optional[WalkRecord] = None,
    ) -> Tensor:
        """h after reading ``marks`` (N,); with ``rows`` (n,), only those walkers read (the
        others' h is returned as it was), which saves the work of dead walkers on a CPU."""
        g = self.gru
        table = self.gate_table(record)
        if h is None:
            h = table.new_zeros(len(marks), g.hidden_size)
        if rows is None:
            gi, h_in = self.drop(table[marks], record), h
        else:
            gi, h_in = self.drop(table[marks[rows]], record, walkers=rows), h[rows]
        states = gru_step(gi, h_in, g.weight_hh_l0, g.bias_hh_l0)
        if record is not None and marks.device.type == "cpu":
            record.keep(self, states)  # this step's position of the walkers that read
        return states[0] if rows is None else h.index_copy(0, rows, states[0])

    def advance(
        self, batch: LatticeBatch, walk: Walk, moved: Walk, h: Optional[Tensor] = None
    ) -> Tensor:
        """The prefix state after ``walk`` moved to ``moved``: only walkers that emitted a
        mark and still have a choice ahead (``batch.choice_ahead``) read it; the others keep
        theirs, which no head reads again: their q is forced from here on (see
        :func:`~.choices.forced_log_probs`). ``h``: the walkers' prefix state (N, d), when
        ``walk.hidden`` holds more than it."""
        h = walk.hidden if h is None else h
        reading = (moved.length > walk.length) & batch.choice_ahead[moved.state]
        if not walk.static:  # skip the others (finding them syncs a GPU)
            return self.step(moved.last_mark, h, reading.nonzero().squeeze(1), walk.record)
        return torch.where(reading[:, None], self.step(moved.last_mark, h, record=walk.record), h)

    def run(
        self,
        route: Route,
        bos: int,
        batch: Optional[LatticeBatch] = None,
        record: Optional[WalkRecord] = None,
    ) -> Tensor:
        """(N, T, d): h at every position of known paths (h_0 after BOS, h_t after mark t)
        in one recurrence over all N paths; positions past a path's end are zero, and with
        ``batch``, so are those a walk leaves alone (see :meth:`positions`)."""
        marks, lengths = self.positions(route, bos, batch)
        if marks.is_cuda:
            return self.fused(marks, lengths, record)
        packing = Packing.of(marks, lengths)
        h = self.run_packed(packing, len(marks), record)
        return packing.place(h, h.new_zeros(*marks.shape, h.shape[1]))

    def run_choosing(
        self, batch: LatticeBatch, route: Route, bos: int, record: Optional[WalkRecord] = None
    ) -> tuple[Tensor, Rows]:
        """:meth:`run` at just the positions where the walker has a choice (see
        :func:`~.choices.forced_log_probs`): h (m, d) at the Rows returned. The recurrence
        reads every mark up to each path's last choice (two host syncs to lay out the rows)."""
        marks, lengths = self.positions(route, bos, batch)
        packing = Packing.of(marks, lengths)
        if marks.is_cuda:
            h = packing.at(self.fused(marks, lengths, record))
        else:
            h = self.run_packed(packing, len(marks), record)
        pick, rows = packing.where(batch.choices[packing.at(route.states)] > 1)
        return h[pick], rows

    @staticmethod
    def positions(
        route: Route, bos: int, batch: Optional[LatticeBatch] = None
    ) -> tuple[Tensor, Tensor]:
        """The marks read at each position (N, T), BOS first, and how many positions of
        each path (N,) the recurrence reads: all up to its end, or with ``batch`` those a
        walk reads (:meth:`advance`): up to its last with a choice ahead, and at least h_0."""
        marks = torch.cat([torch.full_like(route.marks[:, :1], bos), route.marks.clamp(min=0)], 1)
        if batch is None:
            return marks, route.lengths + 1
        ahead = batch.choice_ahead[route.states] & route.valid  # a prefix of each path
        return marks, ahead.sum(1).clamp(min=1)

    def fused(self, marks: Tensor, lengths: Tensor, record: Optional[WalkRecord] = None) -> Tensor:
        g = self.gru
        return fused_recurrence(
            self.input_gates(marks, record), lengths, g.weight_hh_l0, g.bias_hh_l0
        )

    def run_packed(
        self, packing: Packing, walkers: int, record: Optional[WalkRecord] = None
    ) -> Tensor:
        """(P, d): h at the rows of ``packing``, paths of ``walkers`` walkers (on a CPU); the
        states a walk recorded in ``record`` stand in for the forward pass."""
        g = self.gru
        table = self.gate_table(record)
        mask = self.drop.walker_mask(table, walkers, record)
        walked = (
            None
            if record is None
            else record.replay(self, packing.running, lambda states: len(states[0]))
        )
        return Recurrence.apply(table, g.weight_hh_l0, g.bias_hh_l0, packing, mask, walked)


def _rename_cell(module: nn.Module, state_dict: dict, prefix: str, *args) -> None:
    """Load parameters saved when the recurrence was an nn.GRUCell (``cell.weight_ih``...)."""
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        if prefix + "cell." + name in state_dict:
            state_dict[prefix + "gru." + name + "_l0"] = state_dict.pop(prefix + "cell." + name)
