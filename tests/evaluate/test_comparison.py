"""Comparisons over training seeds and pairs (nfst.evaluate.comparison), against the plain
formulas and by simulation."""

import math
import random

import pytest
import torch

from nfst.evaluate.comparison import (choose_reference, gap, mean_over_seeds_and_pairs,
                                      ordering)
from nfst.evaluate.metrics import mean_and_se
from nfst.runtime.distributed import STREAMS, item_seed, stream_seed


def test_one_seed_is_the_paired_standard_error_over_pairs():
    a, b = [3.0, 5.0, 4.0, 9.0], [1.0, 4.0, 4.5, 6.0]
    assert gap([a], [b])["mean"] == pytest.approx(mean_and_se([x - y for x, y in zip(a, b)])[0])
    assert gap([a], [b])["se"] == pytest.approx(mean_and_se([x - y for x, y in zip(a, b)])[1])
    assert gap([a], [a]) == {"mean": 0.0, "se": 0.0, "se_pairs": 0.0, "se_seeds": 0.0}


def test_the_seeds_term_is_the_standard_error_of_the_per_seed_means():
    values = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # seed means 2 and 5; pair means 2.5, 3.5, 4.5
    got = mean_over_seeds_and_pairs(values)
    assert got["mean"] == pytest.approx(3.5)
    assert got["se_seeds"] == pytest.approx(math.sqrt(4.5) / math.sqrt(2))
    assert got["se_pairs"] == pytest.approx(1.0 / math.sqrt(3))
    assert got["se"] == pytest.approx(math.hypot(got["se_seeds"], got["se_pairs"]))


def test_the_standard_error_covers_the_spread_of_training_seeds():
    """Simulated: a sampler whose quality varies by training seed (sd 1 nat) beside a pair
    effect shared by every sampler, 3 seeds. The seeds term has 2 degrees of freedom, so ±2 SE
    covers the true gap (0) less often than a normal interval would: about 82% here (t with
    2 df), not 95%; over 400 repetitions (binomial sd 1.9%) at least 78%. The SE over pairs
    alone, blind to the seeds, covers far less."""
    rng = random.Random(0)
    S, P, covered, covered_pairs_only = 3, 50, 0, 0
    for _ in range(400):
        pair = [rng.gauss(0, 5) for _ in range(P)]
        a = [[pair[i] + seed + rng.gauss(0, 1) for i in range(P)]
             for seed in (rng.gauss(0, 1) for _ in range(S))]
        b = [[pair[i] + seed + rng.gauss(0, 1) for i in range(P)]
             for seed in (rng.gauss(0, 1) for _ in range(S))]
        g = gap(a, b)
        covered += abs(g["mean"]) <= 2 * g["se"]
        covered_pairs_only += abs(g["mean"]) <= 2 * g["se_pairs"]
    assert covered / 400 >= 0.78
    assert covered_pairs_only / 400 < 0.6


def test_the_reference_is_the_lowest_validation_partial_kl():
    assert choose_reference({"swa": 10.0, "swp": 8.5, "sws": 9.0}) == "swp"


def test_an_ordering_is_claimed_only_beyond_two_standard_errors():
    torch.manual_seed(0)
    pair = torch.randn(100) * 5
    a = [(pair + torch.randn(100) * 0.1).tolist()]
    near = [(pair + 0.01 + torch.randn(100) * 0.1).tolist()]  # 0.01 ± 0.014: no claim
    far = [(pair + 3 + torch.randn(100) * 0.1).tolist()]
    assert ordering({"far": far, "a": a, "near": near}) in ("a ≈ near < far", "near ≈ a < far")


def test_named_streams_never_meet_each_other_or_trainings_validation():
    """Training validates minibatch i with item_seed(seed, i); each named stream's minibatch j
    draws from item_seed(stream_seed(seed, name), j). None of them may coincide."""
    for seed in (0, 1, 12345):
        seen = {item_seed(seed, i) for i in range(2000)}
        for name in STREAMS:
            mine = {item_seed(stream_seed(seed, name), j) for j in range(2000)}
            assert not mine & seen
            seen |= mine
