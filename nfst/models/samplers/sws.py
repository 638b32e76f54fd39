"""SWS, the sampler with state tracking (003 §3.2):

    q_φ(ω_t | ω_{<t}, T_{x,y}) ∝ exp(W[1; h_{t-1}; enc_x(x_{≥i}); enc_y(y_{≥j})])      (003:4)

h_{t-1} is a GRU over the mark prefix; enc_x and enc_y are separate right-to-left GRUs, read at
the current lattice state's positions (i, j) = the prefix lengths of x and y already aligned
(``batch.positions``), so they encode exactly the unaligned suffixes. The three sources add
independent terms to the logits (no interaction layer), as in the paper. ``prepare`` encodes
every suffix of every string once; a walk projects them to logits once (``suffix_logits``) and
each step reads the walkers' rows.
"""

from __future__ import annotations

from dataclasses import dataclass
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
from .route import Route, Rows
from .symbols import Vocabulary
from .walk import Walk


@dataclass
class Suffixes:
    x: Tensor
    """(B, |x|max + 1, d): row i encodes x[i:] (see SuffixEncoder)."""
    y: Tensor
    """(B, |y|max + 1, d): row j encodes y[j:]."""


class SuffixEncoder(nn.Module):
    """A right-to-left GRU: ``encode`` returns (B, L + 1, d) with row i the encoding of the
    suffix s[i:] of each string (row |s| and beyond: the empty suffix, h_0 = 0)."""

    def __init__(self, embed: nn.Embedding, d: int, dropout: float):
        super().__init__()
        self.embed = embed
        self.gru = nn.GRU(embed.embedding_dim, d, batch_first=True)
        self.drop = nn.Dropout(dropout)

    def encode(self, ids: Tensor, lengths: list[int]) -> Tensor:
        B, L = ids.shape
        length = torch.tensor(lengths, device=ids.device)
        r = torch.arange(L, device=ids.device)
        # Reverse each string in place; padding then comes after the real symbols, so no
        # output at a real position ever reads padding.
        rev = ids.gather(1, (length[:, None] - 1 - r).clamp(min=0))
        out, _ = self.gru(self.drop(self.embed(rev)))  # out[:, r] encodes s[len - 1 - r:]
        out = torch.cat([out, torch.zeros_like(out[:, :1])], dim=1)  # (B, L + 1, d)
        i = torch.arange(L + 1, device=ids.device)
        back = torch.where(i < length[:, None], length[:, None] - 1 - i, torch.full_like(i, L))
        return out.gather(1, back[..., None].expand(-1, -1, out.shape[2]))


