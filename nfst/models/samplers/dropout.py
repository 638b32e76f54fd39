"""Variational dropout: one mask per walker for a whole walk (Gal & Ghahramani, 2016), the
usual dropout of a recurrent net, where every step of a sequence sees the same units dropped.

Masks take 8 random bits per unit, so p is rounded to a multiple of 1/256 (:func:`kept_of_256`).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor, nn

from .record import WalkRecord


class WalkDropout(nn.Dropout):
    """Dropout on an activation computed once per walker and step, with one mask per walker.

    With a :class:`~.record.WalkRecord` of N walkers, the first call draws a mask (N, w)
    into the record and every call applies it: to (N, w) activations (one step of the walk), to
    (N, T, w) ones (every position of N known paths, so one-pass scoring sees the dropout the
    walk saw) or to rows of given walkers; :meth:`walker_mask` hands it out. Without a record
    it is plain (inverted) dropout. Either way p is rounded to a multiple of 1/256."""

    def forward(
        self, x: Tensor, record: Optional[WalkRecord] = None, walkers: Optional[Tensor] = None
    ) -> Tensor:
        """``walkers``: when x (n, w) holds rows of the walkers ``walkers`` (n,), each row
        takes its walker's mask."""
        if record is None:  # plain dropout
            keep = kept_of_256(self.p)
            return x if not self.training or keep == 256 else x * dropout_mask(x, x.shape, keep)
        mask = self.walker_mask(x, record.walkers, record)
        if mask is None:
            return x
        if walkers is not None:
            return x * mask[walkers]
        return x * (mask[:, None] if x.dim() == 3 else mask)

    def walker_mask(
        self, like: Tensor, walkers: int, record: Optional[WalkRecord] = None
    ) -> Optional[Tensor]:
        """Each walker's mask (walkers, w), w the last size of ``like``, or None when this
        dropout does nothing (evaluation, p = 0): the record's (drawn now if this is its first
        use; ``walkers`` is then the record's), or without one a fresh one."""
        keep = kept_of_256(self.p)
        if not self.training or keep == 256:
            return None

        def draw() -> Tensor:
            return dropout_mask(like, (walkers, like.shape[-1]), keep)

        return draw() if record is None else record.mask(self, draw)


def kept_of_256(p: float) -> int:
    """Dropout keeps a unit with probability (this) / 256: 1 - p rounded to a multiple of
    1/256 (at least 1/256)."""
    return max(1, round((1 - p) * 256))


def dropout_mask(like: Tensor, shape: tuple[int, ...], keep: int) -> Tensor:
    """An inverted-dropout mask of ``shape``, dtype and device of ``like``: 256 / keep with
    probability keep / 256, else 0. A unit takes 8 random bits (one int64 draw covers 8
    units), which on a CPU is 6× faster than a uniform float per unit. (A float mask, as
    multiplying by a bool one costs 2–3× more, forward and backward.)"""
    numel = math.prod(shape)
    bits = torch.empty((numel + 7) // 8, dtype=torch.int64, device=like.device)
    units = bits.random_(-(2**63), None).view(torch.uint8)[:numel].view(shape)
    return (units < keep).to(like.dtype).mul_(256 / keep)
