"""The no-lookahead baseline (003:16, App. F): the next mark from the mark prefix alone,

    q_φ(ω_t | ω_{<t}, T_{x,y}) ∝ exp(W[1; h_{t-1}]),   h a GRU over BOS ω_1 … ω_{t-1},

renormalised over the marks the lattice allows at the current state (and STOP if final).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from ...dp.batch import LatticeBatch
from .base import Sampler
from .choices import choosing, forced_log_probs, legal_log_softmax, with_forced
from .config import SamplerConfig
from .dropout import WalkDropout
from .prefix import PrefixGRU
from .record import WalkRecord
from .route import Route
from .symbols import Vocabulary
from .walk import Walk


class NoLookahead(Sampler):
    name = "nolookahead"

    def __init__(self, vocabulary: Vocabulary, config: Optional[SamplerConfig] = None):
        super().__init__(vocabulary, config)
        d = self.config.d
        self.prefix = PrefixGRU(self.vocab_size, d, self.config.dropout)
        self.drop = WalkDropout(self.config.dropout)
        self.out = nn.Linear(d, self.vocab_size + 1)  # marks, then STOP

    def start(
        self, batch: LatticeBatch, context, lattice: Tensor, record: Optional[WalkRecord] = None
    ) -> Walk:
        h = self.prefix.step(torch.full_like(lattice, self.bos), record=record)
        return self.initial_walk(batch, lattice, h, record)

    def log_probs(self, batch: LatticeBatch, context, walk: Walk) -> Tensor:
        rows = choosing(batch, walk)
        if rows is None:
            return legal_log_softmax(
                batch, walk.state, self.out(self.drop(walk.hidden, walk.record))
            )
        logits = self.out(self.drop(walk.hidden[rows], walk.record, walkers=rows))
        return with_forced(batch, walk, rows, legal_log_softmax(batch, walk.state[rows], logits))

    def path_log_probs(
        self, batch: LatticeBatch, context, route: Route, record: Optional[WalkRecord] = None
    ) -> Tensor:
        h, rows = self.prefix.run_choosing(batch, route, self.bos, record)  # (m, d)
        logits = self.out(self.drop(h, record, walkers=rows.paths))
        lp = legal_log_softmax(batch, rows.at(route.states), logits)
        return rows.place(lp, forced_log_probs(batch, route.states, lp.dtype))

    def advance(self, batch: LatticeBatch, context, walk: Walk, choice: Tensor) -> Walk:
        moved = self.moved(batch, walk, choice)
        moved.hidden = self.prefix.advance(batch, walk, moved)
        return moved
