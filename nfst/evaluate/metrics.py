"""Per-pair metrics of weighted samples, and their mean with a standard error.

With k samples z_1..z_k of one pair and log importance weights log w_k = log p̃(z_k) − log q(z_k):

- partial KL (003:7): (1/k) Σ_k log q(z_k) − log p̃(z_k), an estimate of KL(q ‖ p) − log p̃(x, y);
- deduplicated ESS (003 Table 7): identical samples are merged into one, with the sum of their
  weights, W_j = Σ_{k: z_k = z_j} w_k; then ESS = (Σ_j W_j)² / Σ_j W_j². It is 1 when every
  sample is the same path (a sharp q) and at most the number of distinct samples;
- expected mark length under p (003 Fig. 4b): Σ_k w̄_k |z_k| with w̄ = softmax(log w);
- log Z = log Σ_z p̃(z) by importance sampling: log Ẑ = log (1/k) Σ_k w_k, with the
  delta-method standard error sd(w) / (√k · mean(w)). E[Ẑ] = Z, so log Ẑ is biased low
  (Jensen), by less as q nears p. Partial KL + log Z is the exclusive KL(q ‖ p) itself;
  partial KL + log Ẑ is only a lower bound on it in expectation (see ``evaluate.exact`` for
  the exact value under a WFST scorer).

Over pairs, :func:`mean_and_se` gives the mean and its standard error (std / √n).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import torch
from torch import Tensor

from ..smc.resampling import ess


def partial_kl(log_q: Tensor, log_p: Tensor) -> float:
    """(1/k) Σ_k log q(z_k) − log p̃(z_k) over (k,) log probabilities."""
    return float((log_q - log_p).mean())


def merge_paths(paths: Iterable[tuple], log_w: Tensor) -> tuple[list[tuple], Tensor]:
    """Distinct paths (in first-seen order) and the log of their summed weights (n,)."""
    merged: dict[tuple, list[float]] = {}
    for path, lw in zip(paths, log_w.tolist()):
        merged.setdefault(path, []).append(lw)
    return list(merged), torch.tensor(
        [torch.logsumexp(torch.tensor(v, dtype=torch.float64), 0).item() for v in merged.values()],
        dtype=torch.float64)


def dedup_ess(paths: Iterable[tuple], log_w: Tensor) -> float:
    """(Σ_j W_j)² / Σ_j W_j² over the distinct ``paths`` j, W_j the summed weight of its copies."""
    return float(ess(merge_paths(paths, log_w)[1]))


def expected_length(log_w: Tensor, lengths: Tensor) -> float:
    """Σ_k w̄_k |z_k|: self-normalised IS estimate of E_{z~p}[|z|]."""
    return float((torch.softmax(log_w, 0) * lengths.double()).sum())


def log_z_is(log_w: Tensor) -> tuple[float, float]:
    """log Ẑ = log (1/k) Σ_k w_k and its delta-method standard error (module docstring)."""
    k = len(log_w)
    w = torch.exp(log_w - log_w.max())  # the shift cancels in the ratio
    se = float(w.std() / (math.sqrt(k) * w.mean())) if k > 1 else math.inf
    return float(torch.logsumexp(log_w, 0) - math.log(k)), se


def mean_and_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error (sample std / √n; 0 for a single value)."""
    t = torch.tensor(values, dtype=torch.float64)
    se = float(t.std() / math.sqrt(len(t))) if len(t) > 1 else 0.0
    return float(t.mean()), se
