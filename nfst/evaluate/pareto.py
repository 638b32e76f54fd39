"""The PSIS Pareto k̂ diagnostic: how heavy the right tail of importance weights is.

Vehtari, Simpson, Gelman, Yao and Gabry, "Pareto smoothed importance sampling" (JMLR, 2024). The
largest M of S importance weights w_s are taken to exceed a threshold u (the (M+1)-th largest
weight), and the exceedances x = w − u are fitted by a generalized Pareto distribution,

    F(x) = 1 − (1 + k x / σ)^(−1/k),    x > 0, σ > 0,

whose shape k says how many moments the weights have: E[w^r] is finite only for r < 1/k. The
fit is the empirical-Bayes estimate of Zhang and Stephens (2009): with θ = −k/σ, the profile
likelihood of θ (k maximised out, k̂(θ) = mean log(1 − θ x)) is averaged over a grid of θ
around the data, and k̂ = k̂(θ̂) at the posterior mean θ̂. PSIS then shrinks k̂ toward 0.5 by
a prior worth 10 observations, k ← (n k + 10 · 0.5) / (n + 10).

Repeated paths. A sampler over a finite set of paths draws some of them again, and their
weights repeat: the sample is discrete, and its empirical quantile function is flat across each
tie (Hyndman and Fan's type 4 too: ``[1, 2, 2, 2, 4]`` stays as it is). We fit the GPD to the
order statistics as they are, each copy one observation: the threshold u is the (M+1)-th
largest weight, as in PSIS; the exceedances are the weights strictly above it, each distinct
one with its multiplicity c_i (copies tied with u do not exceed it); and the fit is the
likelihood of that sample (:func:`fit_generalized_pareto` with ``counts``). Copies of one path
are one observation of the tail's shape counted c_i times, so the prior is weighed against the
fit's effective number of observations, Kish's n_eff = (Σ c_i)² / Σ c_i² (n without ties),
not against Σ c_i. Without ties this is PSIS's k̂ exactly. Simulated (GPD(k = 0.2) values
repeated with Zipf(a) multiplicities to S = 256, a = 1.5, 2, 3; tests/evaluate/test_pareto.py)
its mean reads 0.28–0.30 against 0.27 for 256 distinct draws; spreading each tie over the gap
below it, as this module did before, read 0.27–0.59, with up to four times the spread.
Where fewer than :data:`MIN_TAIL` (5) distinct weights exceed u (the tail is a few paths,
repeated: a collapsed sampler, resampled particles) the tail has no shape to fit: k̂ is nan,
"not diagnosable", which :func:`pareto_summary` counts apart from pairs with too few weights.
(A fit to two distinct exceedances, 254 copies of one weight below them, read 0.34: a number
from no tail.)

The fit runs on the exceedances' logs (:func:`_fit_log`), so that log weights spanning more
than float64's ~1,450 nats (which an evaluation's can: a few paths e^1000 times the others)
are fitted rather than underflowing to 0.

Reading k̂ (of the weights of one pair, or of any importance-sampling estimate from S draws;
Vehtari et al. 2024):

- k̂ < 0.5: the weights have a finite variance; the estimate and its stated SE can be trusted;
- 0.5 ≤ k̂ ≤ :func:`pareto_threshold` (S) = min(1 − 1/log₁₀ S, 0.7): the variance is infinite
  but the estimate still converges, slowly; trust it with more samples than the SE suggests;
- k̂ above the threshold (0.585 at S = 256, 0.7 from S = 2,155 on): the estimate is unreliable.
  S draws are too few for an error that shrinks at a useful rate; above 0.7 no practical S
  is enough. A few samples dominate it, and it can be far off while its stated SE is small,
  since the SE is computed from the same few weights.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
from torch import Tensor

PARETO_K_MAX = 0.7
"""The threshold's cap: above it no practical sample size makes an estimate reliable."""

MIN_TAIL = 5
"""The fewest tail weights a k̂ is fitted to (as PSIS): M ≥ 5 needs S ≥ 21 nonzero weights;
and the fewest distinct weights above the threshold (module docstring)."""

TIE = 1e-9
"""Log weights closer than this are one repeated weight (the same path, up to rounding)."""


def _float64(x: np.ndarray | Tensor) -> np.ndarray:
    if isinstance(x, Tensor):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64).ravel()


def pareto_threshold(s: int) -> float:
    """The k̂ above which an estimate from ``s`` draws is unreliable: min(1 − 1/log₁₀ S, 0.7)
    (Vehtari et al. 2024): 0.24 at S = 21 (the fewest a k̂ is fitted from), 0.585 at 256,
    0.7 from 2,155 on; −inf, its limit as S → 1, for S ≤ 1."""
    return min(1 - 1 / math.log10(s), PARETO_K_MAX) if s > 1 else -math.inf


def tail_size(s: int) -> int:
    """PSIS's tail length M = min(⌈0.2 S⌉, ⌈3 √S⌉) for S nonzero weights."""
    return min(math.ceil(0.2 * s), math.ceil(3 * math.sqrt(s)))


