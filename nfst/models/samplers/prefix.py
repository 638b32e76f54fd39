"""The prefix state h_{t-1} that every autoregressive sampler conditions on (003:2, 003:4, 003:16):
a GRU over BOS and the marks emitted so far."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from .base import Walk


class PrefixGRU(nn.Module):
    """h_t = GRU(e[ω_t], h_{t-1}) over the mark prefix, h_0 = GRU(e[BOS], 0): the h_{t-1} of
    003:2, 003:4 and 003:16. Ids 0..V-1 are marks, V is BOS."""

    def __init__(self, vocab_size: int, d: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size + 1, d)
        self.cell = nn.GRUCell(d, d)
        self.drop = nn.Dropout(dropout)

    def step(self, marks: Tensor, h: Optional[Tensor] = None) -> Tensor:
        return self.cell(self.drop(self.embed(marks)), h)

    def advance(self, walk: Walk, moved: Walk) -> Tensor:
        """The hidden state after ``walk`` moved to ``moved``: only walkers that emitted a
        mark read it; walkers that stopped keep theirs."""
        h = self.step(moved.last_mark, walk.hidden)
        emitted = moved.length > walk.length
        return torch.where(emitted[:, None], h, walk.hidden)
