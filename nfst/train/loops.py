"""Training the scorer p̃_θ and the samplers q_φ (003 §4, App. C–D).

1. :func:`train_scorer`: θ is fitted on training pairs by the IWAE bound (003:14) with K paths
   from a bootstrap SWA sampler, which is itself trained by inclusive KL on the same paths
   (003 §4: "alternately optimizing θ and φ"; here each minibatch updates both, from one draw).
   Label smoothing and gradient clipping as in 003 Table 3. The scorer is returned frozen and
   the bootstrap sampler is discarded.
2. :func:`train_sampler`: φ of one sampler against the frozen scorer, by inclusive KL with k
   proposals (003 §4), or the λ-mixture with the REINFORCE exclusive KL (000:32, 000:45), with
   early stopping on the partial KL (003:7) of a validation set.

Both loops checkpoint atomically (``nfst.storage``) every ``checkpoint_every`` steps and, given
the same checkpoint path, resume from it: parameters, optimiser, RNG states (dropout, sampling)
and the data order are restored, so an interrupted run ends exactly where an uninterrupted run
with the same seed would. A non-finite loss stops training with :class:`TrainingDivergedError`.

Presets (:data:`PRESETS`): ``paper`` is 003 Table 3 (batch 16, k 16, K 32, dropout 0.3, clip
5.0, sampler lr 1e-5, scorer lr 1e-3, label smoothing 0.1, d 256); 003's length threshold
(100) and length penalty (1.0) are not reproduced, as the paper does not define them. ``small``
trains everything on the cipher task on a 2-core CPU in minutes.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch
from tqdm.auto import tqdm

from ..runtime import storage
from ..dp.batch import LatticeBatch
from ..runtime.threads import cpu_threads
from ..errors import NfstError, TrainingDivergedError
from ..evaluate.samplers import draw, partial_kl
from ..runtime.interrupt import Interrupted, checkpointed, interrupt_requested
from ..fst.lattice import Lattice
from .objectives import EMABaseline, inclusive_kl_loss, iwae_bound, iwae_loss, sampler_loss
from ..models.samplers import Sampler, SamplerConfig, make_sampler
from ..models.scorer import LSTMScorer, Scorer


@dataclass
class ScorerConfig:
    hidden: int = 256
    layers: int = 2
    dropout: float = 0.3
    lr: float = 1e-3
    steps: int = 2_000
    batch_size: int = 16
    K: int = 32
    """Paths per pair for the IWAE bound (003:14)."""
    label_smoothing: float = 0.1
    grad_clip: float = 5.0
    bootstrap: SamplerConfig = field(default_factory=SamplerConfig)
    """The bootstrap SWA sampler."""
    bootstrap_lr: float = 1e-3
    checkpoint_every: int = 100


@dataclass
class SamplerTrainConfig:
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    lr: float = 1e-5
    steps: int = 20_000
    batch_size: int = 16
    k: int = 16
    """Proposals per pair."""
    lam: float = 0.0
    """Weight of the exclusive KL in the mixture (000:32); 0 = inclusive KL only (003)."""
    objective: str = "is"
    """Where the training paths come from: ``is`` – k independent proposals, weighted by
    self-normalised importance sampling (003); ``nasmc`` – k SMC particles (particle filtering
    with resampling), each step's log q weighted by its filtering weight (002:1); ``smc`` – the
    λ-mixture on the final SMC particles (000:32; without resampling when λ > 0)."""
    grad_clip: float = 5.0
    eval_every: int = 200
    """Validate (partial KL) every this many steps."""
    eval_k: int = 8
    patience: int = 5
    """Stop after this many validations without improvement."""
    checkpoint_every: int = 100


@dataclass
class Preset:
    scorer: ScorerConfig
    sampler: SamplerTrainConfig
    train_pairs: Optional[int]
    """Training pairs to use (a prefix of the task's seeded subset); None: all."""
    dev_pairs: Optional[int]
    test_pairs: Optional[int]


PRESETS: dict[str, Preset] = {
    "paper": Preset(
        scorer=ScorerConfig(),
        sampler=SamplerTrainConfig(),
        train_pairs=None, dev_pairs=None, test_pairs=None),
    "small": Preset(
        scorer=ScorerConfig(hidden=64, dropout=0.1, steps=200, K=16,
                            bootstrap=SamplerConfig(d=64, dropout=0.1), bootstrap_lr=3e-3),
        sampler=SamplerTrainConfig(sampler=SamplerConfig(d=64, dropout=0.1), lr=3e-3, steps=200,
                                   eval_every=50, eval_k=8, patience=3),
        train_pairs=500, dev_pairs=32, test_pairs=100),
}


def preset(name: str) -> Preset:
    """A fresh copy of a preset (safe to modify)."""
    if name not in PRESETS:
        raise KeyError(f"no preset {name!r}; presets: {', '.join(PRESETS)}")
    return copy.deepcopy(PRESETS[name])


# -- the shared machinery of both loops --------------------------------------------------------
def step_lattices(lattices: Sequence[Lattice], batch_size: int, seed: int, step: int) -> list[Lattice]:
    """The minibatch of ``step``: epochs are seeded shuffles, so the order depends only on
    (seed, step) and a resumed run sees the same batches."""
    per_epoch = math.ceil(len(lattices) / batch_size)
    epoch, j = divmod(step, per_epoch)
    order = random.Random(f"{seed}:{epoch}").sample(range(len(lattices)), len(lattices))
    return [lattices[i] for i in order[j * batch_size:(j + 1) * batch_size]]


def rng_state(generator: torch.Generator) -> dict:
    state = {"torch": torch.get_rng_state(), "generator": generator.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict, generator: torch.Generator) -> None:
    torch.set_rng_state(state["torch"])
    generator.set_state(state["generator"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def check_finite(value: torch.Tensor, what: str, step: int,
                 checkpoint: Optional[str | os.PathLike]) -> None:
    if not bool(torch.isfinite(value)):
        where = f"; the last checkpoint is {checkpoint}" if checkpoint else ""
        raise TrainingDivergedError(f"{what} is {float(value.detach())} at step {step}{where}")


RESUMABLE_CHANGES = ("steps", "checkpoint_every")
"""Config fields that may differ between a checkpoint and the run resuming it."""


def config_key(config) -> dict:
    return {k: v for k, v in dataclasses.asdict(config).items() if k not in RESUMABLE_CHANGES}


def load_checkpoint(path: Optional[str | os.PathLike], config) -> Optional[dict]:
    """The checkpoint at ``path`` if there is one; it must come from the same config (up to
    RESUMABLE_CHANGES: a finished run can be resumed with more steps)."""
    if path is None or not Path(path).exists():
        return None
    state = storage.load(path)
    if state["config"] != config_key(config):
        raise NfstError(f"checkpoint {path} was written with another configuration",
                        "delete it, or pass the configuration it was trained with")
    return state


# -- the scorer --------------------------------------------------------------------------------
@dataclass
class ScorerResult:
    scorer: LSTMScorer
    """Frozen (no gradients, eval mode)."""
    history: list[dict]
    """Per logged step: step, iwae (mean bound, nats), sampler_loss."""


def train_scorer(train: Sequence[Lattice], config: ScorerConfig = ScorerConfig(), *,
                 symbols: Sequence[str] = (), seed: int = 0,
                 device: torch.device | str = "cpu",
                 checkpoint: Optional[str | os.PathLike] = None, quiet: bool = False,
                 callback: Optional[Callable[[int, dict], None]] = None) -> ScorerResult:
    """Fit an LSTM scorer to the training lattices (module docstring, step 1).

    ``symbols``: the MFST's input and output alphabets, for the bootstrap SWA sampler.
    ``checkpoint``: a file to checkpoint to and resume from. ``callback(step, record)`` is
    called after every step (e.g. to log or to stop)."""
    if not train:
        raise ValueError("train_scorer needs training lattices")
    device = torch.device(device)
    torch.manual_seed(seed)
    vocab = len(train[0].mark_vocab)
    scorer = LSTMScorer(vocab, config.hidden, config.layers, config.dropout).to(device)
    boot = make_sampler("swa", vocab, config.bootstrap, symbols).to(device)
    opt_p = torch.optim.Adam(scorer.parameters(), lr=config.lr)
    opt_q = torch.optim.Adam(boot.parameters(), lr=config.bootstrap_lr)
    generator = torch.Generator(device=device).manual_seed(seed)
    history: list[dict] = []
    start = 0
    state = load_checkpoint(checkpoint, config)
    if state is not None:
        scorer.load_state_dict(state["scorer"])
        boot.load_state_dict(state["sampler"])
        opt_p.load_state_dict(state["opt_p"])
        opt_q.load_state_dict(state["opt_q"])
        set_rng_state(state["rng"], generator)
        history, start = state["history"], state["step"]

    def save(step: int) -> None:
        if checkpoint is not None:
            storage.save(checkpoint, {
                "config": config_key(config), "step": step, "history": history,
                "scorer": scorer.state_dict(), "sampler": boot.state_dict(),
                "opt_p": opt_p.state_dict(), "opt_q": opt_q.state_dict(),
                "rng": rng_state(generator)}, durable=True)

    scorer.train()
    boot.train()
    bar = tqdm(range(start, config.steps), desc="train scorer", disable=quiet,
               initial=start, total=config.steps)
    with checkpointed():
        for step in bar:
            batch = LatticeBatch(step_lattices(train, config.batch_size, seed, step), device)
            with cpu_threads(device):
                paths = boot.sample(batch, config.K, generator)
                B, K, L = paths.marks.shape
                log_p, smoothed = scorer.log_prob_smoothed(paths.marks.reshape(B * K, L),
                                                           paths.lengths.reshape(-1),
                                                           config.label_smoothing)
                log_p, smoothed = log_p.view(B, K), smoothed.view(B, K)
                loss_p = iwae_loss(log_p.detach(), paths.log_q, surrogate=smoothed)
                loss_q = inclusive_kl_loss(log_p.detach(), paths.log_q)
                check_finite(loss_p, "the scorer's IWAE loss", step, checkpoint)
                check_finite(loss_q, "the bootstrap sampler's loss", step, checkpoint)
                opt_p.zero_grad()
                opt_q.zero_grad()
                (loss_p + loss_q).backward()  # disjoint parameters: one backward serves both
                for module in (scorer, boot):
                    norm = torch.nn.utils.clip_grad_norm_(module.parameters(), config.grad_clip)
                    check_finite(norm, "a gradient norm", step, checkpoint)
                opt_p.step()
                opt_q.step()
            record = {"step": step + 1,
                      "iwae": float(iwae_bound(log_p.detach(), paths.log_q.detach()).mean()),
                      "sampler_loss": float(loss_q.detach())}
            history.append(record)
            bar.set_postfix(iwae=f"{record['iwae']:.2f}")
            if (step + 1) % config.checkpoint_every == 0:
                save(step + 1)
            if callback is not None:
                callback(step + 1, record)
            if interrupt_requested():
                save(step + 1)
                raise Interrupted(f"interrupted after step {step + 1}; checkpoint {checkpoint}")
        save(config.steps)
    return ScorerResult(scorer.freeze(), history)


# -- a sampler ---------------------------------------------------------------------------------
@dataclass
class SamplerResult:
    sampler: Sampler
    """With the parameters of the best validation step, in eval mode."""
    history: list[dict]
    """Per step: step, loss; validation steps add dev_partial_kl."""
    best_step: int
    best_dev_partial_kl: float
    stopped_early: bool


def validate(sampler: Sampler, scorer: Scorer, dev: Sequence[Lattice], k: int, batch_size: int,
             seed: int, device: torch.device) -> float:
    """Mean partial KL (003:7) on the validation lattices, with a fixed sampling seed."""
    samples = draw(sampler, scorer, dev, k, batch_size=batch_size, seed=seed, device=device)
    return sum(partial_kl(s) for s in samples) / len(samples)


def _sampler_step_loss(sampler: Sampler, scorer: Scorer, batch: LatticeBatch,
                       config: SamplerTrainConfig, generator: torch.Generator,
                       baseline: EMABaseline) -> torch.Tensor:
    """The minibatch loss of ``config.objective`` (see SamplerTrainConfig)."""
    if config.objective == "is":
        paths = sampler.sample(batch, config.k, generator)
        with torch.no_grad():
            log_p = scorer.score_paths(paths)
        return sampler_loss(log_p, paths.log_q, config.lam, baseline)
    from .nasmc import mixture_loss, nasmc_loss  # nasmc builds on this module's machinery
    from ..smc.engine import SMCConfig, smc
    # the mixture's REINFORCE term needs paths drawn from q itself: no resampling then
    threshold = 0.0 if config.objective == "smc" and config.lam > 0 else 0.5
    result = smc(batch, sampler, scorer, None,
                 SMCConfig(particles=config.k, resample_threshold=threshold), generator)
    if config.objective == "nasmc":
        return nasmc_loss(result)
    if config.objective == "smc":
        return mixture_loss(result, config.lam)
    raise NfstError(f"unknown sampler objective {config.objective!r}",
                    "choose is, nasmc or smc (SamplerTrainConfig.objective)")


class _StepLoss(torch.nn.Module):
    """One minibatch's loss as a module's forward, so DistributedDataParallel can wrap it
    (the frozen scorer has no trainable parameters, so only the sampler's are reduced)."""

    def __init__(self, sampler: Sampler, scorer: Scorer, config: SamplerTrainConfig):
        super().__init__()
        self.sampler, self.scorer, self.config = sampler, scorer, config

    def forward(self, batch: LatticeBatch, generator: torch.Generator,
                baseline: EMABaseline) -> torch.Tensor:
        return _sampler_step_loss(self.sampler, self.scorer, batch, self.config, generator,
                                  baseline)


def _distributed() -> tuple[int, int]:
    """(rank, world size); (0, 1) unless torch.distributed was initialised (torchrun)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _from_every_rank(value, world: int) -> list:
    """``value`` as every process has it, in rank order (a collective: all ranks call it)."""
    if world == 1:
        return [value]
    values = [None] * world
    torch.distributed.all_gather_object(values, value)
    return values


def train_sampler(sampler: Sampler, scorer: Scorer, train: Sequence[Lattice],
                  dev: Sequence[Lattice], config: SamplerTrainConfig = SamplerTrainConfig(), *,
                  seed: int = 0, device: torch.device | str = "cpu",
                  checkpoint: Optional[str | os.PathLike] = None, quiet: bool = False,
                  callback: Optional[Callable[[int, dict], None]] = None) -> SamplerResult:
    """Train ``sampler`` (made with ``make_sampler``) against the frozen ``scorer``.

    Every ``eval_every`` steps the partial KL on ``dev`` is measured; training stops after
    ``patience`` validations without improvement, and the best parameters are restored.
    ``checkpoint``: a file to checkpoint to and resume from. ``callback(step, record)`` is
    called after every step."""
    if not train or not dev:
        raise ValueError("train_sampler needs training and validation lattices")
    device = torch.device(device)
    torch.manual_seed(seed)
    sampler.to(device)
    scorer.to(device).freeze()
    opt = torch.optim.Adam(sampler.parameters(), lr=config.lr)
    rank, world = _distributed()
    # Under torchrun each process takes its share of every minibatch and DDP averages the
    # gradients; parameters stay identical, so validation and early stopping agree.
    step_loss: torch.nn.Module = _StepLoss(sampler, scorer, config)
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
        # One RNG state per rank (a single one in checkpoints from before); resumed on a
        # different number of processes, the run goes on but is not bit-identical.
        rngs = state["rng"] if isinstance(state["rng"], list) else [state["rng"]]
        set_rng_state(rngs[rank % len(rngs)], generator)
        baseline.value = state["baseline"]
        history, start = state["history"], state["step"]
        best, best_step, since_best, stopped = state["best"], state["best_step"], \
            state["since_best"], state["stopped"]
        best_params = state["best_params"]

    def save(step: int) -> None:
        """Rank 0 writes what every rank needs to resume; all ranks return once it is written."""
        if checkpoint is None:
            return
        rngs = _from_every_rank(rng_state(generator), world)
        if rank == 0:
            storage.save(checkpoint, {
                "config": config_key(config), "step": step, "history": history,
                "sampler": sampler.state_dict(), "opt": opt.state_dict(),
                "rng": rngs, "baseline": baseline.value, "best": best,
                "best_step": best_step, "since_best": since_best, "stopped": stopped,
                "best_params": best_params}, durable=True)
        if world > 1:
            torch.distributed.barrier()

    bar = tqdm(range(start, config.steps), desc=f"train {sampler.name}", disable=quiet,
               initial=start, total=config.steps)
    with checkpointed():
        for step in bar:
            if stopped:
                break
            sampler.train()
            batch = LatticeBatch(step_lattices(train, config.batch_size, seed, step)[rank::world],
                                 device)
            with cpu_threads(device):
                loss = step_loss(batch, generator, baseline)
                check_finite(loss, f"the {sampler.name} sampler's loss", step, checkpoint)
                opt.zero_grad()
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(sampler.parameters(), config.grad_clip)
                check_finite(norm, f"the {sampler.name} sampler's gradient norm", step, checkpoint)
                opt.step()
            record = {"step": step + 1, "loss": float(loss.detach())}
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
            if any(_from_every_rank(interrupt_requested(), world)):  # all ranks stop together
                save(step + 1)
                raise Interrupted(f"interrupted after step {step + 1}; checkpoint {checkpoint}")
        save(history[-1]["step"] if history else 0)
    sampler.load_state_dict(best_params)
    sampler.eval()
    return SamplerResult(sampler, history, best_step, best, stopped)

