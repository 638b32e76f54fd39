"""Comparisons over training seeds and pairs (nfst.evaluate.paired_gaps), against the plain
formulas and by simulation."""

import math
import random

import pytest
import torch

from nfst.evaluate.metrics import mean_and_se
from nfst.evaluate.paired_gaps import (
    choose_reference,
    gap,
    mean_over_seeds_and_pairs,
    ordering,
    t_quantile,
    upper_bound,
)


def test_one_seed_is_the_paired_standard_error_over_pairs():
    a, b = [3.0, 5.0, 4.0, 9.0], [1.0, 4.0, 4.5, 6.0]
    assert gap([a], [b])["mean"] == pytest.approx(mean_and_se([x - y for x, y in zip(a, b)])[0])
    assert gap([a], [b])["se"] == pytest.approx(mean_and_se([x - y for x, y in zip(a, b)])[1])
    assert gap([a], [a]) == {
        "mean": 0.0,
        "se": 0.0,
        "df": math.inf,
        "se_seeds": 0.0,
        "se_pairs": 0.0,
        "se_res": 0.0,
    }
    assert gap([a], [b])["df"] == pytest.approx(3)  # one seed: P - 1


def test_the_seeds_term_is_the_standard_error_of_the_per_seed_means():
    values = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # seed means 2 and 5; pair means 2.5, 3.5, 4.5
    got = mean_over_seeds_and_pairs(values)
    assert got["mean"] == pytest.approx(3.5)
    assert got["se_seeds"] == pytest.approx(math.sqrt(4.5) / math.sqrt(2))
    assert got["se_pairs"] == pytest.approx(1.0 / math.sqrt(3))
    assert got["se_res"] == 0.0  # seed + pair: no interaction
    assert got["se"] == pytest.approx(math.hypot(got["se_seeds"], got["se_pairs"]))


def test_the_interaction_is_subtracted_once():
    """A 2 × 2 table by hand: m = 3; seed means 2.5, 3.5 (MS_seeds = 2 · 0.5 = 1); pair means
    2, 4 (MS_pairs = 2 · 2 = 4); residuals ±0.5 (MS_res = 4 · 0.25 = 1); SE² = (1 + 4 − 1) / 4."""
    got = mean_over_seeds_and_pairs([[1.0, 4.0], [3.0, 4.0]])
    assert got["mean"] == pytest.approx(3.0)
    assert (got["se_seeds"] ** 2, got["se_pairs"] ** 2, got["se_res"] ** 2) == pytest.approx(
        (0.25, 1.0, 0.25)
    )
    assert got["se"] == pytest.approx(1.0)


def test_where_the_interaction_dominates_the_standard_error_is_not_sqrt_2_too_wide():
    """v[s, p] = e_sp ~ N(0, 1), no seed or pair effect, S = 3, P = 50: Var m = 1/150, which
    the variance of m over 2,000 tables measures (relative sd √(2/2000) = 0.032; 0.13 is 4).
    Over them (an SE² varies by about its value here, MS_seeds having 2 degrees of freedom: the
    mean of 2,000 has a relative sd of about 0.023, so 0.1 is 4 of them) SE_seeds² + SE_pairs²,
    the interaction counted twice, averages 2 Var m: an SE √2 too wide; SE_seeds² + SE_pairs² −
    SE_res² averages Var m, unbiased; and SE², each variance component kept ≥ 0, 1.47 Var m
    (measured over 20,000 tables: the truncation's price at 3 seeds), never below SE_res²."""
    S, P, tables = 3, 50, 2000
    torch.manual_seed(0)
    got = [
        mean_over_seeds_and_pairs(torch.randn(S, P, dtype=torch.float64).tolist())
        for _ in range(tables)
    ]
    var = 1 / (S * P)

    def mean(f) -> float:
        return sum(f(g) for g in got) / tables / var

    assert mean(lambda g: g["mean"] ** 2) == pytest.approx(1, abs=0.13)
    assert mean(lambda g: g["se_seeds"] ** 2 + g["se_pairs"] ** 2) == pytest.approx(2, abs=0.2)
    assert mean(
        lambda g: g["se_seeds"] ** 2 + g["se_pairs"] ** 2 - g["se_res"] ** 2
    ) == pytest.approx(1, abs=0.1)
    assert mean(lambda g: g["se"] ** 2) == pytest.approx(1.47, abs=0.15)
    assert all(g["se"] >= g["se_res"] for g in got)


