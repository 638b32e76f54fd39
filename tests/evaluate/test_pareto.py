"""The PSIS Pareto k̂: recovery of a known generalized Pareto shape, light and heavy weight tails,
repeated weights (identical paths), and the handling of zero weights, too few weights and a shift
of the log weights."""

import math

import numpy as np
import pytest
import torch

from nfst.evaluate.pareto import (PARETO_K_WARN, fit_generalized_pareto, pareto_k,
                                  pareto_summary, untied)


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
    k_hats = [fit_generalized_pareto(generalized_pareto(-0.2, 1.0, 10, seed))[0]
              for seed in range(200)]
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
    assert pareto_k(log_w) > PARETO_K_WARN


def test_minus_inf_weights_are_ignored():
    log_w = np.random.default_rng(5).normal(0, 1, 500)
    padded = np.concatenate([np.full(300, -np.inf), log_w, np.full(7, -np.inf)])
    assert pareto_k(padded) == pareto_k(log_w)


def test_too_few_weights_give_nan():
    # A tail of M ≥ 5 needs S ≥ 21 nonzero weights.
    assert math.isnan(pareto_k(np.random.default_rng(6).normal(0, 1, 20)))
    assert not math.isnan(pareto_k(np.random.default_rng(6).normal(0, 1, 21)))
    # 20 finite weights among -inf ones are still too few.
    assert math.isnan(pareto_k(np.concatenate([np.arange(20.0), np.full(50, -np.inf)])))


def test_untied_weights_are_the_weights_when_none_repeat():
    log_w = np.sort(np.random.default_rng(10).normal(0, 2, 300))
    assert np.array_equal(untied(log_w), np.exp(log_w - log_w[-1]))


def test_untied_spreads_each_repeated_weight_over_the_gap_below_it():
    # Weights 1, 2, 2, 2, 4 (over 4): the three 2s close the gap from 1 to 2 in thirds; a run at
    # the bottom spreads down to 0; log weights within 1e-9 are one run.
    assert untied(np.log([1, 2, 2, 2, 4.0])) == pytest.approx([1 / 4, 1 / 3, 5 / 12, 1 / 2, 1])
    assert untied(np.log([3, 3, 6.0])) == pytest.approx([1 / 4, 1 / 2, 1])
    near = np.log([1, 2, 2, 2, 4.0]) + np.array([0, 0, 1e-12, -1e-12, 0])
    assert untied(np.sort(near)) == pytest.approx(untied(np.log([1, 2, 2, 2, 4.0])))


def test_a_tail_of_one_repeated_weight_is_a_uniform_tail():
    """All 256 weights equal (one path drawn every time): a finite k̂, that of M = 48 evenly
    spaced exceedances, the GPD with k = −1 shrunk by the prior: bounded weights, k̂ < 0."""
    k = pareto_k(np.zeros(256))
    assert k == pytest.approx(fit_generalized_pareto(np.arange(1.0, 49.0))[0], abs=1e-12)
    assert -1 < k < 0
    # So is a tail whose 49 largest weights are one path's, over weights that vary.
    body = np.random.default_rng(11).normal(-3, 1, 200)
    assert pareto_k(np.concatenate([body, np.zeros(56)])) == pytest.approx(k, abs=1e-12)


def test_a_repeated_weight_that_closes_a_gap_reads_as_weights_across_it():
    """Weights 1..38 and the weight 48 drawn ten times (S = 256, M = 48, the 208 others far
    below): the ten copies are read as 39..48, so k̂ is that of 48 evenly spaced exceedances."""
    log_w = np.log(np.concatenate([np.full(208, 1e-3), np.arange(1.0, 39.0), np.full(10, 48.0)]))
    assert pareto_k(log_w) == pytest.approx(pareto_k(np.log(np.concatenate(
        [np.full(208, 1e-3), np.arange(1.0, 49.0)]))), abs=1e-12)


def test_repeated_weights_are_fitted_and_order_does_not_matter():
    """Tails of a few repeated weights, as a good sampler draws them, all get a k̂ (before, one
    with fewer than 5 distinct exceedances got nan), the same for any order of the weights."""
    rng = np.random.default_rng(12)
    for _ in range(20):
        log_w = np.repeat(rng.normal(0, 1, 6), rng.integers(4, 80, 6))
        k = pareto_k(log_w)
        assert math.isfinite(k) and pareto_k(rng.permutation(log_w)) == k
def test_nan_or_plus_inf_raise():
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError):
            pareto_k(np.array([0.0] * 20 + [bad]))


def test_invariant_to_a_shift_of_log_weights():
    log_w = np.random.default_rng(7).normal(0, 2, 1000)
    k = pareto_k(log_w)
    # +1000 would overflow exp without the shift by the maximum.
    for c in (-50.0, 3.7, 1000.0):
        assert pareto_k(log_w + c) == pytest.approx(k, abs=1e-9)


def test_tensor_input_matches_numpy():
    log_w = np.random.default_rng(8).normal(0, 1, 800)
    assert pareto_k(torch.tensor(log_w)) == pareto_k(log_w)


def test_summary_shares_are_over_all_pairs_and_it_counts_the_unfitted():
    s = pareto_summary([0.2, float("nan"), 0.9, 0.5])
    assert s["pairs"] == 4 and s["fitted"] == 3 and s["max"] == 0.9
    assert s["over_threshold"] == pytest.approx(1 / 4)
    assert s["mean"] == pytest.approx((0.2 + 0.9 + 0.5) / 3)
    empty = pareto_summary([float("nan")])
    assert empty["mean"] is None and empty["fitted"] == 0 and empty["over_threshold"] == 0


@pytest.mark.parametrize("seed,sd,S,reference", [
    (0, 0.3, 256, 0.098471), (1, 1.0, 50, 0.735666), (2, 2.0, 256, 0.910816),
    (3, 3.0, 4000, 0.992271), (4, 5.0, 1000, 1.501756)])
def test_matches_an_independent_psis_implementation(seed, sd, S, reference):
    """k̂ of log w ~ N(0, sd²) equals what ArviZ 0.23.4's ``psislw`` reported for the same
    weights (recorded once; ArviZ is not a dependency), to its 6 printed digits."""
    log_w = np.random.default_rng(seed).normal(0, sd, S)
    assert pareto_k(log_w) == pytest.approx(reference, abs=2e-6)
