"""Comparing samplers over training seeds and held-out pairs (``nfst run --seeds N``).

A sampler trained from seeds s = 1..S and evaluated on the same P test pairs gives values
v[s, p] (e.g. its partial KL on pair p, or its difference from a reference sampler's). Their
mean m = v̄.. = (1/SP) Σ_{s,p} v[s, p] varies with the training seeds and with the test pairs
drawn. Its standard error is that of a two-way layout without replication (one value per seed
and pair), with random seed and pair effects:

    v[s, p] = μ + a_s + b_p + e_sp,   a_s ~ (0, σ_a²), b_p ~ (0, σ_b²), e_sp ~ (0, σ_e²),

all independent: a_s the training seed's effect, b_p the pair's, e_sp the seed × pair
interaction (with the sampling noise of the values, which it cannot be told apart from). Then

    m = μ + ā + b̄ + ē,   Var m = σ_a²/S + σ_b²/P + σ_e²/(SP).

With the seed means v̄_s. (over pairs) and the pair means v̄.p (over seeds), the mean squares

    MS_seeds = P Σ_s (v̄_s. − m)² / (S − 1),                       E = σ_e² + P σ_a²,
    MS_pairs = S Σ_p (v̄.p − m)² / (P − 1),                        E = σ_e² + S σ_b²,
    MS_res   = Σ_{s,p} (v[s, p] − v̄_s. − v̄.p + m)² / ((S − 1)(P − 1)),   E = σ_e²

(v̄_s. − m = a_s − ā + ē_s. − ē: variance (1 − 1/S)(σ_a² + σ_e²/P), summed over S seeds and
divided by S − 1; likewise for the pairs; the residual is e_sp − ē_s. − ē.p + ē) estimate
each term of Var m: σ_e²/(SP) by SE_res² = MS_res/(SP), σ_a²/S by SE_seeds² − SE_res² and
σ_b²/P by SE_pairs² − SE_res², where

    SE_seeds² = MS_seeds/(SP) = sd_s(v̄_s.)²/S,   SE_pairs² = MS_pairs/(SP) = sd_p(v̄.p)²/P.

Their sum SE_seeds² + SE_pairs² − SE_res² is unbiased for Var m. SE_seeds² and SE_pairs² each
carry the interaction's σ_e²/(SP), so their sum alone counts it twice: 2 Var m where the
interaction dominates, an SE √2 too wide. But a variance is not negative, and the estimates of
σ_a² and σ_b² are whenever the seed (pair) means agree more closely than the interaction
alone would make them: with 3 seeds, MS_seeds has 2 degrees of freedom and, where σ_a = 0,
falls below MS_res about 63% of the time; the sum itself is then negative 6% of the time (S = 3,
P = 100, σ_a = σ_b = 0), and a small or zero SE would claim an order for any gap. As usual for
variance components (Searle, Casella and McCulloch, "Variance Components", 1992), a
negative estimate is set to 0:

    SE² = SE_res² + max(SE_seeds² − SE_res², 0) + max(SE_pairs² − SE_res², 0),

never below the interaction's own share. That costs a bias upward where a component is near
0: where the interaction dominates (σ_a = σ_b = 0), E SE² = 1.43 Var m at S = 3, P = 100
(1.25 at S = 10); the double count's is 2. Once the seeds' effect stands out from the
interaction (σ_a² ≫ σ_e²/P) the truncation no longer acts and SE² is unbiased. Simulated at
S = 3, P = 100, ±2 SE covers the mean 97% of the time where the interaction dominates (the
double count, 98.5%; the untruncated sum, 79%). With few seeds the SE has few degrees of
freedom: where the seeds dominate (S = 3, P = 50, as the tests simulate), ±2 SE covers 82%,
by any of the three. With one seed the seeds term and the residual vanish and SE is the usual
paired SE over pairs, SE_pairs (the seed's effect is then fixed, not sampled); with one pair,
SE_seeds.

A gap is such a mean of paired differences, so what the pairs share (hard pairs are hard for
every sampler) cancels.

**Degrees of freedom, and a one-sided bound.** SE² is a sum of mean squares with coefficients
c_i (+1 for each component kept, and 1 minus their number for the residual), each MS_i with
df_i degrees of freedom (S − 1, P − 1, (S − 1)(P − 1)). Satterthwaite's approximation gives
SE² the degrees of freedom of a scaled χ²,

    ν = (Σ_i c_i MS_i)² / Σ_i (c_i MS_i)² / df_i,

small where the seeds' term dominates (about S − 1) and large where the pairs' does. A claim
that a gap is below a margin δ (equivalence, not a failure to reject: the idea of Schuirmann's
two one-sided tests, 1987) rests on the one-sided 95% upper bound m + t_{0.95, ν} · SE
(:func:`upper_bound`); ±2 SE with few seeds covers less than 95% (about 82% at ν = 2).

The reference a comparison measures gaps against is chosen on validation pairs (the lowest
validation partial KL), never on the test pairs the gaps are measured on: picking the best of
several equally good samplers on the test pairs would give every other sampler a positive gap.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch


def mean_over_seeds_and_pairs(values: Sequence[Sequence[float]]) -> dict:
    """``{"mean", "se", "se_seeds", "se_pairs", "se_res"}`` of v[s, p] (S lists of P values):
    m, its SE and the SE's terms (module docstring)."""
    v = torch.tensor(values, dtype=torch.float64)
    if v.dim() != 2 or v.numel() == 0:
        raise ValueError("expected S ≥ 1 lists of the same P ≥ 1 values")
    S, P = v.shape
    m, seeds, pairs = v.mean(), v.mean(1), v.mean(0)  # (), (S,), (P,)
    # MS / (SP): SE_seeds², SE_pairs², SE_res²
    seeds_sq = float(((seeds - m) ** 2).sum() / (S * (S - 1))) if S > 1 else 0.0
    pairs_sq = float(((pairs - m) ** 2).sum() / (P * (P - 1))) if P > 1 else 0.0
    residual = v - seeds[:, None] - pairs[None, :] + m  # (S, P)
    res_sq = float((residual**2).sum() / (S * P * (S - 1) * (P - 1))) if S > 1 and P > 1 else 0.0
    kept = [
        (sq, df) for sq, df in ((seeds_sq, S - 1), (pairs_sq, P - 1)) if df > 0 and sq > res_sq
    ]  # the components whose estimate is not truncated to 0
    terms = kept + [((1 - len(kept)) * res_sq, (S - 1) * (P - 1))]  # c_i MS_i / (SP), df_i
    se_sq = sum(term for term, _ in terms)
    spread = sum(term**2 / df for term, df in terms if df > 0)
    return {
        "mean": float(m),
        "se": math.sqrt(se_sq),
        "df": se_sq**2 / spread if spread > 0 else math.inf,
        "se_seeds": math.sqrt(seeds_sq),
        "se_pairs": math.sqrt(pairs_sq),
        "se_res": math.sqrt(res_sq),
    }


