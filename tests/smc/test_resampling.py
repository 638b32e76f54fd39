import math

import pytest
import torch

from nfst.smc.resampling import RESAMPLERS, ess, get_resampler, log_mean_exp, normalise

SCHEMES = sorted(RESAMPLERS)


def weight_rows(seed: int, rows: int = 6, M: int = 16) -> torch.Tensor:
    """Log weights of varied shapes: flat, skewed, one dominant, some exactly zero."""
    g = torch.Generator().manual_seed(seed)
    lw = (
        torch.randn(rows, M, generator=g, dtype=torch.float64)
        * torch.linspace(0.1, 4, rows)[:, None]
    )
    lw[-1, M // 2 :] = float("-inf")
    return lw


def offspring(ancestors: torch.Tensor, M: int) -> torch.Tensor:
    return torch.zeros(ancestors.shape[0], M, dtype=torch.float64).scatter_add_(
        1, ancestors, torch.ones_like(ancestors, dtype=torch.float64)
    )


def test_all_four_schemes_are_registered():
    assert set(SCHEMES) == {"multinomial", "systematic", "stratified", "residual"}
    with pytest.raises(ValueError, match="known: multinomial"):
        get_resampler("nope")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_expected_offspring_is_M_times_weight(scheme):
    """(iii) Mean offspring count over R draws is M·w̄ within 4.5 standard errors. The
    per-draw variance of a count is at most M w̄ (1 − w̄) (multinomial, the worst scheme)."""
    M, R = 16, 4000
    lw = weight_rows(0, M=M)
    g = torch.Generator().manual_seed(1)
    anc = get_resampler(scheme)(lw.repeat(R, 1), g)
    assert anc.shape == (R * len(lw), M) and anc.dtype == torch.long
    mean = offspring(anc, M).view(R, len(lw), M).mean(0)
    w = normalise(lw)
    expected = M * w
    se = torch.sqrt(M * w * (1 - w) / R)
    assert (mean - expected).abs().le(4.5 * se + 1e-12).all(), (mean - expected).abs().max()
    # impossible particles are never copied
    assert mean[-1, M // 2 :].eq(0).all()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_ancestors_are_sorted_valid_indices(scheme):
    lw = weight_rows(2)
    anc = get_resampler(scheme)(lw, torch.Generator().manual_seed(0))
    assert (anc >= 0).all() and (anc < lw.shape[1]).all()
    assert (anc[:, 1:] >= anc[:, :-1]).all()


def test_low_variance_schemes_keep_floor_of_expected_counts():
    """Systematic gives ⌊Mw̄⌋ or ⌈Mw̄⌉ copies; residual and stratified at least ⌊Mw̄⌋ − 1 and
    residual exactly at least ⌊Mw̄⌋."""
    M = 16
    lw = weight_rows(3, rows=50, M=M)
    target = M * normalise(lw)
    g = torch.Generator().manual_seed(0)
    sys_counts = offspring(get_resampler("systematic")(lw, g), M)
    assert (sys_counts >= target.floor() - 1e-9).all() and (
        sys_counts <= target.ceil() + 1e-9
    ).all()
    res_counts = offspring(get_resampler("residual")(lw, g), M)
    assert (res_counts >= target.floor()).all()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_all_impossible_row_resamples_uniformly(scheme):
    lw = torch.full((2, 8), float("-inf"), dtype=torch.float64)
    anc = get_resampler(scheme)(lw, torch.Generator().manual_seed(0))
    assert (anc >= 0).all() and (anc < 8).all()


def test_ess_and_log_mean_exp():
    M = 10
    flat = torch.zeros(1, M, dtype=torch.float64)
    one = torch.full((1, M), float("-inf"), dtype=torch.float64)
    one[0, 3] = 5.0
    assert ess(flat).item() == pytest.approx(M)
    assert ess(one).item() == pytest.approx(1.0)
    assert ess(torch.full((1, M), float("-inf"))).item() == 0.0
    w = torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    assert ess(w.log()).item() == pytest.approx(16 / 10)
    assert log_mean_exp(w.log()).item() == pytest.approx(math.log(2.0))
    # invariant to a common shift of the log weights
    lw = weight_rows(4)[:-1]
    assert torch.allclose(ess(lw), ess(lw + 100.0))


SIZES = (1, 2, 3, 7, 49, 98, 100)


def equal_and_skewed(M: int) -> torch.Tensor:
    """(3, M) float64 log weights: equal (every M·w̄ is 1 up to rounding, often just below it),
    geometric (w̄_m ∝ 0.7^m) and one particle holding half the mass."""
    m = torch.arange(M, dtype=torch.float64)
    half = torch.zeros(M, dtype=torch.float64)
    half[M // 2] = math.log(max(M - 1, 1))
    return torch.stack([torch.zeros(M, dtype=torch.float64), m * math.log(0.7), half])


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("M", SIZES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_offspring_counts_sum_to_M_with_ancestors_in_range(scheme, M, dtype):
    """Whatever M and the weights, every row gets exactly M valid, sorted ancestors. Equal
    weights at M = 49 or 98 put every M·w̄ just below 1, where residual resampling used to
    draw one slot too few and return ancestor M (one past the end)."""
    lw = equal_and_skewed(M).to(dtype).repeat(50, 1)
    anc = get_resampler(scheme)(lw, torch.Generator().manual_seed(M))
    assert anc.shape == lw.shape and anc.dtype == torch.long
    assert int(anc.min()) >= 0 and int(anc.max()) < M
    assert (anc[:, 1:] >= anc[:, :-1]).all()
    assert offspring(anc, M).sum(1).eq(M).all()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("M", (2, 49, 98))
def test_expected_offspring_is_unbiased_at_many_sizes(scheme, M):
    """Mean offspring over R draws is M·w̄ within 5 standard errors, per particle, for equal
    and skewed weights (per-draw variance ≤ M w̄ (1 − w̄), the multinomial's), plus 3/R: a
    particle of weight ~1e-7 that happens to be copied once is off by 1/R, where the normal
    approximation behind the standard error does not hold."""
    R = 2000
    lw = equal_and_skewed(M)
    anc = get_resampler(scheme)(lw.repeat(R, 1), torch.Generator().manual_seed(7))
    mean = offspring(anc, M).view(R, len(lw), M).mean(0)
    w = normalise(lw)
    se = torch.sqrt(M * w * (1 - w) / R)
    assert (mean - M * w).abs().le(5 * se + 3 / R).all(), (mean - M * w).abs().max()
