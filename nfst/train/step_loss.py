"""The loss of one step of sampler training (``nfst.train.sampler``), by objective: the
inclusive KL by importance sampling (003 §4) or its λ-mixture with the exclusive KL (000:32),
training paths without replacement, a teacher's defensive mixture, exact posterior samples,
SMC particles (002:1), and triples drawn from the scorer (sleep training)."""

from __future__ import annotations

from typing import Optional

import torch

from ..dp.batch import LatticeBatch
from ..models.samplers import Sampler
from ..models.scorer import Scorer
from ..smc.engine import SMCConfig
from ..smc.lookahead import Lookahead
from ..smc.resampling import ess
from ..smc.without_replacement import inclusive_kl_loss as distinct_inclusive_kl_loss
from .defensive import defensive_loss
from .nasmc import particle_loss
from .objectives import EMABaseline, sampler_loss
from .sleep import SleepBatch


def weight_ess(log_w: torch.Tensor) -> float:
    """Mean over pairs of the effective sample size 1 / Σ_k w̄_k² of the self-normalised
    weights w̄ = softmax_k(log_w), log_w (B, k): 1 when one path takes all the weight, k when
    the weights are equal."""
    return float(ess(log_w.detach().double()).mean())


class StepLoss(torch.nn.Module):
    """One minibatch's loss as a module's forward, so DistributedDataParallel can wrap it
    (the frozen scorer has no trainable parameters, so only the sampler's are reduced);
    ``config``: the run's ``SamplerTrainConfig``."""

    def __init__(
        self,
        sampler: Sampler,
        scorer: Scorer,
        config,
        teacher: Optional[Sampler] = None,
        lookahead: Optional[Lookahead] = None,
    ):
        super().__init__()
        self.sampler, self.scorer, self.config = sampler, scorer, config
        # lists: the frozen teacher and the lookahead are no submodules DDP should see
        self._teacher, self._lookahead = [teacher], [lookahead]
        self.baseline = EMABaseline() if config.baseline == "ema" else None

    def forward(
        self, batch: LatticeBatch | SleepBatch, generator: torch.Generator
    ) -> tuple[tuple[torch.Tensor], Optional[float]]:
        """((the minibatch loss,), the ESS of its training weights): on a
        :class:`SleepBatch`, the mean over its pairs of −log q(ω) of the triples and of the
        usual loss of its ``wake`` pairs; else the loss of ``config.objective`` (see
        SamplerTrainConfig; the ESS is None for the SMC objectives and for paths without
        replacement). The lookahead shapes the SMC targets of the particle objectives."""
        if not isinstance(batch, SleepBatch):
            return self._wake(batch, generator)
        if batch.sleep is None:  # every triple of the step left out: no gradient from them
            loss = sum(p.sum() * 0 for p in self.sampler.parameters())
        else:
            loss = -self.sampler.score(batch.sleep, batch.arcs).sum()
        if batch.wake is None:
            return (loss / batch.size,), None
        (wake,), ess = self._wake(batch.wake, generator)
        return ((loss + wake * len(batch.wake.lattices)) / batch.size,), ess

    def _wake(
        self, batch: LatticeBatch, generator: torch.Generator
    ) -> tuple[tuple[torch.Tensor], Optional[float]]:
        sampler, scorer, config, teacher = self.sampler, self.scorer, self.config, self._teacher[0]
        if config.objective == "is" and config.without_replacement:
            return (distinct_inclusive_kl_loss(sampler, scorer, batch, config.k, generator),), None
        if config.objective == "is" and teacher is not None:
            loss, log_w = defensive_loss(
                sampler, teacher, scorer, batch, config.k, config.teacher_share, generator
            )
            return (loss,), weight_ess(log_w)
        if config.objective == "posterior":
            with torch.no_grad():
                arcs = scorer.posterior().sample(batch, config.k, generator).arcs
            return (-sampler.score(batch, arcs).mean(),), None
        if config.objective == "is":
            paths = sampler.sample(batch, config.k, generator)
            with torch.no_grad():
                log_p = scorer.score_paths(paths)
            return (
                (sampler_loss(log_p, paths.log_q, config.lam, self.baseline),),
                weight_ess(log_p - paths.log_q),
            )
        # the mixture's REINFORCE term needs paths drawn from q itself: no resampling then
        threshold = 0.0 if config.objective == "mixture" and config.lam > 0 else 0.5
        smc_config = SMCConfig(particles=config.k, resample_threshold=threshold)
        return (
            particle_loss(
                batch,
                sampler,
                scorer,
                self._lookahead[0],
                smc_config,
                config.objective,
                config.lam,
                generator,
                self.baseline,
            ),
        ), None
