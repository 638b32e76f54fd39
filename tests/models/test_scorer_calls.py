"""Counting scorer calls: one per next-mark distribution of a live prefix."""

import torch

from nfst.models.scorer_calls import CountingScorer
from nfst.smc.engine import SMCConfig, smc
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import noisy_sampler
from tests.helpers.scorers import random_scorer


def test_smc_costs_one_call_per_mark_and_one_for_eos_of_each_particle():
    """Without resampling each particle is live for |ω| + 1 steps, however long the others
    run; scoring the same paths whole costs the same."""
    batch = small_batch()
    counter = CountingScorer(random_scorer(len(batch.mark_vocab), seed=0, normalised=True))
    result = smc(batch, noisy_sampler(batch, seed=1), counter, None,
                 SMCConfig(particles=8, resample_threshold=0.0), torch.Generator().manual_seed(0))
    expected = int((result.lengths + 1).sum())
    assert counter.calls == expected
    counter.calls = 0
    B, M, L = result.marks.shape
    counter.log_prob(result.marks.view(B * M, L), result.lengths.view(-1))
    assert counter.calls == expected
