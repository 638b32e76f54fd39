"""Dropout masks of 8 bits per unit against ordinary dropout, and one mask per walker."""

import math

import pytest
import torch

from nfst.models.samplers.dropout import WalkDropout, dropout_mask, kept_of_256
from nfst.models.samplers.record import WalkRecord


def within(observed: float, expected: float, variance: float, n: int) -> bool:
    """``observed``, a mean of n draws of variance ``variance``, within 5 standard errors."""
    return abs(observed - expected) <= 5 * math.sqrt(variance / n)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.85])
def test_masks_are_ordinary_inverted_dropout_with_p_rounded_to_one_256th(p):
    """What torch.nn.functional.dropout does, with the keep probability rounded to a multiple
    of 1/256: a unit is kept with probability q = kept_of_256(p) / 256 (within 1/512 of 1 − p)
    and then scaled by 1 / q, so the mask's mean is 1; the keep rate of 2^20 units, of each of
    the 8 units that share one 64-bit draw, and of pairs of neighbours (q²) within 5 standard
    errors; and torch's own dropout kept units at a rate within 1/512 (+ 5 s.e.) of ours."""
    torch.manual_seed(0)
    n = 2**20
    keep = kept_of_256(p)
    q = keep / 256
    assert abs(q - (1 - p)) <= 1 / 512
    mask = dropout_mask(torch.empty(0, dtype=torch.float64), (n,), keep)
    kept = mask > 0
    assert mask.dtype == torch.float64
    assert torch.equal(mask[kept], torch.full((int(kept.sum()),), 1 / q, dtype=torch.float64))
    assert within(kept.double().mean().item(), q, q * (1 - q), n)
    assert within(mask.mean().item(), 1.0, 1 / q - 1, n)
    for position in range(8):  # the 8 bytes of each int64 draw
        assert within(kept[position::8].double().mean().item(), q, q * (1 - q), n // 8), position
    pairs = (kept[0::2] & kept[1::2]).double().mean().item()
    assert within(pairs, q * q, q * q * (1 - q * q), n // 2)
    ordinary = torch.nn.functional.dropout(torch.ones(n, dtype=torch.float64), p)
    assert within(ordinary.mean().item(), 1.0, 1 / (1 - p) - 1, n)
    rate = (ordinary > 0).double().mean().item()
    assert abs(rate - kept.double().mean().item()) <= 1 / 512 + 5 * math.sqrt(2 * q * (1 - q) / n)


def test_walk_dropout_keeps_one_mask_per_walker_for_the_whole_walk():
    """With a record, every step and every position of a known path sees the walker's
    mask, which walker_mask hands out; without, each call draws a fresh one."""
    torch.manual_seed(0)
    drop = WalkDropout(0.3).train()
    N, T, w = 64, 5, 32
    ones = torch.ones(N, w)
    record = WalkRecord(N)
    first = drop(ones, record)
    assert torch.equal(drop(2 * ones, record), 2 * first)  # the next step: the same units
    assert torch.equal(drop(torch.ones(N, T, w), record), first[:, None].expand(N, T, w))
    assert torch.equal(drop.walker_mask(ones, N, record), first)
    assert torch.equal(drop(ones[[3, 1]], record, walkers=torch.tensor([3, 1])), first[[3, 1]])
    assert not torch.equal(drop(ones), drop(ones))  # without a record: plain dropout
    assert not torch.equal(drop(ones, WalkRecord(N)), first)  # a new walk, a new mask
    assert torch.equal(drop.eval()(ones, record), ones)
