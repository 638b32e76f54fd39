"""Training from particles: proposals adapted on SMC output (002 §3, 000 §5; docs/design.md §7).

Losses, each a scalar to minimise (mean over the lattices of a batch), computed from an
:class:`~nfst.smc.engine.SMCResult` of a run made with gradients enabled:

- :func:`nasmc_loss` — the NASMC gradient (002:1):

      ∇_φ KL(p ‖ q_φ) ≈ −Σ_t Σ_m w̃_t^m ∇_φ log q_φ(z_t^m | z^{A_t^m}_{<t})

  every step's choice of every particle, weighted by its normalised *filtering* weight w̃_t
  (after step t's reweighting, before its resampling), not only the final particles' weights:
  less variance than the final weighted paths, at the price of some bias (002 §3).
- :func:`mixture_loss` — 000's λ-mixture (1 − λ) KL(p ‖ q) + λ KL(q ‖ p) (000:32). The
  inclusive term uses the final particles p̂ (000:39); the exclusive term is REINFORCE
  (000:43–45) and needs paths drawn from q, i.e. a run without resampling.

:func:`adapt` trains with either loss on lattices (in the loop of ``nfst.train.loop``, with its
checkpoints), with any sampler — a neural sampler, or
:class:`~nfst.smc.lookahead.LookaheadProposal`, whose only parameters are the lookahead's: that
trains c_φ through the proposal it defines, as in 000 §5.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

import torch
from torch import Tensor

from ..dp.batch import LatticeBatch
from ..errors import NfstError
from ..fst.lattice import Lattice
from ..models.samplers.base import Sampler
from ..models.scorer import Scorer
from ..smc.engine import SMCConfig, SMCResult, smc, trace
from ..smc.lookahead import Lookahead, ZeroLookahead
from .loop import LoopConfig, Trainer, train_loop
from .objectives import EMABaseline, exclusive_kl_loss


def nasmc_loss(result: SMCResult) -> Tensor:
    """−Σ_t Σ_m w̃_t^m log q(z_t^m | ancestral prefix) (002:1), averaged over lattices."""
    w = result.filtering_log_weights.exp().detach()  # (B, T, M)
    return -(w.to(result.step_choice_log_q.dtype) * result.step_choice_log_q).sum((1, 2)).mean()


def path_log_q(result: SMCResult) -> Tensor:
    """(B, M) log q of each final particle's path, with the sampler's gradient."""
    return trace(result.ancestors, result.step_choice_log_q).sum(-1)


def mixture_loss(
    result: SMCResult, lam: float = 0.5, baseline: Optional[EMABaseline] = None
) -> Tensor:
    """(1 − λ) · (−Σ_m w̄_m log q(z_m)) + λ · REINFORCE exclusive KL (000:32, 39, 45).

    The REINFORCE baseline b is, by default, each lattice's leave-one-out mean of
    d = log q − log p̃ over its other M − 1 particles (unbiased, and it follows log Z, which
    varies by tens of nats between pairs); pass an ``EMABaseline`` for 000's single running
    average instead."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"the mixture weight λ must be in [0, 1], got {lam}")
    log_q = path_log_q(result)
    loss = -(result.weights.detach().to(log_q.dtype) * log_q).sum(-1).mean()
    if lam == 0:
        return loss
    if bool(result.resampled.any()):
        raise ValueError(
            "the exclusive KL term needs paths drawn from q: run SMC with "
            "resample_threshold=0 for the mixture objective"
        )
    exclusive = exclusive_kl_loss(result.log_p.to(log_q.dtype), log_q, baseline)
    return (1 - lam) * loss + lam * exclusive


def particle_loss(
    batch: LatticeBatch,
    sampler: Sampler,
    scorer: Scorer,
    lookahead: Optional[Lookahead],
    config: SMCConfig,
    objective: str,
    lam: float,
    generator: Optional[torch.Generator],
    baseline: Optional[EMABaseline] = None,
) -> Tensor:
    """The loss of ``objective`` ("nasmc": :func:`nasmc_loss`, "mixture": :func:`mixture_loss`
    with weight ``lam`` and ``baseline``) on the particles of one SMC run over ``batch``, with
    gradients."""
    result = smc(batch, sampler, scorer, lookahead, config, generator)
    return nasmc_loss(result) if objective == "nasmc" else mixture_loss(result, lam, baseline)


