"""Counting scorer calls: one per next-mark distribution of a live prefix."""

import torch

from nfst.models.scorer_calls import CountingScorer
from nfst.smc.engine import SMCConfig, smc
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import noisy_sampler, repeated_paths
from tests.helpers.scorers import padded, random_scorer


def test_smc_costs_one_call_per_mark_and_one_for_eos_of_each_particle():
    """Without resampling each particle is live for |ω| + 1 steps, however long the others
    run; scoring the same paths whole costs the same."""
    batch = small_batch()
    counter = CountingScorer(random_scorer(len(batch.mark_vocab), seed=0, normalised=True))
    result = smc(
        batch,
        noisy_sampler(batch, seed=1),
        counter,
        None,
        SMCConfig(particles=8, resample_threshold=0.0),
        torch.Generator().manual_seed(0),
    )
    expected = int((result.lengths + 1).sum())
    assert counter.calls == expected
    counter.calls = 0
    B, M, L = result.marks.shape
    counter.log_prob(result.marks.view(B * M, L), result.lengths.view(-1))
    assert counter.calls == expected


class RowCounter(CountingScorer):
    """Also counts the prefixes that have read EOS, which CountingScorer leaves out."""

    rows = 0

    def next_log_probs(self, state):
        self.rows += len(state.live)
        return super().next_log_probs(state)


def test_prefix_tree_scoring_costs_one_call_per_distinct_prefix():
    strings = [[0, 1, 2], [0, 1, 3, 3], [], [0, 1, 2], [0, 1], [4]]
    prefixes = {tuple(s[:t]) for s in strings for t in range(len(s) + 1)}
    counter = RowCounter(random_scorer(5, seed=0, normalised=True))
    counter.log_prob_tree(*padded(strings))
    assert counter.calls == counter.rows == len(prefixes) == 7
    counter.calls = 0  # two lattices: their trees share nothing, not even the empty prefix
    counter.log_prob_tree(*padded(strings + strings), torch.tensor([5] * 6 + [2] * 6))
    assert counter.calls == 2 * len(prefixes)


class LogProbRows(CountingScorer):
    """Also counts the strings scored whole."""

    rows = 0

    def log_prob(self, marks, lengths):
        self.rows += len(marks)
        return super().log_prob(marks, lengths)


def test_sampled_paths_cost_one_scoring_per_distinct_path():
    batch = small_batch()
    paths = repeated_paths(batch)
    distinct = {tuple(m) for m in paths.marks.flatten(0, 1).tolist()}
    counter = LogProbRows(random_scorer(len(batch.mark_vocab), seed=0, normalised=True))
    counter.score_paths(paths)
    assert counter.rows == len(distinct) < paths.lengths.numel() // 4
    assert counter.calls == sum(sum(m >= 0 for m in s) + 1 for s in distinct)
