"""``sws-mlp`` (ours, beyond 003): SWS with an interaction layer,

    q_φ(ω_t | ω_{<t}, T_{x,y}) ∝ exp(W[1; h; e_x; e_y] + U tanh(V[1; h; e_x; e_y]))

with h = h_{t-1}, e_x = enc_x(x_{≥i}), e_y = enc_y(y_{≥j}) as in SWS (003:4, ``sws``) and a
hidden layer of width d. SWS's three sources add independent terms to the logits, so its
first decision on cipher scores cipher i as f_i(x) + g_i(y); neither x nor y alone says which
cipher made the pair (x is uniform and each cipher a permutation), and the population optimum
of any such additive choice is uniform (tests/models/samplers/test_sws_mlp.py). The MLP term
sees x and y together. SWS's parameters come first, so from the same seed the two samplers
start with the same W.

V is linear, so V[1; h; e_x; e_y] = V_h h + b + V_x e_x + V_y e_y: like SWS's suffix logits,
the suffix blocks are applied once per walk (each walker's dropout mask on e_x, e_y) and a step
reads one row of each, then adds V_h h (n, d) and applies U (d → V + 1).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from ...dp.batch import LatticeBatch
from .config import SamplerConfig
from .record import WalkRecord
from .sws import SWS, Suffixes
from .symbols import Vocabulary


class SWSMLP(SWS):
    name = "sws-mlp"

    def __init__(self, vocabulary: Vocabulary, config: Optional[SamplerConfig] = None):
        super().__init__(vocabulary, config)
        d = self.config.d
        self.mix_h = nn.Linear(d, d)  # V_h and the hidden layer's bias
        self.mix_suffix = nn.Linear(2 * d, d, bias=False)  # [V_x V_y]
        self.mix_out = nn.Linear(d, self.vocab_size + 1, bias=False)  # U; marks, then STOP

    def suffix_logits(
        self, context: Suffixes, lattice: Tensor, record: Optional[WalkRecord]
    ) -> tuple[Tensor, Tensor]:
        """(N, |x|max + 1, V + 1 + d): for every i, [W_x e_x; V_x e_x] (SWS's suffix logits,
        then the hidden layer's suffix term), e_x with each walker's dropout; likewise for y
        (N, |y|max + 1, V + 1 + d). :meth:`logits_at` splits them."""
        d = self.config.d
        w = torch.cat([self.out_suffix.weight, self.mix_suffix.weight])  # (V + 1 + d, 2d)
        return (
            nn.functional.linear(self.drop_x(context.x[lattice], record), w[:, :d]),
            nn.functional.linear(self.drop_y(context.y[lattice], record), w[:, d:]),
        )

    def logits_at(
        self,
        batch: LatticeBatch,
        states: Tensor,
        h: Tensor,
        x: Tensor,
        y: Tensor,
        record: Optional[WalkRecord],
        walkers: Optional[Tensor] = None,
    ) -> Tensor:
        """(n, V + 1) at states (n,) for prefix states h (n, d) and the suffix rows x, y (from
        :meth:`suffix_logits`) of ``walkers`` (n,) (default: row r is walker r)."""
        i, j = batch.positions[states].unbind(-1)
        r = torch.arange(len(states), device=states.device) if walkers is None else walkers
        h = self.drop_h(h, record, walkers=walkers)
        suffix = x[r, i] + y[r, j]  # (n, V + 1 + d)
        marks = self.vocab_size + 1
        hidden = torch.tanh(self.mix_h(h) + suffix[:, marks:])
        return self.out_h(h) + suffix[:, :marks] + self.mix_out(hidden)