def nonzero_weights(log_w: np.ndarray | Tensor) -> int:
    """S: how many of the log weights ``log_w`` are finite (nonzero weights)."""
    return int(np.isfinite(_float64(log_w)).sum())


def fit_generalized_pareto(
    x: np.ndarray | Tensor, counts: Optional[np.ndarray] = None
) -> tuple[float, float]:
    """(k, σ) of a generalized Pareto fitted to the (n,) positive exceedances ``x``, each
    observed ``counts`` times ((n,) integers ≥ 1; once each by default), Σ counts ≥ 2.

    Zhang and Stephens (2009), as PSIS uses it, on the sample with each x_i repeated c_i times
    (N = Σ c_i values; the multiplicity-weighted likelihood). With x* the first quartile of that
    sample and m = 30 + ⌊√N⌋, the grid θ_j = 1/x_max + (1 − √(m / (j − ½))) / (3 x*),
    j = 1..m, lies below 1/x_max, so that every 1 − θ x > 0. At each θ_j,
    k̂(θ) = mean log(1 − θ x) and the profile log likelihood is N (log(−θ / k̂(θ)) − k̂(θ) − 1);
    its softmax over the grid weighs θ_j, θ̂ = Σ_j softmax_j θ_j, and k = k̂(θ̂), σ = −k / θ̂.
    k is then shrunk toward 0.5 by a prior worth 10 observations, (n_eff k + 5) / (n_eff + 10),
    against n_eff = (Σ c_i)² / Σ c_i² (Kish's effective sample size: n without repeats; module
    docstring); σ keeps the unshrunk k, as in PSIS. Heavier tails give larger k. The fit runs
    on log x (:func:`_fit_log`), so x may span any range.
    """
    x = _float64(x)
    if len(x) == 0 or x.min() <= 0:
        raise ValueError(
            f"need positive exceedances, got {len(x)} with minimum {x.min() if len(x) else None}"
        )
    k, log_sigma = _fit_log(np.log(x), counts)
    return k, math.exp(log_sigma)


def _fit_log(log_x: np.ndarray, counts: Optional[np.ndarray]) -> tuple[float, float]:
    """(k, log σ) of :func:`fit_generalized_pareto` from the exceedances' logs ``log_x``.

    Written with t = x / x_max ∈ (0, 1] and c_j = (√(m / (j − ½)) − 1) x_max / (3 x*) > 0,
    θ_j = (1 − c_j) / x_max and 1 − θ_j x = (1 − t) + c_j t, whose log is
    log(1 + (c_j − 1) t) = log1p(expm1(γ_j) t) for γ_j = log c_j near 0 (|γ_j| < 1, where
    the terms are small and need log1p), else logaddexp(log(1 − t), γ_j + log t), which
    neither overflows nor underflows where x spans more than the ~1,450 nats between the
    smallest and largest float64 (log weights 1000, 800 and 254 × N(0, 1) span ~1,000 nats
    above their threshold). −θ_j / k̂(θ_j) = (c_j − 1) / (x_max k̂(θ_j)), the same sign
    above and below, is taken in logs without the constant −log x_max (the softmax over the
    grid does not see it), with its limit 1 / mean t where c_j = 1 (θ_j = 0). θ̂ = (1 − ĉ) /
    x_max with ĉ = Σ_j softmax_j c_j, so k = mean log(1 + (ĉ − 1) t) and
    σ = k x_max / (ĉ − 1) (its limit mean x where ĉ = 1).
    """
    times = (
        np.ones(len(log_x), dtype=np.int64)
        if counts is None
        else np.asarray(counts, dtype=np.int64)
    )
    log_x = np.sort(np.repeat(np.asarray(log_x, dtype=np.float64), times))
    n = len(log_x)
    if n < 2 or not np.isfinite(log_x).all():
        raise ValueError(f"need at least 2 positive finite exceedances, got {n}")
    m = 30 + math.floor(math.sqrt(n))
    log_t = log_x - log_x[-1]  # (N,) ≤ 0
    log_first_quartile = log_x[math.floor(n / 4 + 0.5) - 1]
    rho = np.sqrt(m / (np.arange(1, m + 1) - 0.5)) - 1  # (m,) > 0
    gamma = np.log(rho) + log_x[-1] - log_first_quartile - math.log(3)  # (m,) log c_j
    log_mean_t = np.logaddexp.reduce(log_t) - math.log(n)

    def log_terms(g: np.ndarray) -> np.ndarray:
        """(G, N) log(1 + (e^g − 1) t) for log c values ``g`` (G,)."""
        near = np.abs(g) < 1
        out = np.empty((len(g), n))
        out[near] = np.log1p(np.expm1(g[near])[:, None] * np.exp(log_t))
        with np.errstate(divide="ignore"):  # log(1 − t) = −inf at t = 1
            log_rest = np.log(-np.expm1(log_t))
        out[~near] = np.logaddexp(log_rest, g[~near, None] + log_t)
        return out

    def log_abs_expm1(g: np.ndarray) -> np.ndarray:
        """log |e^g − 1|, −inf at g = 0."""
        with np.errstate(divide="ignore"):
            return np.maximum(g, 0) + np.log(-np.expm1(-np.abs(g)))

    k_theta = log_terms(gamma).mean(1)  # (m,)
    with np.errstate(divide="ignore", invalid="ignore"):  # −inf − (−inf) where θ_j = 0
        log_ratio = log_abs_expm1(gamma) - np.log(np.abs(k_theta))
    log_ratio = np.where(np.isfinite(log_ratio), log_ratio, -log_mean_t)
    profile = n * (log_ratio - k_theta - 1)
    log_c_hat = np.logaddexp.reduce(gamma + profile - np.logaddexp.reduce(profile))
    k = float(log_terms(np.array([log_c_hat]))[0].mean())
    log_gap = float(log_abs_expm1(np.array(log_c_hat)))  # log |ĉ − 1|
    if k != 0 and np.isfinite(log_gap):
        log_sigma = math.log(abs(k)) + float(log_x[-1]) - log_gap
    else:
        log_sigma = float(log_mean_t + log_x[-1])
    n_eff = times.sum() ** 2 / (times**2).sum()
    return (n_eff * k + 10 * 0.5) / (n_eff + 10), log_sigma


