import math

import torch

from nfst.models.samplers.forcing import WalkDropout, kept_of_256, one_walk


def test_walk_dropout_keeps_one_mask_per_walker_for_the_whole_walk():
    """Inside one_walk, every step and every position of a known path sees the walker's
    mask, which walker_mask hands out; outside, each call draws a fresh one."""
    torch.manual_seed(0)
    drop = WalkDropout(0.3).train()
    N, T, w = 64, 5, 32
    ones = torch.ones(N, w)
    with one_walk(drop, N):
        first = drop(ones)
        assert torch.equal(drop(2 * ones), 2 * first)  # the next step: the same units
        assert torch.equal(drop(torch.ones(N, T, w)), first[:, None].expand(N, T, w))
        assert torch.equal(drop.walker_mask(ones, N), first)
    kept = (first > 0).float().mean().item()
    p_keep = kept_of_256(0.3) / 256
    assert abs(kept - p_keep) < 4 * math.sqrt(p_keep * (1 - p_keep) / first.numel())
    assert torch.allclose(first[first > 0], torch.tensor(256 / kept_of_256(0.3)))
    assert not torch.equal(drop(ones), drop(ones))  # outside: plain dropout
    with one_walk(drop, N):
        assert not torch.equal(drop(ones), first)  # a new walk, a new mask
    assert torch.equal(drop.eval()(ones), ones)
