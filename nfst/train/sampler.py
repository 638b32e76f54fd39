"""Training a sampler q_φ against the frozen scorer (003 §4, App. C–D): inclusive KL with k
proposals (003 §4), or the λ-mixture with the REINFORCE exclusive KL (000:32, 000:45), or
training paths from SMC particles (002:1), with early stopping on the partial KL (003:7) of a
validation set. Checkpoints and resumption: ``nfst.train.checkpoint``; under torchrun the
minibatch is split across ranks (``nfst.runtime.distributed``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import torch
from tqdm.auto import tqdm

from ..dp.batch import LatticeBatch
from ..errors import Interrupted, NfstError
from ..evaluate.samplers import draw, partial_kl
from ..fst.dataset import minibatch
from ..fst.lattice import Lattice
from ..models.samplers import Sampler, SamplerConfig
from ..models.scorer import Scorer
from ..runtime.distributed import from_every_rank, rank_and_world
from ..runtime.interrupt import checkpointed, interrupt_requested
from ..runtime.threads import cpu_threads
from ..smc.engine import SMCConfig, smc
from ..smc.resampling import ess
from ..smc.lookahead import Lookahead
from ..smc.without_replacement import inclusive_kl_loss as distinct_inclusive_kl_loss
from .checkpoint import check_finite, load_checkpoint, restore_rng, save_checkpoint
from .defensive import defensive_loss
from .nasmc import mixture_loss, nasmc_lookahead, nasmc_loss
from .objectives import EMABaseline, sampler_loss


@dataclass
class SamplerTrainConfig:
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    """The sampler's sizes."""
    lr: float = 1e-5
    """Adam learning rate (003 Table 3: 1e-5)."""
    steps: int = 20_000
    """Most training steps, one minibatch each (``patience`` may stop training sooner)."""
    batch_size: int = 16
    """Training pairs per step (003 Table 3: 16); also the batch size of validation."""
    k: int = 16
    """Proposals per pair."""
    lam: float = 0.0
    """Weight of the exclusive KL in the mixture (000:32); 0 = inclusive KL only (003)."""
    objective: str = "is"
    """Where the training paths come from: ``is`` – k independent proposals, weighted by
    self-normalised importance sampling (003); ``nasmc`` – k SMC particles (particle smoothing
    with resampling and a lookahead, which ``train_sampler`` requires), each step's log q
    weighted by its filtering weight (002:1); ``mixture`` – the λ-mixture on the final SMC
    particles (000:32; without resampling when λ > 0)."""
    without_replacement: bool = False
    """With ``is``: k *distinct* proposals by stochastic beam search, weighted by priority
    sampling (``nfst.smc.without_replacement``; inclusive KL only)."""
    teacher: str = ""
    """A sampler of the same run, trained first, whose paths are mixed into the training
    paths (``nfst.train.defensive``; objective ``is`` only); "" = none (003)."""
    teacher_share: float = 0.5
    """The teacher's share of the k training paths."""
    grad_clip: float = 5.0
    """Largest gradient norm; larger ones are scaled down (003 Table 3: 5.0)."""
    eval_every: int = 200
    """Validate (partial KL) every this many steps."""
    eval_k: int = 8
    """Samples per dev pair for the validation partial KL."""
    patience: int = 5
    """Stop after this many validations without improvement."""
    checkpoint_every: int = 100
    """Write a checkpoint every this many steps (training resumes from the last one)."""


@dataclass
class SamplerResult:
    sampler: Sampler
    """With the parameters of the best validation step, in eval mode."""
    history: list[dict]
    """Step 0: the untrained sampler's dev_partial_kl; then per step: step, loss, grad_norm
    (before clipping), ess (:func:`weight_ess`; None for the SMC objectives); validation
    steps add dev_partial_kl."""
    best_step: int
    best_dev_partial_kl: float
    stopped_early: bool


def validate(sampler: Sampler, scorer: Scorer, dev: Sequence[Lattice], k: int, batch_size: int,
             seed: int, device: torch.device) -> float:
    """Mean partial KL (003:7) on the validation lattices, with a fixed sampling seed."""
    samples = draw(sampler, scorer, dev, k, batch_size=batch_size, seed=seed, device=device)
    return sum(partial_kl(s) for s in samples) / len(samples)


