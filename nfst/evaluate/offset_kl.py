"""Offset KL and the other figures of SMC particles, per pair (000 §7, Fig. 2), as
``nfst.evaluate.smc`` reports them per method and number of particles M.

Weighted particles p̂ of one pair have their duplicates merged: p̂(ω) = Σ_{m: ω_m = ω} w̄_m.

Per pair, in nats:

- partial KL of the SMC estimate (as 003:7, with p̂ in place of q):
      Σ_ω p̂(ω) [log p̂(ω) − log p̃_θ(ω)]  =  KL(p̂ ‖ p) − log Z(x, y)
- offset KL (000:34, §7.1): KL(p̂ ‖ p) with log Z replaced by z = log Σ_{ω ∈ 𝒴} p̃_θ(ω), 𝒴
  every distinct path any method drew for the pair at any M in any run (z ≤ log Z, so the
  offset KL is a "best effort" lower bound on KL(p̂ ‖ p); differences between methods are
  exact).
- ESS (Σw)²/Σw² of the final particles, and deduplicated ESS (003 Table 7: merge identical
  paths first); the mean and, over runs, the variance of log Ẑ;
- Pareto k̂ of the final weights (``nfst.evaluate.pareto``), the mean over runs and pairs
  where it can be fitted (None for the beam, whose weights are not importance weights, or
  where no pair has a k̂: fewer than 21 particles, or fewer than 5 distinct weights in the
  tail, as after resampling); above min(1 − 1/log₁₀ M, 0.7) the method's figures at that M
  are unreliable whatever their standard errors say.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from ..smc.engine import Particles
from ..smc.resampling import ess
from .metrics import dedup_ess, mean_and_se
from .pareto import pareto_k


def merge_duplicates(
    particles: Particles, b: int
) -> tuple[list[tuple], torch.Tensor, torch.Tensor]:
    """Lattice b's distinct paths (tuples of arc ids), their merged normalised weights p̂ and
    their log p̃, dropping zero-weight slots."""
    w = particles.weights[b].double()
    table: dict[tuple, list] = {}
    for m in range(len(w)):
        if w[m] > 0:
            key = tuple(particles.arcs[b, m, : particles.lengths[b, m]].tolist())
            entry = table.setdefault(key, [0.0, float(particles.log_p[b, m])])
            entry[0] += float(w[m])
    keys = list(table)
    return (
        keys,
        torch.tensor([table[k][0] for k in keys], dtype=torch.float64),
        torch.tensor([table[k][1] for k in keys], dtype=torch.float64),
    )


def pair_stats(p: Particles) -> tuple[list[tuple], list[dict]]:
    """Per lattice of one SMC call: (partial KL, ESS, dedup ESS, log Ẑ, Pareto k̂) of its
    final particles, and its distinct paths with their log p̃ (for 𝒴). Particles without a
    log Ẑ (plain ``Particles``) are the beam's: their weights are no importance weights (no
    k̂), and the mass they found stands for log Ẑ, a lower bound on log Z."""
    log_z = getattr(p, "log_z", None)
    beam = log_z is None
    if beam:
        log_z = torch.logsumexp(
            p.log_p.masked_fill(~torch.isfinite(p.log_weights), float("-inf")), -1
        )
    full_ess = ess(p.log_weights.double())
    rows, found = [], []
    for b in range(p.arcs.shape[0]):
        keys, w, log_p = merge_duplicates(p, b)
        found.append(dict(zip(keys, log_p.tolist())))
        partial = float((w * (w.log() - log_p)).sum())
        k_hat = math.nan if beam else pareto_k(p.log_weights[b])
        rows.append(
            (partial, float(full_ess[b]), float(dedup_ess(w.log())), float(log_z[b]), k_hat)
        )
    return rows, found


def summarise_methods(
    units: list[tuple], done: list[tuple], batch_sizes: list[int], particles: Sequence[int]
) -> tuple[dict, float]:
    """``methods`` and ``z_paths`` of :func:`~nfst.evaluate.smc.evaluate_smc`'s result from
    each unit's (rows, found, seconds, scorer calls): 𝒴 is every path any method found for a
    pair, and offset KL = partial KL + log Σ_{z ∈ 𝒴} p̃(z) (module docstring)."""
    n = sum(batch_sizes)
    offsets = [sum(batch_sizes[:i]) for i in range(len(batch_sizes))]
    seen: list[dict[tuple, float]] = [{} for _ in range(n)]  # 𝒴 per pair
    # per method, M, run, pair: (partial KL, ESS, dedup ESS, log Ẑ, Pareto k̂)
    stats: dict[str, dict[int, list[list[tuple]]]] = {}
    seconds: dict[tuple, float] = {}
    calls: dict[tuple, float] = {}
    for (name, M, r, i), (rows, found, spent, used) in zip(units, done):
        per_run = stats.setdefault(name, {}).setdefault(M, [])
        if i == 0:
            per_run.append([])
        per_run[r].extend(rows)
        seconds[name, M] = seconds.get((name, M), 0.0) + spent
        calls[name, M] = calls.get((name, M), 0.0) + used
        for b, paths in enumerate(found):
            seen[offsets[i] + b].update(paths)
    z = torch.tensor(
        [
            torch.logsumexp(torch.tensor(list(s.values()), dtype=torch.float64), 0).item()
            for s in seen
        ],
        dtype=torch.float64,
    )
    methods = {}
    for name, by_m in stats.items():
        res = {
            key: []
            for key in (
                "offset_kl",
                "offset_kl_se",
                "partial_kl",
                "ess",
                "dedup_ess",
                "log_z",
                "log_z_var",
                "pareto_k",
                "seconds",
                "scorer_calls",
            )
        }
        for M in particles:
            table = torch.tensor(by_m[M], dtype=torch.float64)  # (runs, n, 5)
            mean, se = mean_and_se((table[..., 0] + z).mean(0).tolist())
            res["offset_kl"].append(mean)
            res["offset_kl_se"].append(se)
            res["partial_kl"].append(float(table[..., 0].mean()))
            res["ess"].append(float(table[..., 1].mean()))
            res["dedup_ess"].append(float(table[..., 2].mean()))
            res["log_z"].append(float(table[..., 3].mean()))
            res["log_z_var"].append(float(table[..., 3].var(0).mean()) if len(table) > 1 else 0.0)
            ks = table[..., 4][~table[..., 4].isnan()]  # the pairs with a k̂, over runs
            res["pareto_k"].append(float(ks.mean()) if len(ks) else None)
            res["seconds"].append(round(seconds[name, M] / len(table), 3))
            res["scorer_calls"].append(round(calls[name, M] / (len(table) * n), 1))
        methods[name] = res
    return methods, sum(len(s) for s in seen) / n