class SWS(Sampler):
    name = "sws"
    reads_symbols = True

    def __init__(self, vocabulary: Vocabulary, config: Optional[SamplerConfig] = None):
        super().__init__(vocabulary, config)
        d, p = self.config.d, self.config.dropout
        self.prefix = PrefixGRU(self.vocab_size, d, p)
        self.symbol_embed = nn.Embedding(self.vocabulary.num_symbol_ids, d, padding_idx=0)
        self.enc_x = SuffixEncoder(self.symbol_embed, d, p)
        self.enc_y = SuffixEncoder(self.symbol_embed, d, p)
        self.drop_h, self.drop_x, self.drop_y = WalkDropout(p), WalkDropout(p), WalkDropout(p)
        self.out_h = nn.Linear(d, self.vocab_size + 1)  # W's blocks; marks, then STOP
        self.out_suffix = nn.Linear(2 * d, self.vocab_size + 1, bias=False)

    def prepare(self, batch: LatticeBatch) -> Suffixes:
        xs, lx = self.vocabulary.symbol_ids([lat.x for lat in batch.lattices], batch.device)
        ys, ly = self.vocabulary.symbol_ids([lat.y for lat in batch.lattices], batch.device)
        return Suffixes(self.enc_x.encode(xs, lx), self.enc_y.encode(ys, ly))

    def start(
        self,
        batch: LatticeBatch,
        context: Suffixes,
        lattice: Tensor,
        record: Optional[WalkRecord] = None,
    ) -> Walk:
        h = self.prefix.step(torch.full_like(lattice, self.bos), record=record)
        return self.initial_walk(
            batch, lattice, (h,) + self.suffix_logits(context, lattice, record), record
        )

    def suffix_logits(
        self, context: Suffixes, lattice: Tensor, record: Optional[WalkRecord]
    ) -> tuple[Tensor, Tensor]:
        """W_x enc_x(x_{≥i}) for every i (N, |x|max + 1, V + 1) and W_y enc_y(y_{≥j}) for
        every j, W_x and W_y the suffixes' blocks of W, with each walker's dropout: formed
        once per walk (the mask is the walker's at every step), each step reads a row."""
        d, w = self.config.d, self.out_suffix.weight
        return (
            nn.functional.linear(self.drop_x(context.x[lattice], record), w[:, :d]),
            nn.functional.linear(self.drop_y(context.y[lattice], record), w[:, d:]),
        )

    def mark_logits(self, batch: LatticeBatch, walk: Walk, rows: Optional[Tensor] = None) -> Tensor:
        """(N, vocab_size + 1): W[1; h_{t-1}; enc_x(x_{≥i}); enc_y(y_{≥j})] for every mark
        and STOP (003:4), before restricting to the legal choices; with ``rows`` (n,), just
        those walkers' (n, vocab_size + 1)."""
        h, x, y = walk.hidden
        if rows is None:
            return self.logits_at(batch, walk.state, h, x, y, walk.record)
        return self.logits_at(batch, walk.state[rows], h[rows], x, y, walk.record, rows)

    def path_logits(
        self,
        batch: LatticeBatch,
        context: Suffixes,
        route: Route,
        record: Optional[WalkRecord] = None,
    ) -> tuple[Tensor, Rows]:
        """:meth:`mark_logits` at the positions of known paths where the walker has a choice:
        (m, V + 1) at the Rows returned (elsewhere q is forced: ``choices.forced_log_probs``)."""
        h, rows = self.prefix.run_choosing(batch, route, self.bos, record)
        x, y = self.suffix_logits(context, route.lattice, record)
        return self.logits_at(batch, rows.at(route.states), h, x, y, record, rows.paths), rows

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
        """(n, V + 1) at states (n,) for prefix states h (n, d) and the suffix logits x, y
        (from :meth:`suffix_logits`) of ``walkers`` (n,) (default: row r is walker r)."""
        i, j = batch.positions[states].unbind(-1)
        r = torch.arange(len(states), device=states.device) if walkers is None else walkers
        return self.out_h(self.drop_h(h, record, walkers=walkers)) + x[r, i] + y[r, j]

    def log_probs(self, batch: LatticeBatch, context: Suffixes, walk: Walk) -> Tensor:
        rows = choosing(batch, walk)
        if rows is None:
            return legal_log_softmax(batch, walk.state, self.mark_logits(batch, walk))
        logits = self.mark_logits(batch, walk, rows)
        return with_forced(batch, walk, rows, legal_log_softmax(batch, walk.state[rows], logits))

    def path_log_probs(
        self,
        batch: LatticeBatch,
        context: Suffixes,
        route: Route,
        record: Optional[WalkRecord] = None,
    ) -> Tensor:
        logits, rows = self.path_logits(batch, context, route, record)
        lp = legal_log_softmax(batch, rows.at(route.states), logits)
        return rows.place(lp, forced_log_probs(batch, route.states, lp.dtype))

    def advance(self, batch: LatticeBatch, context: Suffixes, walk: Walk, choice: Tensor) -> Walk:
        moved = self.moved(batch, walk, choice)
        h, x, y = walk.hidden
        moved.hidden = (self.prefix.advance(batch, walk, moved, h), x, y)
        return moved
