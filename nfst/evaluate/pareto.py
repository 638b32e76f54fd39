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
    profile = n * (np.log(-theta / k_theta) - k_theta - 1)
    post = np.exp(profile - profile.max())
    theta_hat = float((theta * post).sum() / post.sum())
    k = float(np.log1p(-theta_hat * x).mean())
    sigma = -k / theta_hat
    return (n * k + 10 * 0.5) / (n + 10), sigma


def pareto_k(log_w: np.ndarray | Tensor) -> float:
    """PSIS k̂ of the (S,) log importance weights ``log_w`` (module docstring), or nan.

    −inf entries (zero weights) are ignored; S counts the finite ones; nan or +inf raise. The
    tail is the M = min(⌈0.2 S⌉, ⌈3 √S⌉) largest weights, the threshold u the largest weight
    below them, and the exceedances w − u > 0 of the tail are fitted (tail weights tied with u
    do not exceed it). The weights are exp(log_w − max log_w): k̂ is invariant to the shift,
    which keeps them in range. nan when S < 10 or fewer than 5 distinct exceedances: the
    generalized Pareto has two parameters, and a handful of points leaves k̂ to the prior and
    the grid (with all exceedances equal the grid is not even defined). As M ≥ 5 needs
    S ≥ 21, any S < 21 gives nan.
    """
    log_w = _float64(log_w)
    if np.isnan(log_w).any() or np.isposinf(log_w).any():
        raise ValueError("log weights must be finite or -inf")
    log_w = np.sort(log_w[np.isfinite(log_w)])
    s = len(log_w)
    if s < 10:
        return float("nan")
    m = min(math.ceil(0.2 * s), math.ceil(3 * math.sqrt(s)))
    w = np.exp(log_w[-m - 1:] - log_w[-1])  # the threshold, then the tail
    x = w[1:] - w[0]
    x = x[x > 0]
    if len(np.unique(x)) < 5:
        return float("nan")
    return fit_generalized_pareto(x)[0]


def pareto_summary(ks: Sequence[float]) -> dict:
    """Per-pair k̂ values summarised for a report: their ``mean`` and ``max`` (nan values, pairs
    with too few weights, left out; all nan gives None), ``over_threshold``, the share of
    pairs above :data:`PARETO_K_WARN`, and the ``threshold`` itself."""
    finite = [k for k in ks if not math.isnan(k)]
    if not finite:
        return {"mean": None, "max": None, "over_threshold": 0.0, "threshold": PARETO_K_WARN,
                "pairs": 0}
    return {"mean": sum(finite) / len(finite), "max": max(finite),
            "over_threshold": sum(k > PARETO_K_WARN for k in finite) / len(finite),
            "threshold": PARETO_K_WARN, "pairs": len(finite)}