def test_a_negative_variance_component_counts_as_zero():
    """Seed and pair means that agree more closely than the values vary (MS_seeds = 0.125,
    MS_pairs = 0.46, MS_res = 5.1): the unbiased sum is negative, and SE is the interaction's
    share alone, SE_res, not 0 (which would claim an order for any gap)."""
    got = gap(
        [[11.0, 20.0, 32.0, 40.0], [11.0, 21.0, 30.0, 41.0]],
        [[10.0, 22.0, 30.0, 41.0], [12.0, 20.0, 31.0, 39.0]],
    )
    assert got["se_seeds"] ** 2 + got["se_pairs"] ** 2 < got["se_res"] ** 2
    assert got["se"] == got["se_res"] == pytest.approx(math.sqrt(5.125 / 8))


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
        a = [
            [pair[i] + seed + rng.gauss(0, 1) for i in range(P)]
            for seed in (rng.gauss(0, 1) for _ in range(S))
        ]
        b = [
            [pair[i] + seed + rng.gauss(0, 1) for i in range(P)]
            for seed in (rng.gauss(0, 1) for _ in range(S))
        ]
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


def test_by_default_an_order_needs_a_gap_of_two_standard_errors():
    """Differences −0.5, 0.5, 1.5, 2.5 (mean 1, SE 0.645: 1.55 SE) claim no order at the default
    z = 2 (which the summaries and the report rely on), but do at z = 1; 0, 1, 2, 3 (2.3 SE)
    do at the default."""
    zero = [[0.0] * 4]
    assert ordering({"a": zero, "b": [[-0.5, 0.5, 1.5, 2.5]]}) == "a ≈ b"
    assert ordering({"a": zero, "b": [[-0.5, 0.5, 1.5, 2.5]]}, z=1.0) == "a < b"
    assert ordering({"a": zero, "b": [[0.0, 1.0, 2.0, 3.0]]}) == "a < b"


@pytest.mark.parametrize(
    "p, df, table",
    [
        (0.95, 1, 6.3138),
        (0.95, 2, 2.9200),
        (0.95, 3, 2.3534),
        (0.95, 4, 2.1318),
        (0.95, 10, 1.8125),
        (0.95, 30, 1.6973),
        (0.975, 5, 2.5706),
        (0.99, 8, 2.8965),
        (0.95, math.inf, 1.6449),
        (0.05, 4, -2.1318),
    ],
)
def test_t_quantiles_are_the_tables(p, df, table):
    """Student's t quantiles as printed in the usual tables (4 decimals)."""
    assert t_quantile(p, df) == pytest.approx(table, abs=6e-5)


def test_t_quantiles_between_whole_degrees_of_freedom_lie_between_theirs():
    assert t_quantile(0.95, 2) < t_quantile(0.95, 1.7) < t_quantile(0.95, 1)
    with pytest.raises(ValueError):
        t_quantile(0.95, 0)


def _simulated(
    seeds: int, pairs: int, sd_seed: float, sd_pair: float, sd_res: float, rng: random.Random
) -> list[list[float]]:
    a = [rng.gauss(0, sd_seed) for _ in range(seeds)]
    b = [rng.gauss(0, sd_pair) for _ in range(pairs)]
    return [[a[s] + b[p] + rng.gauss(0, sd_res) for p in range(pairs)] for s in range(seeds)]


@pytest.mark.parametrize(
    "sd_seed, sd_pair, sd_res, df_range",
    [
        (1.0, 0.3, 0.3, (3, 6)),  # the seeds dominate: about S - 1 = 4
        (0.0, 1.0, 0.5, (80, 110)),  # the pairs dominate: about P - 1 = 99
    ],
)
def test_the_one_sided_bound_covers_95_percent_with_five_seeds(sd_seed, sd_pair, sd_res, df_range):
    """Simulated gaps (true mean 0), S = 5 seeds, P = 100 pairs: the bound mean + t_{0.95, ν}
    SE lies above 0 in 95% of 2,000 draws (binomial SE 0.5%; the Satterthwaite ν is an
    approximation, so ± 2.5%); where the seeds dominate, the normal quantile (ν = ∞) falls
    short. ν itself is near S - 1 where the seeds dominate, large where the pairs do."""
    rng, draws = random.Random(7), 2000
    covered, by_normal, dfs = 0, 0, []
    zero = [[0.0] * 100 for _ in range(5)]
    for _ in range(draws):
        bound = upper_bound(_simulated(5, 100, sd_seed, sd_pair, sd_res, rng), zero)
        covered += bound["upper"] > 0
        by_normal += bound["mean"] + 1.6449 * bound["se"] > 0
        dfs.append(bound["df"])
    assert abs(covered / draws - 0.95) < 0.025, covered / draws
    assert df_range[0] < sorted(dfs)[draws // 2] < df_range[1]
    if sd_seed:
        assert by_normal / draws < 0.92, by_normal / draws
