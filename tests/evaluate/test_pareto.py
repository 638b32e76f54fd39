"""The PSIS Pareto k̂: recovery of a known generalized Pareto shape, light and heavy weight tails,
repeated weights (identical paths), the sample-size-dependent threshold, and the handling of zero
weights, too few weights and a shift of the log weights."""

import math

import numpy as np
import pytest
import torch

from nfst.evaluate.pareto import (
    fit_generalized_pareto,
    nonzero_weights,
    pareto_k,
    pareto_summary,
    pareto_threshold,
)

NAN = float("nan")


def generalized_pareto(k: float, sigma: float, n: int, seed: int) -> np.ndarray:
    """n draws by inverse CDF: x = σ ((1 − u)^(−k) − 1) / k."""
    u = np.random.default_rng(seed).random(n)
    return sigma * ((1 - u) ** -k - 1) / k


@pytest.mark.parametrize("k", [-0.2, 0.2, 0.5, 0.9])
def test_fit_recovers_known_shape_and_scale(k):
    n, sigma = 2000, 2.0
    k_hat, sigma_hat = fit_generalized_pareto(generalized_pareto(k, sigma, n, seed=1))
    # Asymptotic sds: (1 + k)/√n for k̂ and σ √(2(1 + k)/n) for σ̂ (0.027..0.042 and 0.07..0.09
    # here; 200 seeds agree). 4 sd bounds them, and the shrinkage moves k̂ by ≤ 0.003.
    assert abs(k_hat - k) < 4 * (1 + k) / math.sqrt(n)
    assert abs(sigma_hat - sigma) < 4 * sigma * math.sqrt(2 * (1 + k) / n)


def test_fit_shrinks_toward_one_half():
    # At n = 10 the prior's 10 pseudo-observations pull k̂ halfway to 0.5: for k = -0.2 the mean
    # over 200 fits is near (k + 0.5)/2 = 0.15 (0.166 over 400 seeds, whose unshrunk fits
    # average -0.17); the sd of the mean is 0.19/√200 ≈ 0.013, so 0.1 is ≥ 6 sd of slack.
    k_hats = [
        fit_generalized_pareto(generalized_pareto(-0.2, 1.0, 10, seed))[0] for seed in range(200)
    ]
    assert abs(np.mean(k_hats) - 0.15) < 0.1


def test_fit_is_defined_where_the_grid_meets_theta_zero():
    # x = 0.2, 0.4, .., 1 (five evenly spaced, as a repeated weight gives): m = 32, x* = 0.2 and
    # θ_13 = 1 + (1 − √(32/12.5))/0.6 = 0, where −θ/k̂(θ) is 0/0; its limit is 1/mean x. The
    # fit is scale-free, so it equals that of 1..5, whose grid misses 0.
    k, sigma = fit_generalized_pareto(np.arange(1.0, 6.0) / 5)
    k_1, sigma_1 = fit_generalized_pareto(np.arange(1.0, 6.0))
    assert k == pytest.approx(k_1, abs=1e-9) and sigma == pytest.approx(sigma_1 / 5, rel=1e-9)


def test_fit_rejects_nonpositive_exceedances():
    with pytest.raises(ValueError):
        fit_generalized_pareto(np.array([1.0, 0.0, 2.0]))


def test_light_tail_is_below_one_half():
    # log w ~ N(0, 0.3): every moment is finite. Over 100 seeds k̂ stays below 0.25.
    log_w = np.random.default_rng(3).normal(0, 0.3, 4000)
    assert pareto_k(log_w) < 0.5


def test_heavy_tail_is_above_the_warning():
    # log w ~ N(0, 3): finite moments in theory, but at S = 4000 the tail behaves as infinite
    # variance; over 100 seeds k̂ stays above 0.75 (mean 1.0).
    log_w = np.random.default_rng(4).normal(0, 3, 4000)
    assert pareto_k(log_w) > pareto_threshold(4000) == 0.7


def test_minus_inf_weights_are_ignored():
    log_w = np.random.default_rng(5).normal(0, 1, 500)
    padded = np.concatenate([np.full(300, -np.inf), log_w, np.full(7, -np.inf)])
    assert pareto_k(padded) == pareto_k(log_w)


