"""SWS, the sampler with state tracking (003 §3.2):

    q_φ(ω_t | ω_{<t}, T_{x,y}) ∝ exp(W[1; h_{t-1}; enc_x(x_{≥i}); enc_y(y_{≥j})])      (003:4)

h_{t-1} is a GRU over the mark prefix; enc_x and enc_y are separate right-to-left GRUs, read at
the current lattice state's positions (i, j) = the prefix lengths of x and y already aligned
(``batch.positions``), so they encode exactly the unaligned suffixes. The three sources add
independent terms to the logits (no interaction layer), as in the paper. ``prepare`` encodes
every suffix of every string once; each step reads the walkers' rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch
from torch import Tensor, nn

from ...dp.batch import LatticeBatch
from .base import Sampler, SamplerConfig, Walk
from .prefix import PrefixGRU
from .forcing import Route, WalkDropout


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

    def __init__(self, vocab_size: int, config: Optional[SamplerConfig] = None,
                 symbols: Sequence[str] = ()):
        super().__init__(vocab_size, config, symbols)
        d, p = self.config.d, self.config.dropout
        self.prefix = PrefixGRU(vocab_size, d, p)
        self.symbol_embed = nn.Embedding(self.num_symbol_ids, d, padding_idx=0)
        self.enc_x = SuffixEncoder(self.symbol_embed, d, p)
        self.enc_y = SuffixEncoder(self.symbol_embed, d, p)
        self.drop_h, self.drop_suffix = WalkDropout(p), WalkDropout(p)
        self.out_h = nn.Linear(d, vocab_size + 1)  # W's blocks; marks, then STOP
        self.out_suffix = nn.Linear(2 * d, vocab_size + 1, bias=False)

    def prepare(self, batch: LatticeBatch) -> Suffixes:
        xs, lx = self.symbol_ids([lat.x for lat in batch.lattices], batch.device)
        ys, ly = self.symbol_ids([lat.y for lat in batch.lattices], batch.device)
        return Suffixes(self.enc_x.encode(xs, lx), self.enc_y.encode(ys, ly))

    def start(self, batch: LatticeBatch, context: Suffixes, lattice: Tensor) -> Walk:
        return self.initial_walk(batch, lattice, self.prefix.step(torch.full_like(lattice, self.bos)))

    def mark_logits(self, batch: LatticeBatch, context: Suffixes, walk: Walk) -> Tensor:
        """(N, vocab_size + 1): W[1; h_{t-1}; enc_x(x_{≥i}); enc_y(y_{≥j})] for every mark
        and STOP (003:4), before restricting to the legal choices."""
        return self.logits_at(batch, context, walk.lattice, walk.state, walk.hidden)

    def logits_at(self, batch: LatticeBatch, context: Suffixes, lattice: Tensor, states: Tensor,
                  h: Tensor) -> Tensor:
        """:meth:`mark_logits` for states (N,) or (N, T) and prefix states h (..., d)."""
        i, j = batch.positions[states].unbind(-1)
        if states.dim() == 2:
            lattice = lattice[:, None]
        suffix = torch.cat([context.x[lattice, i], context.y[lattice, j]], dim=-1)
        return self.out_h(self.drop_h(h)) + self.out_suffix(self.drop_suffix(suffix))

    def log_probs(self, batch: LatticeBatch, context: Suffixes, walk: Walk) -> Tensor:
        return self.legal_log_probs(batch, walk, self.mark_logits(batch, context, walk))

    def path_log_probs(self, batch: LatticeBatch, context: Suffixes, route: Route) -> Tensor:
        h = self.prefix.run(route, self.bos)
        logits = self.logits_at(batch, context, route.lattice, route.states, h)
        return self.legal_log_softmax(batch, route.states, logits)

    def advance(self, batch: LatticeBatch, context: Suffixes, walk: Walk, choice: Tensor) -> Walk:
        moved = self.moved(batch, walk, choice)
        moved.hidden = self.prefix.advance(walk, moved)
        return moved
