"""The scorer's training paths (nfst.train.scorer), against enumeration."""

import math

import torch

from nfst.dp.batch import LatticeBatch
from nfst.train.scorer import ScorerConfig, _StepLoss
from tests.helpers.lattices import del_ins_lattices
from tests.helpers.samplers import all_paths, exact_log_p, new_sampler
from tests.helpers.scorers import random_bigram


def test_the_mixture_proposals_log_r_is_the_mixture_density():
    """With proposal "mixture" and n-gram share 1/4 of K = 8, every path's log r is
    log (6/8 q_boot(z) + 2/8 p_ngram(z | x, y)): the posterior by enumeration of every path,
    the bootstrap sampler by its own score; not either component alone."""
    lats = del_ins_lattices()
    batch = LatticeBatch(lats)
    ngram = random_bigram(lats, seed=1)
    boot = new_sampler("swa", lats)
    step = _StepLoss(ngram, boot, ngram, ScorerConfig(K=8, proposal="mixture", ngram_share=0.25))
    arcs, log_q, log_r = step.propose(batch, torch.Generator().manual_seed(0))
    every, mask = all_paths(batch)
    with torch.no_grad():
        log_z = torch.logsumexp(exact_log_p(ngram, batch, every).masked_fill(~mask, -math.inf), 1)
        posterior = exact_log_p(ngram, batch, arcs) - log_z[:, None]
        boot_q = boot.score(batch, arcs)
    assert torch.allclose(log_q.detach(), boot_q, atol=1e-12)
    expected = torch.logaddexp(boot_q + math.log(6 / 8), posterior + math.log(2 / 8))
    assert torch.allclose(log_r, expected, rtol=0, atol=1e-9), log_r - expected