def test_log_weights_spanning_more_than_float64_are_fitted():
    """Log weights 1000, 800 and 254 × N(0, 1): as weights divided by the largest, all but two
    underflow to 0 (e^−745 is the smallest float64), and the fit used to raise; in logs it
    returns a finite k̂, far above the threshold (two weights e^200 and e^1000 times the
    rest), the same for any shift of the log weights, and the same as that of the tail's
    exceedances fitted as numbers where they fit in a float64 (e^−350 · the weights)."""
    log_w = np.r_[1000.0, 800.0, np.random.default_rng(7).normal(0, 1, 254)]
    k = pareto_k(log_w)
    assert math.isfinite(k) and k > pareto_threshold(256)
    assert pareto_k(log_w - 1000) == pytest.approx(k, abs=1e-9)
    assert pareto_k(log_w + 5000) == pytest.approx(k, abs=1e-9)
    top = np.sort(log_w)[-49:] - 350  # u and the M = 48 above it, as numbers: e^−350..e^650
    x = np.exp(top[1:]) - np.exp(top[0])
    assert np.isfinite(x).all() and (x > 0).all()
    assert k == pytest.approx(fit_generalized_pareto(x)[0], abs=1e-9)


def test_too_few_weights_give_nan():
    # A tail of M ≥ 5 needs S ≥ 21 nonzero weights.
    assert math.isnan(pareto_k(np.random.default_rng(6).normal(0, 1, 20)))
    assert not math.isnan(pareto_k(np.random.default_rng(6).normal(0, 1, 21)))
    # 20 finite weights among -inf ones are still too few.
    assert math.isnan(pareto_k(np.concatenate([np.arange(20.0), np.full(50, -np.inf)])))


def test_threshold_depends_on_the_sample_size():
    """min(1 − 1/log₁₀ S, 0.7) (Vehtari et al. 2024)."""
    assert pareto_threshold(256) == pytest.approx(0.5848, abs=1e-4)
    assert pareto_threshold(100) == pytest.approx(0.5)
    assert pareto_threshold(21) == pytest.approx(0.2437, abs=1e-4)
    assert pareto_threshold(2000) < 0.7 == pareto_threshold(2200) == pareto_threshold(10**6)


def test_repeated_weights_are_fitted_as_the_order_statistics_they_are():
    """S = 256, M = 48: the 49th largest weight is one of four copies of 1, so u = 1 and the
    two copies inside the tail do not exceed it; above it 2 (10 copies), 3 (19), 5 (15), 9 (1)
    and 17 (1): k̂ is the fit of the exceedances 1, 2, 4, 8, 16 with those multiplicities, the
    likelihood of the 46 values as they are with the prior weighed against Kish's n_eff."""
    w = np.concatenate(
        [
            np.linspace(0.01, 0.9, 206),
            np.ones(4),
            np.repeat([2.0, 3.0, 5.0, 9.0, 17.0], [10, 19, 15, 1, 1]),
        ]
    )
    rng = np.random.default_rng(13)
    k = pareto_k(np.log(rng.permutation(w)))
    counts = np.array([10, 19, 15, 1, 1])
    assert k == pytest.approx(fit_generalized_pareto([1.0, 2, 4, 8, 16], counts)[0], abs=1e-12)
    k_46, _ = fit_generalized_pareto(np.repeat([1.0, 2, 4, 8, 16], counts))
    n_eff = 46**2 / (counts**2).sum()
    assert (k * (n_eff + 10) - 5) / n_eff == pytest.approx((k_46 * 56 - 5) / 46, abs=1e-9)
    # Log weights within 1e-9 are one repeated weight.
    jitter = np.where(w == 3.0, rng.uniform(-1e-10, 1e-10, len(w)), 0.0)
    assert pareto_k(np.log(w) + jitter) == pytest.approx(k, abs=1e-8)


def test_a_tail_of_fewer_than_5_distinct_weights_is_not_diagnosable():
    """One path drawn every time, or the tail's weights above u fewer than 5 paths: nan,
    which the summary counts apart from pairs with too few weights; order does not matter."""
    assert math.isnan(pareto_k(np.zeros(256)))
    body = -2 - np.random.default_rng(11).random(200)  # all below −2
    assert math.isnan(pareto_k(np.concatenate([body, np.zeros(56)])))  # M = 48 copies and more
    # S = 250, M = 48: 10 copies of 0 over u = −1, whose other 38 copies in the tail do not
    # exceed it; it takes 5 distinct weights above u to fit.
    tied = np.concatenate([body, np.full(40, -1.0), np.zeros(10)])
    assert math.isnan(pareto_k(tied))
    assert math.isnan(pareto_k(np.r_[tied[3:], -0.5, -0.4, -0.3]))  # 4 distinct
    assert not math.isnan(pareto_k(np.r_[tied[4:], -0.5, -0.4, -0.3, -0.2]))  # 5
    rng = np.random.default_rng(12)
    for _ in range(20):
        log_w = np.repeat(rng.normal(0, 1, 6), rng.integers(4, 80, 6))
        k = pareto_k(log_w)
        assert k == pareto_k(rng.permutation(log_w)) or math.isnan(k)


