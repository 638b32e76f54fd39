"""The PSIS Pareto k̂ diagnostic: how heavy the right tail of importance weights is.

Vehtari, Simpson, Gelman, Yao and Gabry, "Pareto smoothed importance sampling". The largest M of
S importance weights w_s are taken to exceed a threshold u (the largest weight below them), and
the exceedances x = w − u are fitted by a generalized Pareto distribution,

    F(x) = 1 − (1 + k x / σ)^(−1/k),    x > 0, σ > 0,

whose shape k says how many moments the weights have: E[w^r] is finite only for r < 1/k. The
fit is the empirical-Bayes estimate of Zhang and Stephens (2009): with θ = −k/σ, the profile
likelihood of θ (k maximised out, k̂(θ) = mean log(1 − θ x)) is averaged over a grid of θ
around the data, and k̂ = k̂(θ̂) at the posterior mean θ̂. PSIS then shrinks k̂ toward 0.5 by
a prior worth 10 observations, k ← (n k + 10 · 0.5) / (n + 10).

Repeated paths. PSIS's tail is the order statistics, the empirical quantile function at r/S; a
repeated path repeats its weight, and the function is flat there: an atom, which no continuous
GPD fits (a tail of one atom has no fit at all). We read them off the empirical CDF interpolated
across each jump (Hyndman and Fan's type 4): n copies of v, next smaller weight v′ (0 below the
smallest), become v′ + (v − v′) r/n, r = 1..n. Without ties this is PSIS's k̂ exactly; a tail of
one atom becomes uniform, GPD k = −1 (≈ −0.7 after the prior at M = 48): bounded weights.

Reading k̂ (of the weights of one pair, or of any importance-sampling estimate):

- k̂ < 0.5: the weights have a finite variance; the estimate and its stated SE can be trusted;
- 0.5 ≤ k̂ ≤ 0.7 (:data:`PARETO_K_WARN`): the variance is infinite but the estimate still
  converges, slowly; trust it with more samples than the SE suggests;
- k̂ > 0.7: the estimate is unreliable. The variance of the weights is probably infinite, a few
  samples dominate it, and it can be far off while its stated SE is small, since the SE is
  computed from the same few weights.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from torch import Tensor

PARETO_K_WARN = 0.7
"""Above it the importance-sampling estimate is unreliable; from 0.5 to 0.7 it converges slowly."""

MIN_TAIL = 5
"""The fewest tail weights a k̂ is fitted to (as PSIS): M ≥ 5 needs S ≥ 21 nonzero weights."""

TIE = 1e-9
"""Log weights closer than this are one repeated weight (the same path, up to rounding)."""


def _float64(x: np.ndarray | Tensor) -> np.ndarray:
    if isinstance(x, Tensor):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64).ravel()


def fit_generalized_pareto(x: np.ndarray | Tensor) -> tuple[float, float]:
    """(k, σ) of a generalized Pareto fitted to the (n,) positive exceedances ``x``, n ≥ 2.

    Zhang and Stephens (2009), as PSIS uses it. With x* the first quartile of x and
    m = 30 + ⌊√n⌋, the grid θ_j = 1/x_max + (1 − √(m / (j − ½))) / (3 x*), j = 1..m, lies below
    1/x_max, so that every 1 − θ x > 0. At each θ_j, k̂(θ) = mean log(1 − θ x) and the profile
    log likelihood is n (log(−θ / k̂(θ)) − k̂(θ) − 1); its softmax over the grid weighs θ_j,
    θ̂ = Σ_j softmax_j θ_j, and k = k̂(θ̂), σ = −k / θ̂. k is then shrunk toward 0.5 by
    (n k + 5) / (n + 10) (σ keeps the unshrunk k, as in PSIS). Heavier tails give larger k.
    """
    x = np.sort(_float64(x))
    n = len(x)
    if n < 2 or x[0] <= 0:
        raise ValueError(f"need at least 2 positive exceedances, got {n} with minimum "
                         f"{x[0] if n else None}")
    m = 30 + math.floor(math.sqrt(n))
    first_quartile = x[math.floor(n / 4 + 0.5) - 1]
    theta = 1 / x[-1] + (1 - np.sqrt(m / (np.arange(1, m + 1) - 0.5))) / (3 * first_quartile)
    k_theta = np.log1p(-theta[:, None] * x).mean(1)  # (m,)
    # −θ / k̂(θ) → 1 / mean x as θ → 0, where evenly spaced x (a repeated weight) can put θ_j
    ratio = np.divide(-theta, k_theta, out=np.full(m, 1 / x.mean()), where=theta != 0)
    profile = n * (np.log(ratio) - k_theta - 1)
    post = np.exp(profile - profile.max())
    theta_hat = float((theta * post).sum() / post.sum())
    k = float(np.log1p(-theta_hat * x).mean())
    sigma = -k / theta_hat
    return (n * k + 10 * 0.5) / (n + 10), sigma


def untied(log_w: np.ndarray) -> np.ndarray:
    """The (S,) ascending log weights ``log_w`` as weights exp(log_w − max), each run of n equal
    ones (closer than :data:`TIE`) at v, next smaller weight v′ (0 below the smallest), spread
    over the gap as v − (v − v′)(n − r)/n, r = 1..n (module docstring): strictly increasing, and
    exactly the weights where nothing is repeated."""
    new = np.r_[True, np.diff(log_w) > TIE]  # (S,) where each run of equal weights starts
    starts = np.flatnonzero(new)
    run = np.cumsum(new) - 1  # (S,) the run of each weight
    sizes = np.diff(np.r_[starts, len(log_w)])
    top = np.exp(log_w[starts + sizes - 1] - log_w[-1])  # each run's weight
    gap = top - np.r_[0.0, top[:-1]]
    rank = np.arange(len(log_w)) - starts[run] + 1
    return top[run] - gap[run] * (sizes[run] - rank) / sizes[run]


def pareto_k(log_w: np.ndarray | Tensor) -> float:
    """PSIS k̂ of the (S,) log importance weights ``log_w`` (module docstring), or nan.

    −inf entries (zero weights) are ignored; S counts the finite ones; nan or +inf raise. The
    tail is the M = min(⌈0.2 S⌉, ⌈3 √S⌉) largest weights, the threshold u the largest weight
    below them, and the exceedances w − u of the tail are fitted, repeated weights spread by
    :func:`untied`. The weights are divided by the largest: k̂ is invariant to a shift of
    ``log_w``, which keeps them in range. nan when M < 5 (S < 21): too few to fit a tail.
    """
    log_w = _float64(log_w)
    if np.isnan(log_w).any() or np.isposinf(log_w).any():
        raise ValueError("log weights must be finite or -inf")
    log_w = np.sort(log_w[np.isfinite(log_w)])
    s = len(log_w)
    m = min(math.ceil(0.2 * s), math.ceil(3 * math.sqrt(s)))
    if m < MIN_TAIL:
        return float("nan")
    w = untied(log_w)
    return fit_generalized_pareto(w[-m:] - w[-m - 1])[0]


def pareto_summary(ks: Sequence[float]) -> dict:
    """Per-pair k̂ values summarised for a report: ``pairs``, how many there are; ``fitted``,
    how many have a k̂ (nan: fewer than 21 nonzero weights); the ``mean`` and ``max`` over the
    fitted ones (None if none); ``over_threshold``, the share of all the pairs whose k̂ is above
    :data:`PARETO_K_WARN` (an unfitted pair is not counted above it); and the ``threshold``."""
    fitted = [k for k in ks if not math.isnan(k)]
    return {"mean": sum(fitted) / len(fitted) if fitted else None,
            "max": max(fitted, default=None),
            "over_threshold": sum(k > PARETO_K_WARN for k in fitted) / len(ks) if ks else 0.0,
            "threshold": PARETO_K_WARN, "pairs": len(ks), "fitted": len(fitted)}
