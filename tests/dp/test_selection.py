"""The selection of one level's states (004 §3): a state's factor counts its draws, E[c] = 1,
and bad settings are refused. (Unbiasedness of whole passes: test_randomized.py.)"""

import math

import pytest
import torch

from nfst.dp.selection import LevelGroups, RDPConfig, select_level


def test_a_state_drawn_twice_counts_twice():
    """One level of 8 states (as wide as the cipher lattice's widest), K = K₂ = 4 draws with
    replacement from a skewed q, N copies: each state's factor is c = times / (K₂ q) with
    times its number of draws, some states are drawn twice or more, and E[c] = 1 for every
    state (within 4 standard errors of the N-copy mean, per state)."""
    n, k, copies = 8, 4, 20000
    g = torch.Generator().manual_seed(0)
    score = torch.randn(n, generator=g, dtype=torch.float64) * 1.5
    groups = LevelGroups(
        seg=torch.arange(copies).repeat_interleave(n),
        counts=torch.full((copies,), n),
        start=torch.arange(copies) * n,
        k=torch.full((copies,), k),
        k1=torch.zeros(copies, dtype=torch.long),
    )
    config = RDPConfig(budget=k, top_share=0.0, sampling="replacement")
    c = select_level(score.repeat(copies), groups, config, g).exp().view(copies, n)
    times = c * k * torch.softmax(score, 0)
    assert torch.allclose(times, times.round(), atol=1e-9)
    assert bool((times.round().sum(1) == k).all())
    assert int((times.round() >= 2).sum()) > copies // 10
    mean, se = c.mean(0), c.std(0) / math.sqrt(copies)
    assert bool(((mean - 1).abs() <= 4 * se).all()), (mean - 1) / se


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="proposal"):
        RDPConfig(proposal="oracle")
    with pytest.raises(ValueError, match="budget"):
        RDPConfig(budget=0)