def weight_ess(log_w: torch.Tensor) -> float:
    """Mean over pairs of the effective sample size 1 / Σ_k w̄_k² of the self-normalised
    weights w̄ = softmax_k(log_w), log_w (B, k): 1 when one path takes all the weight, k when
    the weights are equal."""
    return float(ess(log_w.detach().double()).mean())


def _sampler_step_loss(sampler: Sampler, scorer: Scorer, batch: LatticeBatch,
                       config: SamplerTrainConfig, generator: torch.Generator,
                       baseline: EMABaseline, teacher: Optional[Sampler] = None,
                       lookahead: Optional[Lookahead] = None
                       ) -> tuple[torch.Tensor, Optional[float]]:
    """The minibatch loss of ``config.objective`` (see SamplerTrainConfig) and the ESS of its
    training weights (None for the SMC objectives and for paths without replacement);
    ``lookahead`` shapes the SMC targets of the particle objectives."""
    if config.objective == "is" and config.without_replacement:
        return distinct_inclusive_kl_loss(sampler, scorer, batch, config.k, generator), None
    if config.objective == "is":
        if teacher is not None:
            loss, log_w = defensive_loss(sampler, teacher, scorer, batch, config.k,
                                         config.teacher_share, generator)
            return loss, weight_ess(log_w)
        paths = sampler.sample(batch, config.k, generator)
        with torch.no_grad():
            log_p = scorer.score_paths(paths)
        return (sampler_loss(log_p, paths.log_q, config.lam, baseline),
                weight_ess(log_p - paths.log_q))
    # the mixture's REINFORCE term needs paths drawn from q itself: no resampling then
    threshold = 0.0 if config.objective == "mixture" and config.lam > 0 else 0.5
    result = smc(batch, sampler, scorer, lookahead,
                 SMCConfig(particles=config.k, resample_threshold=threshold), generator)
    if config.objective == "nasmc":
        return nasmc_loss(result), None
    return mixture_loss(result, config.lam), None  # objectives are checked in train_sampler


class _StepLoss(torch.nn.Module):
    """One minibatch's loss as a module's forward, so DistributedDataParallel can wrap it
    (the frozen scorer has no trainable parameters, so only the sampler's are reduced)."""

    def __init__(self, sampler: Sampler, scorer: Scorer, config: SamplerTrainConfig,
                 teacher: Optional[Sampler] = None, lookahead: Optional[Lookahead] = None):
        super().__init__()
        self.sampler, self.scorer, self.config = sampler, scorer, config
        # lists: the frozen teacher and the lookahead are no submodules DDP should see
        self._teacher, self._lookahead = [teacher], [lookahead]

    def forward(self, batch: LatticeBatch, generator: torch.Generator,
                baseline: EMABaseline) -> tuple[torch.Tensor, Optional[float]]:
        return _sampler_step_loss(self.sampler, self.scorer, batch, self.config, generator,
                                  baseline, self._teacher[0], self._lookahead[0])


