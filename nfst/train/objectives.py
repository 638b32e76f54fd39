"""Training objectives for samplers and the scorer, from k sampled paths per pair.

All take ``log_p`` (B, k) = log p̃_θ(z_k) and ``log_q`` (B, k) = log q_φ(z_k | x, y) of paths
z_1..z_k ~ q_φ, and return a scalar loss to minimise (mean over the B pairs).

- Inclusive KL(p ‖ q) (003 §4, 000:38–39): p is replaced by the self-normalised importance
  sample  p̂ = Σ_k w̄_k δ(z_k),  w̄ = softmax_k(log p̃ − log q)  (detached), giving
  loss = −Σ_k w̄_k log q(z_k).
- Exclusive KL(q ‖ p) (000:40–45) by REINFORCE: with d(z) = log q(z) − log p̃(z) and a
  baseline b, the surrogate  (1/k) Σ_k (d(z_k) − b) log q(z_k)  (d detached) has gradient
  E_q[(d − b) ∇ log q] (000:45). :class:`EMABaseline` keeps b ← 0.1 b + 0.9 d̄ (000 App. B);
  :func:`leave_one_out` takes each sample's b from the other samples of its pair (003 §6).
- Their mixture (1 − λ) KL(p ‖ q) + λ KL(q ‖ p) (000:32).
- The IWAE bound for the scorer (003:14): log (1/K) Σ_k p̃(z_k)/q(z_k) ≤ log p̃(x, y); its
  θ-gradient is Σ_k w̄_k ∇_θ log p̃(z_k), which :func:`iwae_loss` exposes as a surrogate so
  that a label-smoothed log p̃ can stand in for log p̃ in the gradient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor


def normalized_weights(log_p: Tensor, log_q: Tensor) -> Tensor:
    """(B, k) self-normalised importance weights w̄ = softmax_k(log p̃ − log q), detached."""
    return torch.softmax((log_p - log_q).detach(), dim=1)


def inclusive_kl_loss(log_p: Tensor, log_q: Tensor, log_r: Optional[Tensor] = None) -> Tensor:
    """−Σ_k w̄_k log q(z_k), averaged over pairs: ∇_φ estimates ∇_φ KL(p ‖ q_φ). The paths
    were drawn from ``log_r`` (B, k) when given (e.g. a mixture, ``nfst.train.defensive``),
    else from q itself; the weights are w̄ = softmax_k(log p̃ − log r)."""
    weights = normalized_weights(log_p, log_q if log_r is None else log_r)
    return -(weights * log_q).sum(1).mean()


@dataclass
class EMABaseline:
    """The REINFORCE baseline of 000 App. B: b ← decay · b + (1 − decay) · d̄ after each
    minibatch, d̄ the mean of d = log q − log p̃. Before the first update b is taken to be the
    first minibatch's d̄ (so the first step is not scaled by |d|)."""

    decay: float = 0.1
    value: Optional[float] = None

    def current(self, d_mean: float) -> float:
        return d_mean if self.value is None else self.value

    def update(self, d_mean: float) -> None:
        self.value = (
            d_mean if self.value is None else self.decay * self.value + (1 - self.decay) * d_mean
        )


def leave_one_out(d: Tensor) -> Tensor:
    """(B, k) baselines b_k = (1/(k − 1)) Σ_{j≠k} d_j of d (B, k), each pair's own: b_k does
    not depend on z_k, so E_q[(d_k − b_k) ∇ log q(z_k)] = ∇ KL(q ‖ p) exactly (003 §6); a
    baseline that includes d_k itself biases the gradient by a factor (k − 1)/k and more."""
    k = d.shape[1]
    if k < 2:
        raise ValueError("the leave-one-out baseline needs at least 2 samples per pair")
    return (d.sum(1, keepdim=True) - d) / (k - 1)


def exclusive_kl_loss(
    log_p: Tensor, log_q: Tensor, baseline: Optional[EMABaseline] = None
) -> Tensor:
    """REINFORCE surrogate mean_k (d − b) log q (000:45), averaged over pairs, with the
    running ``baseline`` (which it updates) or, when None, the leave-one-out baselines
    (:func:`leave_one_out`)."""
    d = (log_q - log_p).detach()
    if baseline is None:
        return ((d - leave_one_out(d)) * log_q).mean()
    d_mean = float(d.mean())
    loss = ((d - baseline.current(d_mean)) * log_q).mean()
    baseline.update(d_mean)
    return loss


def sampler_loss(
    log_p: Tensor, log_q: Tensor, lam: float = 0.0, baseline: Optional[EMABaseline] = None
) -> Tensor:
    """(1 − λ) · inclusive + λ · exclusive (000:32); λ = 0 is the paper's default (003 §4).
    ``baseline``: the exclusive term's running baseline; None: leave-one-out."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"the mixture weight λ must be in [0, 1], got {lam}")
    loss = inclusive_kl_loss(log_p, log_q) if lam < 1 else log_q.new_zeros(())
    if lam > 0:
        loss = (1 - lam) * loss + lam * exclusive_kl_loss(log_p, log_q, baseline)
    return loss


def iwae_bound(log_p: Tensor, log_q: Tensor) -> Tensor:
    """(B,) log (1/K) Σ_k exp(log p̃ − log q) (003:14): a lower bound on log p̃(x, y) in
    expectation, tight as K → ∞ or when q = p."""
    K = log_p.shape[1]
    return torch.logsumexp(log_p - log_q, dim=1) - math.log(K)


def iwae_loss(log_p: Tensor, log_q: Tensor, surrogate: Optional[Tensor] = None) -> Tensor:
    """−mean IWAE bound, as a loss for θ (q is held fixed: ``log_q`` is detached). With
    ``surrogate`` (B, K), e.g. a label-smoothed log p̃, the loss is −Σ_k w̄_k surrogate_k,
    whose gradient is the IWAE gradient with the surrogate in place of log p̃."""
    log_q = log_q.detach()
    if surrogate is None:
        return -iwae_bound(log_p, log_q).mean()
    return -(normalized_weights(log_p, log_q) * surrogate).sum(1).mean()
