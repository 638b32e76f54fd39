"""The per-pair figures of SMC particles: duplicates merged before the KL and the ESS."""

import pytest
import torch

from nfst.evaluate.offset_kl import merge_duplicates
from nfst.smc.engine import Particles


def test_duplicates_are_merged_before_the_kl_and_the_ess():
    arcs = torch.tensor([[[0, 1, -1], [0, 1, -1], [2, -1, -1], [3, 4, 5]]])
    log_w = torch.log(torch.tensor([[1.0, 1.0, 2.0, 0.0]], dtype=torch.float64))
    p = Particles(
        arcs=arcs,
        marks=arcs,
        lengths=torch.tensor([[2, 2, 1, 3]]),
        log_p=torch.tensor([[-1.0, -1.0, -2.0, -3.0]], dtype=torch.float64),
        log_weights=log_w,
    )
    keys, w, log_p = merge_duplicates(p, 0)
    assert keys == [(0, 1), (2,)]  # the zero-weight particle is dropped
    assert w.tolist() == pytest.approx([0.5, 0.5]) and log_p.tolist() == [-1.0, -2.0]
    assert (w.sum() ** 2 / (w**2).sum()).item() == pytest.approx(2.0)