def train_sampler(sampler: Sampler, scorer: Scorer, train: Sequence[Lattice],
                  dev: Sequence[Lattice], config: SamplerTrainConfig = SamplerTrainConfig(), *,
                  seed: int = 0, device: torch.device | str = "cpu",
                  checkpoint: Optional[str | os.PathLike] = None, quiet: bool = False,
                  callback: Optional[Callable[[int, dict], None]] = None,
                  teacher: Optional[Sampler] = None,
                  lookahead: Optional[Lookahead] = None) -> SamplerResult:
    """Train ``sampler`` (made with ``make_sampler``) against the frozen ``scorer``.

    The history starts with the untrained sampler's validation (step 0), which also counts
    for early stopping. ``teacher``: a trained sampler for ``config.teacher`` (required when it
    is set). Every step records its loss, the gradient norm before clipping and the ESS of the
    training weights (:func:`weight_ess`).

    Every ``eval_every`` steps the partial KL on ``dev`` is measured; training stops after
    ``patience`` validations without improvement, and the best parameters are restored.
    ``checkpoint``: a file to checkpoint to and resume from. ``callback(step, record)`` is
    called after every step. ``lookahead``: the SMC targets' C, required by the ``nasmc``
    objective (see ``nasmc_lookahead``)."""
    if not train or not dev:
        raise ValueError("train_sampler needs training and validation lattices")
    if config.objective not in ("is", "nasmc", "mixture"):
        raise NfstError(f"unknown sampler objective {config.objective!r}",
                        "choose is, nasmc or mixture (SamplerTrainConfig.objective)")
    if config.teacher and config.objective != "is":
        raise NfstError(f"a teacher trains with the objective 'is' only, not "
                        f"{config.objective!r}", "unset sampler.teacher or use objective=is")
    if bool(config.teacher) != (teacher is not None):
        raise NfstError(f"the config names teacher {config.teacher!r} but "
                        f"{'one was' if teacher is not None else 'none was'} passed",
                        "pass the trained teacher sampler, or set SamplerTrainConfig.teacher")
    if config.objective == "nasmc":  # refuse before any work rather than train on C = 0
        lookahead = nasmc_lookahead(lookahead)
    device = torch.device(device)
    torch.manual_seed(seed)
    sampler.to(device)
    scorer.to(device).freeze()
    if lookahead is not None:
        lookahead.to(device)
    opt = torch.optim.Adam(sampler.parameters(), lr=config.lr)
    rank, world = rank_and_world()
    if teacher is not None:
        teacher.to(device).eval().requires_grad_(False)
    step_loss: torch.nn.Module = _StepLoss(sampler, scorer, config, teacher, lookahead)
    # Under torchrun each process takes its share of every minibatch and DDP averages the
    # gradients; parameters stay identical, so validation and early stopping agree.
    if world > 1:
        step_loss = torch.nn.parallel.DistributedDataParallel(step_loss,
                                                              find_unused_parameters=True)
    generator = torch.Generator(device=device).manual_seed(seed + 7919 * rank)
    baseline = EMABaseline()
    history: list[dict] = []
    start, best, best_step, since_best, stopped = 0, math.inf, 0, 0, False
    best_params = {key: v.detach().clone() for key, v in sampler.state_dict().items()}
    state = load_checkpoint(checkpoint, config)
    if state is not None:
        sampler.load_state_dict(state["sampler"])
        opt.load_state_dict(state["opt"])
        restore_rng(state, generator)
        baseline.value = state["baseline"]
        history, start = state["history"], state["step"]
        best, best_step, since_best, stopped = state["best"], state["best_step"], \
            state["since_best"], state["stopped"]
        best_params = state["best_params"]

    def save(step: int) -> None:
        save_checkpoint(checkpoint, config, step, {
            "history": history, "sampler": sampler.state_dict(), "opt": opt.state_dict(),
            "baseline": baseline.value, "best": best, "best_step": best_step,
            "since_best": since_best, "stopped": stopped, "best_params": best_params},
            generator)

    if not history:  # step 0: the untrained sampler
        best = validate(sampler, scorer, dev, config.eval_k, config.batch_size, seed, device)
        history.append({"step": 0, "dev_partial_kl": best})
    bar = tqdm(range(start, config.steps), desc=f"train {sampler.name}", disable=quiet,
               initial=start, total=config.steps)
    with checkpointed():
        for step in bar:
            if stopped:
                break
            sampler.train()
            batch = LatticeBatch(minibatch(train, config.batch_size, seed, step)[rank::world],
                                 device)
            with cpu_threads(device):
                loss, ess = step_loss(batch, generator, baseline)
                check_finite(loss, f"the {sampler.name} sampler's loss", step, checkpoint)
                opt.zero_grad()
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(sampler.parameters(), config.grad_clip)
                check_finite(norm, f"the {sampler.name} sampler's gradient norm", step, checkpoint)
                opt.step()
            record = {"step": step + 1, "loss": float(loss.detach()), "grad_norm": float(norm),
                      "ess": ess}
            if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
                kl = validate(sampler, scorer, dev, config.eval_k, config.batch_size, seed, device)
                record["dev_partial_kl"] = kl
                if kl < best:
                    best, best_step, since_best = kl, step + 1, 0
                    best_params = {key: v.detach().clone() for key, v in sampler.state_dict().items()}
                else:
                    since_best += 1
                    stopped = since_best >= config.patience
                bar.set_postfix(dev_kl=f"{kl:.2f}", best=f"{best:.2f}")
            history.append(record)
            if (step + 1) % config.checkpoint_every == 0 or stopped:
                save(step + 1)
            if callback is not None:
                callback(step + 1, record)
            if any(from_every_rank(interrupt_requested(), world)):  # all ranks stop together
                save(step + 1)
                raise Interrupted(f"interrupted after step {step + 1}; checkpoint {checkpoint}")
        save(history[-1]["step"] if history else 0)
    sampler.load_state_dict(best_params)
    sampler.eval()
    return SamplerResult(sampler, history, best_step, best, stopped)