def nasmc_lookahead(lookahead: Optional[Lookahead]) -> Lookahead:
    """``lookahead``, the C of NASMC's filtering targets, or NfstError if there is none
    (or C = 0): the targets would then ignore the rest of the lattice and the gradient be
    biased (cosine 0.4 with the exact gradient, against 0.97 with the exact C, in
    tests/train/test_nasmc.py). No default is taken: SWP's own β, tried as one, made a small
    swp sampler's validation partial KL worse, like C = 0 (1.34 -> 2.1 nats)."""
    if lookahead is None or isinstance(lookahead, ZeroLookahead):
        raise NfstError(
            "the nasmc objective needs a lookahead: with C = 0 its gradient is biased",
            "pass lookahead=... (BetaLookahead.from_sampler(an SWP sampler), a "
            "LearnedLookahead fitted with fit_lookahead, or BetaLookahead.exact for "
            "an arc-factored scorer), or use the objective 'is' or 'mixture'",
        )
    return lookahead


@dataclass
class AdaptConfig(LoopConfig):
    """The settings of training from particles (``adapt``), beside those every trainer shares
    (:class:`~nfst.train.loop.LoopConfig`; some with other defaults here)."""

    steps: int = 200
    objective: str = "nasmc"
    """"nasmc" or "mixture"."""
    lam: float = 0.5
    """λ of the mixture (000 §5: ½)."""
    smc: SMCConfig = field(default_factory=lambda: SMCConfig(particles=16))
    """The SMC runs that produce the particles (the mixture forces τ = 0)."""


class _ParticleLoss(torch.nn.Module):
    def __init__(
        self, sampler: Sampler, scorer: Scorer, lookahead: Optional[Lookahead], config: AdaptConfig
    ):
        super().__init__()
        self.sampler, self.config = sampler, config
        self.smc_config = config.smc
        if config.objective == "mixture" and config.smc.resample_threshold > 0:
            self.smc_config = replace(config.smc, resample_threshold=0.0)
        # lists: the frozen scorer and the lookahead are no submodules DDP should see
        self._scorer, self._lookahead = [scorer], [lookahead]

    def forward(self, batch: LatticeBatch, generator: torch.Generator):
        """((the loss of ``config.objective``,), None)."""
        return (
            particle_loss(
                batch,
                self.sampler,
                self._scorer[0],
                self._lookahead[0],
                self.smc_config,
                self.config.objective,
                self.config.lam,
                generator,
            ),
        ), None


class _AdaptTrainer(Trainer):
    """``adapt``'s part of the loop: the sampler's parameters that require a gradient."""

    find_unused_parameters = True

    def __init__(
        self,
        sampler: Sampler,
        scorer: Scorer,
        lattices: Sequence[Lattice],
        config: AdaptConfig,
        lookahead: Optional[Lookahead],
        seed: int,
        device: torch.device | str,
    ):
        super().__init__(f"adapt ({config.objective})", config, lattices, seed, device)
        opt = torch.optim.Adam([p for p in sampler.parameters() if p.requires_grad], lr=config.lr)
        self.loss = _ParticleLoss(sampler, scorer, lookahead, config)
        self.loss_names = (f"the {config.objective} loss",)
        self.optimizers = {"the sampler": opt}
        self.saved = {"sampler": sampler, "opt": opt}

    def record(self, step, losses, out, norms) -> dict:
        return {"loss": float(losses[0].detach())}


def adapt(
    sampler: Sampler,
    scorer: Scorer,
    lattices: Sequence[Lattice],
    config: Optional[AdaptConfig] = None,
    lookahead: Optional[Lookahead] = None,
    seed: int = 0,
    device: str | torch.device = "cpu",
    *,
    checkpoint: Optional[str | os.PathLike] = None,
    quiet: bool = True,
    callback: Optional[Callable[[int, dict], None]] = None,
) -> list[float]:
    """Train ``sampler`` on its own SMC particles with ``config.objective``; returns the
    loss of each step. ``lookahead`` shapes the SMC targets (default C = 0 for the mixture;
    NASMC needs one, see :func:`nasmc_lookahead`). The sampler stays in the mode it is in
    (train/eval); the scorer should be frozen. ``checkpoint``: a file to checkpoint to and
    resume from; ``quiet=False`` shows a progress bar; ``callback(step, record)`` is called
    after every step.

    Do not give a LookaheadProposal its own learned C here: the SMC targets would then move
    with the parameters being trained (on small lattices this collapsed q); train it with the
    mixture, as 000 §5 does."""
    config = config if config is not None else AdaptConfig()
    if config.objective not in ("nasmc", "mixture"):
        raise ValueError(f"unknown objective {config.objective!r}: use 'nasmc' or 'mixture'")
    if config.objective == "nasmc":
        lookahead = nasmc_lookahead(lookahead)
    trainer = _AdaptTrainer(sampler, scorer, lattices, config, lookahead, seed, device)
    history = train_loop(trainer, checkpoint=checkpoint, quiet=quiet, callback=callback)
    return [record["loss"] for record in history]
