"""Training paths from a defensive mixture: the sampler's own proposals and a teacher's.

The inclusive-KL gradient ∇_φ KL(p ‖ q_φ) = −E_p[∇_φ log q_φ(z)] (003 §4) may be estimated with
paths from any proposal r that covers p. Drawing them from q_φ alone (003) fails when q_φ is far
from p: with log weights log p̃ − log q_φ spread over tens of nats, the self-normalised weights
put all their mass on one of the k paths (ESS ≈ 1), and the step merely raises the probability
of whichever path q_φ happened to sample best. A better proposal — a teacher sampler, e.g. a
trained SWP, whose paths score far higher under p̃ — gives targets closer to p.

k_T ≈ share · k paths come from the teacher q_T and k − k_T from q_φ, and every path is
weighted against the mixture it was drawn from (``nfst.models.samplers.mixture``: multiple
importance sampling with the balance heuristic):

    r(z) = (1 − α) q_φ(z) + α q_T(z),    α = k_T / k
    w̄_j  = softmax_j(log p̃(z_j) − log r(z_j)),      loss = −Σ_j w̄_j log q_φ(z_j)

(a "defensive" mixture in the sense of Hesterberg's defensive importance sampling: the q_φ
share keeps q_φ's own paths in the estimate, the teacher's share keeps the weights from
collapsing while q_φ is poor). log q_φ of the teacher's paths is taken by teacher forcing
(``Sampler.score``), with gradients; the teacher is frozen.

Measured on cipher with a half-trained scorer (docs/results.md, "Earlier recipes,
condensed"): with SWP as teacher (shares 0.25–0.75) the ESS of the training weights rises from
about 2 to 4–14 of 16, but the locally normalised samplers end no lower, so no preset turns it
on.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ..dp.batch import LatticeBatch
from ..models.samplers.base import Sampler
from ..models.samplers.mixture import mixture_draw
from ..models.scorer import Scorer
from .objectives import inclusive_kl_loss


def defensive_loss(
    sampler: Sampler,
    teacher: Sampler,
    scorer: Scorer,
    batch: LatticeBatch,
    k: int,
    share: float,
    generator: Optional[torch.Generator],
) -> tuple[Tensor, Tensor]:
    """The inclusive-KL loss −Σ_j w̄_j log q_φ(z_j) (mean over pairs) on k paths per pair from
    the mixture (module docstring, ``nfst.models.samplers.mixture``), and the log weights
    log p̃ − log r (B, k) behind w̄."""
    if k < 2:
        raise ValueError(f"the teacher's mixture needs k ≥ 2 paths per pair, got k = {k}")
    if not 0.0 < share < 1.0:
        raise ValueError(f"the teacher's share of the mixture must be in (0, 1), got {share}")
    draw = mixture_draw([sampler, teacher], [1 - share, share], batch, k, generator, grad=[0])
    with torch.no_grad():
        log_p = scorer.score_arcs(batch, draw.arcs)
    return inclusive_kl_loss(log_p, draw.log_q[0], draw.log_r), log_p - draw.log_r