def pareto_k(log_w: np.ndarray | Tensor) -> float:
    """PSIS k̂ of the (S,) log importance weights ``log_w`` (module docstring), or nan.

    −inf entries (zero weights) are ignored; S counts the finite ones; nan or +inf raise. The
    tail is the M = :func:`tail_size` (S) largest weights and the threshold u the (M+1)-th
    largest; the weights strictly above u are fitted, each distinct one with its multiplicity
    (log weights within :data:`TIE` of the next smaller are one repeated weight). The fit
    takes the exceedances' logs, log(w − u) = log w + log(1 − u/w), never the weights
    themselves, so that log weights spanning any range (1000, 800 and 254 more near 0, which
    no float64 holds as weights) are fitted; k̂ is invariant to a shift of ``log_w``. nan
    when M < 5 (S < 21: too few to fit a tail) or when fewer than 5 distinct weights exceed u
    ("not diagnosable": the tail is a few paths, repeated).
    """
    log_w = _float64(log_w)
    if np.isnan(log_w).any() or np.isposinf(log_w).any():
        raise ValueError("log weights must be finite or -inf")
    log_w = np.sort(log_w[np.isfinite(log_w)])
    s = len(log_w)
    m = tail_size(s)
    if m < MIN_TAIL:
        return float("nan")
    run = np.cumsum(np.r_[True, np.diff(log_w) > TIE]) - 1  # (S,) each weight's repeated value
    top = np.flatnonzero(np.r_[run[1:] != run[:-1], True])  # (R,) each value's last position
    counts = np.diff(np.r_[-1, top])  # (R,) its multiplicity
    value = log_w[top]  # (R,) ascending
    u = run[s - m - 1]  # the value the (M+1)-th largest weight has
    if len(value) - u - 1 < MIN_TAIL:
        return float("nan")
    above = value[u + 1 :]
    log_x = above + np.log(-np.expm1(value[u] - above))  # log(w − w_u)
    return _fit_log(log_x, counts[u + 1 :])[0]


def pareto_summary(ks: Sequence[float], weights: Sequence[int]) -> dict:
    """Per-pair k̂ values (:func:`pareto_k`) and the S nonzero weights each was computed from
    (:func:`nonzero_weights`), summarised for a report: ``pairs``, how many there are;
    ``fitted``, how many have a k̂; of the others, ``too_few`` had fewer than 21 nonzero weights
    and ``not_diagnosable`` fewer than 5 distinct weights above the tail's threshold; the
    ``mean`` and ``max`` over the fitted ones (None if none); ``over_threshold``, the share of
    all the pairs whose k̂ is above its :func:`pareto_threshold` (S) (a pair without a k̂ is
    not counted above it); and ``thresholds``, [S, threshold] for each S ≥ 21 among the pairs,
    ascending."""
    fitted = [k for k in ks if not math.isnan(k)]
    too_few = sum(tail_size(s) < MIN_TAIL for s in weights)
    over = sum(k > pareto_threshold(s) for k, s in zip(ks, weights) if not math.isnan(k))
    return {
        "mean": sum(fitted) / len(fitted) if fitted else None,
        "max": max(fitted, default=None),
        "over_threshold": over / len(ks) if ks else 0.0,
        "thresholds": [
            [s, pareto_threshold(s)] for s in sorted(set(weights)) if tail_size(s) >= MIN_TAIL
        ],
        "pairs": len(ks),
        "fitted": len(fitted),
        "too_few": too_few,
        "not_diagnosable": len(ks) - len(fitted) - too_few,
    }
