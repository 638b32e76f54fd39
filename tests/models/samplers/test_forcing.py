import math

import pytest
import torch

from nfst.models.samplers.forcing import (ReplayedLinear, WalkDropout, kept_of_256, one_walk,
                                         replay)


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


def test_replay_hands_out_a_recorded_walk_only_for_the_paths_it_walked():
    """A walk's record of 3, 2 and 1 rows fits scoring with those rows per step, and nothing
    else; an empty record is no record."""
    tape = [torch.zeros(3, 4), torch.zeros(2, 4), torch.zeros(1, 4)]
    assert replay(tape, [3, 2, 1]) == tape
    assert replay([], [3, 2, 1]) is None
    for running in ([3, 2], [3, 1, 1], [3, 2, 1, 1]):
        with pytest.raises(RuntimeError, match="not the paths being scored"):
            replay(tape, running)


def test_replayed_linear_has_a_linear_layers_gradients():
    """Its value is the recorded one; its gradients are nn.functional.linear's."""
    torch.manual_seed(0)
    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(3, dtype=torch.float64, requires_grad=True)
    out = torch.nn.functional.linear(x, weight, bias)
    steps = list(out.detach().split([3, 2, 1]))
    readout = torch.randn(6, 3, dtype=torch.float64)
    replayed = ReplayedLinear.apply(x, weight, bias, steps)
    torch.testing.assert_close(replayed, out, rtol=0, atol=0)
    got = torch.autograd.grad((replayed * readout).sum(), [x, weight, bias])
    expected = torch.autograd.grad((out * readout).sum(), [x, weight, bias])
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b)
