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
from typing import Optional, Sequence

import torch
from torch import Tensor

from ..smc.resampling import ess


def partial_kl(log_q: Tensor, log_p: Tensor, log_inclusion: Optional[Tensor] = None) -> Tensor:
    """(…,) per pair, over the last dimension's k samples of (…, k) log q and log p̃:
    (1/k) Σ_k log q(z_k) − log p̃(z_k) for draws with replacement; with ``log_inclusion``
    (log π_i of k *distinct* paths by priority sampling, ``nfst.smc.without_replacement``;
    an empty slot has log q = −inf and counts 0), Σ_i q_i (log q_i − log p̃_i) / π_i,
    unbiased for E_q[log q − log p̃]."""
    log_q, log_p = log_q.double(), log_p.double()
    if log_inclusion is None:
        return (log_q - log_p).mean(-1)
    term = torch.exp(log_q - log_inclusion) * (log_q - log_p)
    return torch.where(torch.isfinite(log_q), term, 0.0).sum(-1)


def dedup_ess(log_w: Tensor, arcs: Optional[Tensor] = None) -> Tensor:
    """(…,) (Σ_j W_j)² / Σ_j W_j² per pair of (…, k) log weights, over the distinct paths j,
    W_j the summed weight of its copies; copies are the samples whose rows of ``arcs``
    (…, k, L) are equal. Without ``arcs`` the k paths are distinct already (weights of −inf
    are empty slots). In float64."""
    log_w = log_w.double()
    if arcs is None:
        return ess(log_w)
    flat_w, flat_arcs = log_w.reshape(-1, log_w.shape[-1]), arcs.reshape(-1, *arcs.shape[-2:])
    out = []
    for w, a in zip(flat_w, flat_arcs):
        _, copy_of = torch.unique(a, dim=0, return_inverse=True)  # (k,) the distinct path
        top = w.max()
        summed = torch.zeros(int(copy_of.max()) + 1, dtype=w.dtype).index_add_(
            0, copy_of, torch.exp(w - top)
        )  # Σ of each path's copies, scaled by e^{−top}
        out.append(ess(summed.log() + top))
    return torch.stack(out).reshape(log_w.shape[:-1])


def expected_length(log_w: Tensor, lengths: Tensor) -> Tensor:
    """(…,) Σ_k w̄_k |z_k| per pair of (…, k) log weights and lengths, w̄ = softmax(log w):
    the self-normalised IS estimate of E_{z~p}[|z|]. In float64."""
    return (torch.softmax(log_w.double(), -1) * lengths.double()).sum(-1)


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
