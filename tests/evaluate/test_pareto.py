"""The PSIS Pareto k̂: recovery of a known generalized Pareto shape, light and heavy weight tails,
and the handling of zero weights, too few weights and a shift of the log weights."""

import math

import numpy as np
import pytest
import torch

from nfst.evaluate.pareto import PARETO_K_WARN, fit_generalized_pareto, pareto_k, pareto_summary


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
    assert math.isnan(pareto_k(np.random.default_rng(6).normal(0, 1, 9)))
    # 9 finite weights among -inf ones are still too few.
    assert math.isnan(pareto_k(np.concatenate([np.arange(9.0), np.full(50, -np.inf)])))
    # Many weights, but ties leave fewer than 5 distinct exceedances (repeated paths do this).
    assert math.isnan(pareto_k(np.repeat(np.arange(4.0), 100)))
    assert math.isnan(pareto_k(np.zeros(1000)))


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


def test_summary_counts_pairs_over_the_threshold_and_skips_nan():
    s = pareto_summary([0.2, float("nan"), 0.9, 0.5])
    assert s["pairs"] == 3 and s["max"] == 0.9 and s["over_threshold"] == pytest.approx(1 / 3)
    assert s["mean"] == pytest.approx((0.2 + 0.9 + 0.5) / 3)
    assert pareto_summary([float("nan")])["mean"] is None


@pytest.mark.parametrize("seed,sd,S,reference", [
    (0, 0.3, 256, 0.098471), (1, 1.0, 50, 0.735666), (2, 2.0, 256, 0.910816),
    (3, 3.0, 4000, 0.992271), (4, 5.0, 1000, 1.501756)])
def test_matches_an_independent_psis_implementation(seed, sd, S, reference):
    """k̂ of log w ~ N(0, sd²) equals what ArviZ 0.23.4's ``psislw`` reported for the same
    weights (recorded once; ArviZ is not a dependency), to its 6 printed digits."""
    log_w = np.random.default_rng(seed).normal(0, sd, S)
    assert pareto_k(log_w) == pytest.approx(reference, abs=2e-6)