def gap(values: Sequence[Sequence[float]], reference: Sequence[Sequence[float]]) -> dict:
    """The mean paired difference values − reference (each S × P, the same seeds and pairs)
    with its SE (:func:`mean_over_seeds_and_pairs`): 0 ± 0 for the reference itself."""
    return mean_over_seeds_and_pairs(
        [[a - b for a, b in zip(row, ref)] for row, ref in zip(values, reference)]
    )


def upper_bound(
    values: Sequence[Sequence[float]], reference: Sequence[Sequence[float]], level: float = 0.95
) -> dict:
    """The one-sided ``level`` upper bound on the mean paired gap values − reference (each
    S × P): :func:`gap`'s ``mean``, ``se`` and Satterthwaite ``df``, with ``t`` = t_{level, df}
    and ``upper`` = mean + t · se (module docstring). 0 for the reference itself."""
    g = gap(values, reference)
    t = t_quantile(level, g["df"]) if g["se"] > 0 else 0.0
    return g | {"level": level, "t": t, "upper": g["mean"] + t * g["se"]}


def t_quantile(p: float, df: float) -> float:
    """The ``p``-quantile of Student's t with ``df`` > 0 degrees of freedom (not only whole
    ones), by bisection on its CDF, 1 − I_{df/(df+t²)}(df/2, 1/2)/2 for t ≥ 0."""
    if not 0 < p < 1 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, not p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if math.isinf(df):
        return math.sqrt(2) * _erfinv(2 * p - 1)
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_cdf(mid, df) < p else (lo, mid)
        if hi - lo < 1e-12 * hi:
            break
    return (lo + hi) / 2


def _t_cdf(t: float, df: float) -> float:
    return 1 - 0.5 * _incomplete_beta(df / (df + t * t), df / 2, 0.5)


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b) by its continued fraction

        I_x(a, b) = x^a (1 − x)^b / (a B(a, b)) · 1/(1 + d_1/(1 + d_2/(1 + ...))),
        d_2m+1 = −(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)),
        d_2m = m (b − m) x / ((a + 2m − 1)(a + 2m)),

    evaluated from the front (modified Lentz); I_x(a, b) = 1 − I_{1−x}(b, a) keeps x where
    the fraction converges fast, below (a + 1)/(a + b + 2)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    if x > (a + 1) / (a + b + 2):
        return 1 - _incomplete_beta(1 - x, b, a)
    front = (
        math.exp(
            math.lgamma(a + b)
            - math.lgamma(a)
            - math.lgamma(b)
            + a * math.log(x)
            + b * math.log1p(-x)
        )
        / a
    )
    tiny = 1e-300
    value, c, d = tiny, tiny, 0.0  # the fraction 1/(1 + d_1/(1 + ...)) is 0 + 1/(1 + ...)
    for i in range(0, 1000):
        if i == 0:
            term = 1.0
        elif i % 2:
            m = (i - 1) // 2
            term = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            m = i // 2
            term = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1 + term * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + term / c
        c = c if abs(c) > tiny else tiny
        value *= c * d
        if i and abs(c * d - 1) < 1e-15:
            break
    return front * value


def _erfinv(y: float) -> float:
    """The inverse error function, by Newton's method on math.erf (for t with df = ∞)."""
    x = 0.0
    for _ in range(100):
        step = (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) < 1e-15:
            break
    return x


def choose_reference(validation: Mapping[str, float]) -> str:
    """The sampler with the lowest validation partial KL (ties: the first listed)."""
    return min(validation, key=lambda name: validation[name])


def ordering(values: Mapping[str, Sequence[Sequence[float]]], z: float = 2.0) -> str:
    """The samplers from best (lowest mean) to worst, e.g. ``"swp ≈ swp-prefix < sws"``:
    ``<`` where the paired gap (:func:`gap`) between neighbours exceeds ``z`` standard
    errors, else ``≈`` (no ordering is claimed). ``values``: name -> S × P values."""
    names = sorted(values, key=lambda n: mean_over_seeds_and_pairs(values[n])["mean"])
    text = names[0]
    for better, worse in zip(names, names[1:]):
        g = gap(values[worse], values[better])
        text += f" {'<' if g['mean'] > z * g['se'] else '≈'} {worse}"
    return text
