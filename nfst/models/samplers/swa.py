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
from .base import Sampler
from .choices import forced_log_probs, legal_log_softmax
from .config import SamplerConfig
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
        self.drop_h, self.drop_att = (
            WalkDropout(self.config.dropout),
            WalkDropout(self.config.dropout),
        )
        self.out = nn.Linear(2 * d, self.vocab_size + 1)  # W = [W_h W_a]; marks, then STOP

    def prepare(self, batch: LatticeBatch) -> Encoded:
        strings = [tuple(lat.x) + (SEPARATOR,) + tuple(reversed(lat.y)) for lat in batch.lattices]
        ids, lengths = self.vocabulary.symbol_ids(strings, batch.device)
        packed = pack_padded_sequence(
            self.drop(self.symbol_embed(ids)),
            torch.tensor(lengths),
            batch_first=True,
            enforce_sorted=False,
        )
        enc, _ = pad_packed_sequence(
            self.encoder(packed)[0], batch_first=True, total_length=ids.shape[1]
        )
        return Encoded(enc, ids == 0)

    def start(
        self,
        batch: LatticeBatch,
        context: Encoded,
        lattice: Tensor,
        record: Optional[WalkRecord] = None,
    ) -> Walk:
        h = self.prefix.step(torch.full_like(lattice, self.bos), record=record)
        mask = self.drop_att.walker_mask(context.enc, len(lattice), record)
        return self.initial_walk(batch, lattice, (h, mask), record)

    def logits(
        self,
        context: Encoded,
        lattice: Tensor,
        h: Tensor,
        mask: Optional[Tensor],
        record: Optional[WalkRecord],
        walkers: Optional[Tensor] = None,
        per_lattice: Optional[int] = None,
        static: bool = False,
    ) -> Tensor:
        """(n, V + 1): W[1; h; Att(h, enc)] (003:2–3) for prefix states h (n, d) of walkers on
        ``lattice`` (n,), with the attention's dropout ``mask`` (N, d) of each walker (None:
        none) on Att(h, enc): as it is the walker's at every step, it drops the same units of
        every enc_i. ``walkers`` (n,): whose rows h holds (default: row r is walker r);
        ``per_lattice`` and ``static`` as in :meth:`attend`."""
        d = self.config.d
        attended = self.attend(context, lattice, h, per_lattice, static)
        if mask is not None:
            attended = attended * (mask if walkers is None else mask[walkers])
        own = nn.functional.linear(
            self.drop_h(h, record, walkers=walkers), self.out.weight[:, :d], self.out.bias
        )
        return torch.addmm(own, attended, self.out.weight[:, d:].T)

    @staticmethod
    def attend(
        context: Encoded,
        lattice: Tensor,
        h: Tensor,
        per_lattice: Optional[int] = None,
        static: bool = False,
    ) -> Tensor:
        """Att(h, enc) = Σ_i a_i enc_i, a = softmax_i(h · enc_i) over the row's lattice's
        encoding (003:3): (n, d) for h (n, d), rows on ``lattice`` (n,), in batched products
        per lattice: ``per_lattice`` k when the rows are lattice-major, k per lattice (their
        own layout); else the rows grouped by lattice, each group padded to the largest (one
        host sync), or with ``static`` (no sync allowed) each row's encoding gathered."""
        B, d = len(context.enc), h.shape[1]
        if static:
            enc = context.enc[lattice]  # (n, |enc|, d)
            scores = torch.bmm(enc, h[:, :, None])[..., 0].masked_fill(
                context.pad[lattice], float("-inf")
            )
            return torch.bmm(torch.softmax(scores, 1)[:, None], enc)[:, 0]
        if per_lattice is not None:
            return SWA._attend_groups(context, h.view(B, per_lattice, d)).view(len(h), d)
        order = torch.argsort(lattice, stable=True)
        counts = torch.bincount(lattice, minlength=B)
        grouped = lattice[order]
        slot = torch.arange(len(h), device=h.device) - (counts.cumsum(0) - counts)[grouped]
        queries = h.new_zeros(B, int(counts.max()) if len(h) else 0, d)
        queries = queries.index_put((grouped, slot), h[order])
        out = SWA._attend_groups(context, queries)[grouped, slot]
        return torch.empty_like(out).index_copy(0, order, out)

    @staticmethod
    def _attend_groups(context: Encoded, queries: Tensor) -> Tensor:
        """Att (B, m, d) of queries (B, m, d), row group b on lattice b."""
        scores = torch.bmm(queries, context.enc.transpose(1, 2))
        scores = scores.masked_fill(context.pad[:, None], float("-inf"))
        return torch.bmm(torch.softmax(scores, dim=2), context.enc)

    def log_probs(self, batch: LatticeBatch, context: Encoded, walk: Walk) -> Tensor:
        h, mask = walk.hidden
        B, N = len(context.enc), len(walk)
        lattice_major = (
            N % B == 0
            and not walk.static
            and torch.equal(
                walk.lattice, torch.arange(B, device=h.device).repeat_interleave(N // B)
            )
        )
        logits = self.logits(
            context,
            walk.lattice,
            h,
            mask,
            walk.record,
            per_lattice=N // B if lattice_major else None,
            static=walk.static,
        )
        return legal_log_softmax(batch, walk.state, logits)

    def path_log_probs(
        self,
        batch: LatticeBatch,
        context: Encoded,
        route: Route,
        record: Optional[WalkRecord] = None,
    ) -> Tensor:
        """At the positions with a choice only (elsewhere q is forced: see ``choices``)."""
        h, rows = self.prefix.run_choosing(batch, route, self.bos, record)  # (m, d)
        mask = self.drop_att.walker_mask(context.enc, len(route.lattice), record)
        logits = self.logits(context, route.lattice[rows.paths], h, mask, record, rows.paths)
        lp = legal_log_softmax(batch, rows.at(route.states), logits)
        return rows.place(lp, forced_log_probs(batch, route.states, lp.dtype))

    def advance(self, batch: LatticeBatch, context: Encoded, walk: Walk, choice: Tensor) -> Walk:
        moved = self.moved(batch, walk, choice)
        h, mask = walk.hidden
        moved.hidden = (self.prefix.advance(batch, walk, moved, h), mask)
        return moved
