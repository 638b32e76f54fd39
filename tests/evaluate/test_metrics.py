"""Per-pair metrics of weighted samples (nfst.evaluate.metrics)."""

import math

import torch

from nfst.evaluate.metrics import log_z_is


def test_log_z_standard_error_is_relative_to_the_mean_weight():
    """The delta-method SE of log Ẑ is sd(w) / (√k mean(w)), computed here on the weights
    themselves, whose mean is far from 1 (log w ~ N(5, 1)) and from their maximum; and it is the
    spread of log Ẑ over 2000 independent draws of k = 200 weights, to within 10%."""
    g = torch.Generator().manual_seed(0)
    log_w = 5 + torch.randn(2000, 200, dtype=torch.float64, generator=g)
    w = log_w[0].exp()
    value, se = log_z_is(log_w[0])
    assert math.isclose(value, math.log(float(w.mean())), rel_tol=1e-12)
    assert math.isclose(se, float(w.std() / (math.sqrt(200) * w.mean())), rel_tol=1e-9)
    values, ses = zip(*(log_z_is(row) for row in log_w))
    spread = float(torch.tensor(values).std())
    assert abs(sum(ses) / len(ses) / spread - 1) < 0.1, (sum(ses) / len(ses), spread)
