"""A walk's record: each walker's dropout masks, and the steps the one-pass scoring replays."""

import pytest
import torch

from nfst.models.samplers.record import ReplayedLinear, WalkRecord


def test_replay_hands_out_a_recorded_walk_only_for_the_paths_it_walked():
    """A walk's record of 3, 2 and 1 rows fits scoring with those rows per step, and nothing
    else; an empty record is no record."""
    site = torch.nn.Linear(1, 1)
    record = WalkRecord(3)
    assert record.replay(site, [3, 2, 1]) is None
    tape = [torch.zeros(3, 4), torch.zeros(2, 4), torch.zeros(1, 4)]
    for entry in tape:
        record.keep(site, entry)
    assert record.replay(site, [3, 2, 1]) == tape
    assert record.replay(torch.nn.Linear(1, 1), [3, 2, 1]) is None  # another module's
    for running in ([3, 2], [3, 1, 1], [3, 2, 1, 1]):
        with pytest.raises(RuntimeError, match="not the paths being scored"):
            record.replay(site, running)


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