def test_two_weights_above_many_copies_are_not_diagnosable():
    """254 copies of one weight and two larger ones (S = 256, M = 48): u is a copy, and the
    two are all that exceed it; a fit to them read 0.34, a shape from no tail."""
    assert math.isnan(pareto_k(np.r_[np.zeros(254), 1.0, 2.0]))


def gpd_repeated(k: float, a: float, S: int, rng) -> np.ndarray:
    """GPD(k, 1) values, each repeated a Zipf(a) number of times (P(c) ∝ c^−a), to S draws."""
    values = generalized_pareto(k, 1.0, S, int(rng.integers(2**32)))
    return np.repeat(values, np.minimum(rng.zipf(a, S), S))[:S]


@pytest.mark.parametrize("a", [1.5, 2.0, 3.0])
def test_repeated_draws_read_as_many_distinct_draws(a):
    """GPD(0.2) values repeated with Zipf(a) multiplicities to S = 256 (13, 69 and 189
    distinct values on average for a = 1.5, 2, 3; 3, 16 and 36 of them above u): over 400
    such samples the mean k̂ (of those with one: 69%, 9% and 0% have fewer than 5 distinct
    weights above u, not diagnosable) is within 0.1 of the mean k̂ of 400 samples of 256
    distinct GPD(0.2) draws, 0.27 (0.2 shrunk by the prior). Measured: 0.28, 0.30 and 0.28.
    The standard error of a difference of means is at most √(0.27²/123 + 0.15²/400) ≈ 0.025
    (the sds over the 123 fitted samples at a = 1.5 and the 400 distinct ones), so 0.1 is 4 SE.
    Spreading each tie over the gap below it read 0.44, 0.59 and 0.27 (sd 1.1, 1.0, 0.31)."""
    rng = np.random.default_rng(14)
    repeated = [pareto_k(np.log(gpd_repeated(0.2, a, 256, rng))) for _ in range(400)]
    distinct = [pareto_k(np.log(generalized_pareto(0.2, 1.0, 256, seed))) for seed in range(400)]
    assert abs(np.nanmean(repeated) - np.mean(distinct)) < 0.1


def test_summary_shares_are_over_all_pairs_and_it_counts_the_unfitted():
    """Each k̂ against the threshold at its own S; pairs without a k̂ counted apart, as too few
    weights (S < 21) or not diagnosable (a tail of one repeated weight)."""
    s = pareto_summary([0.2, NAN, 0.9, 0.6, NAN, 0.6], [256, 256, 256, 256, 20, 4000])
    assert s["pairs"] == 6 and s["fitted"] == 4 and s["max"] == 0.9
    assert s["too_few"] == 1 and s["not_diagnosable"] == 1
    assert s["over_threshold"] == pytest.approx(2 / 6)  # 0.6 > 0.585 at 256, not 0.7 at 4000
    assert s["mean"] == pytest.approx((0.2 + 0.9 + 0.6 + 0.6) / 4)
    assert s["thresholds"] == [[256, pareto_threshold(256)], [4000, 0.7]]
    empty = pareto_summary([NAN], [20])
    assert empty["mean"] is None and empty["fitted"] == 0 and empty["over_threshold"] == 0
    assert empty["thresholds"] == [] and empty["too_few"] == 1


def test_nonzero_weights_count_the_finite_log_weights():
    assert nonzero_weights(torch.tensor([0.0, -math.inf, 2.0])) == 2


@pytest.mark.parametrize(
    "seed,sd,S,reference",
    [
        (0, 0.3, 256, 0.098471),
        (1, 1.0, 50, 0.735666),
        (2, 2.0, 256, 0.910816),
        (3, 3.0, 4000, 0.992271),
        (4, 5.0, 1000, 1.501756),
    ],
)
def test_matches_an_independent_psis_implementation(seed, sd, S, reference):
    """k̂ of log w ~ N(0, sd²) equals what ArviZ 0.23.4's ``psislw`` reported for the same
    weights (recorded once; ArviZ is not a dependency), to its 6 printed digits."""
    log_w = np.random.default_rng(seed).normal(0, sd, S)
    assert pareto_k(log_w) == pytest.approx(reference, abs=2e-6)
