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
from typing import Optional

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ...dp.batch import LatticeBatch
from .base import Sampler, SamplerConfig
from .choices import legal_log_softmax
from .dropout import WalkDropout
from .prefix import PrefixGRU
from .record import WalkRecord
from .route import Route
from .symbols import SEPARATOR, Vocabulary
from .walk import Walk


@dataclass
class Encoded:
    enc: Tensor
    """(B, n, d): BiGRU states over x # y^R."""
    pad: Tensor
    """(B, n) bool: padding positions."""


class SWA(Sampler):
    name = "swa"
    reads_symbols = True

    def __init__(self, vocabulary: Vocabulary, config: Optional[SamplerConfig] = None):
        super().__init__(vocabulary, config)
        d = self.config.d
        if d % 2:
            raise ValueError(f"SWA needs an even hidden size d (d/2 per direction), got {d}")
        self.prefix = PrefixGRU(self.vocab_size, d, self.config.dropout)
        self.symbol_embed = nn.Embedding(self.vocabulary.num_symbol_ids, d, padding_idx=0)
        self.encoder = nn.GRU(d, d // 2, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(self.config.dropout)
        self.drop_h, self.drop_att = (WalkDropout(self.config.dropout),
                                      WalkDropout(self.config.dropout))
        self.out = nn.Linear(2 * d, self.vocab_size + 1)  # W = [W_h W_a]; marks, then STOP

    def prepare(self, batch: LatticeBatch) -> Encoded:
        strings = [tuple(lat.x) + (SEPARATOR,) + tuple(reversed(lat.y)) for lat in batch.lattices]
        ids, lengths = self.vocabulary.symbol_ids(strings, batch.device)
        packed = pack_padded_sequence(self.drop(self.symbol_embed(ids)), torch.tensor(lengths),
                                      batch_first=True, enforce_sorted=False)
        enc, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True,
                                     total_length=ids.shape[1])
        return Encoded(enc, ids == 0)

    def start(self, batch: LatticeBatch, context: Encoded, lattice: Tensor,
              record: Optional[WalkRecord] = None) -> Walk:
        h = self.prefix.step(torch.full_like(lattice, self.bos), record=record)
        return self.initial_walk(batch, lattice, (h, self.values(context, lattice, record)),
                                 record)

    def values(self, context: Encoded, lattice: Tensor, record: Optional[WalkRecord]) -> Tensor:
        """(N, n, V + 1): W_a enc_i of each walker's encoding, W_a the attention's block of
        W, with the walker's dropout on enc_i. As W_a is linear and the mask is the walker's
        at every step, W_a Att(h, enc) = Σ_i a_i (W_a enc_i): 003:2's logits read the
        attention through these (V + 1)-wide rows instead of d-wide ones."""
        d = self.config.d
        return nn.functional.linear(self.drop_att(context.enc[lattice], record),
                                    self.out.weight[:, d:])

    def logits(self, context: Encoded, lattice: Tensor, h: Tensor, values: Tensor,
               per_lattice: Optional[int], record: Optional[WalkRecord]) -> Tensor:
        """(N, T, V + 1): W[1; h; Att(h, enc)] (003:2–3) for prefix states h (N, T, d);
        ``per_lattice``: k when the N walkers are lattice-major, k per lattice."""
        N, T, d = h.shape
        if per_lattice is not None:  # lattice b's k walkers attend as k·T positions of b
            B = N // per_lattice
            scores = torch.bmm(h.view(B, per_lattice * T, d), context.enc.transpose(1, 2))
            scores = scores.masked_fill(context.pad[:, None], float("-inf")).view(N, T, -1)
        else:
            scores = torch.bmm(h, context.enc[lattice].transpose(1, 2))
            scores = scores.masked_fill(context.pad[lattice][:, None], float("-inf"))
        attended = torch.bmm(torch.softmax(scores, dim=2), values)
        own = nn.functional.linear(self.drop_h(h, record), self.out.weight[:, :d], self.out.bias)
        return own + attended

    def log_probs(self, batch: LatticeBatch, context: Encoded, walk: Walk) -> Tensor:
        h, values = walk.hidden
        B, N = len(context.enc), len(walk)
        lattice_major = N % B == 0 and not walk.static and torch.equal(
            walk.lattice, torch.arange(B, device=h.device).repeat_interleave(N // B))
        logits = self.logits(context, walk.lattice, h[:, None], values,
                             N // B if lattice_major else None, walk.record)
        return legal_log_softmax(batch, walk.state, logits[:, 0])

    def path_log_probs(self, batch: LatticeBatch, context: Encoded, route: Route,
                       record: Optional[WalkRecord] = None) -> Tensor:
        h = self.prefix.run(route, self.bos, batch, record)  # (N, T, d)
        logits = self.logits(context, route.lattice, h, self.values(context, route.lattice, record),
                             route.per_lattice, record)
        return legal_log_softmax(batch, route.states, logits)

    def advance(self, batch: LatticeBatch, context: Encoded, walk: Walk, choice: Tensor) -> Walk:
        moved = self.moved(batch, walk, choice)
        h, values = walk.hidden
        moved.hidden = (self.prefix.advance(batch, walk, moved, h), values)
        return moved
