"""SWA, the sampler with attention (003 §3.1):

    q_φ(ω_t | ω_{<t}, T_{x,y}) ∝ exp(W[1; h_{t-1}; Att(h_{t-1}, enc(x, y))])          (003:2)
    Att(h, enc) = Σ_i a_i enc_i,   a = softmax_i(h · enc_i)                          (003:3)

h_{t-1} is a left-to-right GRU over the mark prefix; enc(x, y) (n, d) is a bidirectional GRU
(d/2 per direction, so that h · enc_i is defined) over the n symbols of x # y^R. Reversing y
puts the ends of x and y next to each other (003 footnote 5). The softmax runs over the marks
the lattice allows next (and STOP at final states).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ...dp.batch import LatticeBatch
from .base import SEPARATOR, Sampler, SamplerConfig, Walk
from .prefix import PrefixGRU
from .forcing import Route, WalkDropout


@dataclass
class Encoded:
    enc: Tensor
    """(B, n, d): BiGRU states over x # y^R."""
    pad: Tensor
    """(B, n) bool: padding positions."""


class SWA(Sampler):
    name = "swa"

    def __init__(self, vocab_size: int, config: Optional[SamplerConfig] = None,
                 symbols: Sequence[str] = ()):
        super().__init__(vocab_size, config, symbols)
        d = self.config.d
        if d % 2:
            raise ValueError(f"SWA needs an even hidden size d (d/2 per direction), got {d}")
        self.prefix = PrefixGRU(vocab_size, d, self.config.dropout)
        self.symbol_embed = nn.Embedding(self.num_symbol_ids, d, padding_idx=0)
        self.encoder = nn.GRU(d, d // 2, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(self.config.dropout)
        self.drop_step = WalkDropout(self.config.dropout)
        self.out = nn.Linear(2 * d, vocab_size + 1)  # marks, then STOP

    def prepare(self, batch: LatticeBatch) -> Encoded:
        strings = [tuple(lat.x) + (SEPARATOR,) + tuple(reversed(lat.y)) for lat in batch.lattices]
        ids, lengths = self.symbol_ids(strings, batch.device)
        packed = pack_padded_sequence(self.drop(self.symbol_embed(ids)), torch.tensor(lengths),
                                      batch_first=True, enforce_sorted=False)
        enc, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True,
                                     total_length=ids.shape[1])
        return Encoded(enc, ids == 0)

    def start(self, batch: LatticeBatch, context: Encoded, lattice: Tensor) -> Walk:
        return self.initial_walk(batch, lattice, self.prefix.step(torch.full_like(lattice, self.bos)))

    def log_probs(self, batch: LatticeBatch, context: Encoded, walk: Walk) -> Tensor:
        h = walk.hidden
        B, N = len(context.enc), len(walk)
        if h.device.type == "cpu" and N % B == 0 and torch.equal(
                walk.lattice, torch.arange(B, device=h.device).repeat_interleave(N // B)):
            # lattice-major walkers (as sample, score and SMC keep them): lattice b's k
            # walkers read its encoding as k positions, with no per-walker copy of it
            features = self.features(context.enc, context.pad, h.view(B, N // B, -1))
        else:
            features = self.features(context.enc[walk.lattice], context.pad[walk.lattice],
                                     h[:, None])
        logits = self.out(self.drop_step(features.reshape(N, -1)))
        return self.legal_log_probs(batch, walk, logits)

    def path_log_probs(self, batch: LatticeBatch, context: Encoded, route: Route) -> Tensor:
        h = self.prefix.run(route, self.bos)  # (N, T, d)
        N, T, d = h.shape
        k = route.per_lattice
        if k is not None:  # lattice b's k paths read its encoding as k·T positions
            features = self.features(context.enc, context.pad, h.view(N // k, k * T, d))
        else:
            features = self.features(context.enc[route.lattice], context.pad[route.lattice], h)
        logits = self.out(self.drop_step(features.view(N, T, 2 * d)))
        return self.legal_log_softmax(batch, route.states, logits)

    @staticmethod
    def features(enc: Tensor, pad: Tensor, h: Tensor) -> Tensor:
        """(R, T, 2d): [h; Att(h, enc)] (003:2–3) for T prefix states h (R, T, d) that attend
        over encodings enc (R, n, d) with padding ``pad`` (R, n); W is applied by the caller."""
        scores = torch.bmm(h, enc.transpose(1, 2)).masked_fill(pad[:, None], float("-inf"))
        return torch.cat([h, torch.bmm(torch.softmax(scores, dim=2), enc)], dim=2)

    def advance(self, batch: LatticeBatch, context: Encoded, walk: Walk, choice: Tensor) -> Walk:
        moved = self.moved(batch, walk, choice)
        moved.hidden = self.prefix.advance(walk, moved)
        return moved
