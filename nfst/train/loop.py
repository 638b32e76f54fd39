"""One training loop for every trainer: the scorer (``nfst.train.scorer``), the samplers
(``nfst.train.sampler``), training from particles (``nfst.train.nasmc.adapt``) and the mark
n-gram (``nfst.train.ngram``).

Each step takes the step's minibatch (by default this rank's share of the seeded minibatch of
``nfst.fst.dataset.minibatch``), computes the trainer's losses with its ``loss`` module (under
torchrun wrapped in DistributedDataParallel, which averages the gradients over the ranks),
checks that each loss is finite, backpropagates their sum once, clips each optimiser's
gradient norm (checked finite too) and steps the optimisers; the trainer then makes the step's
record (and may validate, or decide to stop). The loop writes a checkpoint every
``checkpoint_every`` steps, when the trainer stops and at the end (``nfst.train.checkpoint``:
the trainer's state, the history, the seconds trained so far and every rank's RNG states),
and a later call with the same checkpoint resumes exactly where it stopped. A SIGINT or
SIGTERM (inside ``nfst.runtime.interrupt.graceful_interrupts``) stops every rank after the
same step, with a checkpoint.

The loop draws from one generator per rank, seeded with ``stream_seed(seed, "train", rank)``
(``nfst.runtime.distributed``: every random stream's seed) and handed to the loss; the global
torch RNG (initialisation, dropout) is the trainer's to seed. Checkpoints keep both.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import torch
from tqdm.auto import tqdm

from ..dp.batch import LatticeBatch
from ..errors import Interrupted, NfstError
from ..fst.dataset import minibatch
from ..fst.lattice import Lattice
from ..runtime.distributed import from_every_rank, rank_and_world, stream_seed
from ..runtime.interrupt import checkpointed, interrupt_requested
from ..runtime.settings import check_settings
from ..runtime.threads import cpu_threads
from .checkpoint import check_finite, load_checkpoint, restore_state, save_checkpoint


@dataclass
class LoopConfig:
    """The settings every trainer's config shares (each sets its own defaults)."""

    steps: int
    """Training steps, one minibatch each."""
    batch_size: int = 16
    """Pairs per step, all ranks together."""
    lr: float = field(default=1e-3, metadata={"range": "(0, inf)"})
    """Adam's learning rate."""
    grad_clip: Optional[float] = field(default=5.0, metadata={"range": "(0, inf)"})
    """Clip each optimiser's gradient norm to this (003 Table 3: 5.0); None: no clipping."""
    checkpoint_every: int = 100
    """Steps between checkpoints (when training with a checkpoint file)."""


def check_config(config: LoopConfig) -> None:
    """NfstError naming the first setting of a trainer's ``config`` (or of a config it holds)
    that its field does not accept, by type, choice or range (``nfst.runtime.settings``): a
    trainer calls this before any work, so a negative learning rate or a dropout of 1.5 never
    reaches the middle of a run."""
    try:
        check_settings(config)
    except ValueError as exc:
        raise NfstError(
            f"{type(config).__name__}.{exc}",
            "the field's docstring says what it takes (`nfst options` lists the settings of a run)",
        ) from None


class Trainer:
    """One trainer's part of :func:`train_loop`. A subclass sets, in its ``__init__``:

    - ``loss``: a module whose ``forward(batch, generator)`` returns ``(losses, out)``, a tuple
      of scalar losses (their sum is minimised) and what :meth:`record` needs;
    - ``loss_names``: what each loss is, for the error raised when one is not finite;
    - ``optimizers``: what each trains ("the scorer") -> its optimiser;
    - ``saved``: checkpoint key -> an object with ``state_dict`` and ``load_state_dict``;
    - ``train_modules``: put in train mode before each step (validation may leave them in
      eval mode);

    and overrides :meth:`record`, and the other hooks where it needs them."""

    find_unused_parameters = False
    """For DistributedDataParallel: set when a step may leave some parameters without a
    gradient."""
    distributed = True
    """Under torchrun, shard each minibatch and average the gradients; False: every rank runs
    the whole step alone (and must reach the same parameters)."""

    def __init__(
        self,
        name: str,
        config: LoopConfig,
        lattices: Sequence[Lattice],
        seed: int,
        device: torch.device | str,
    ):
        self.name, self.config, self.lattices, self.seed = name, config, lattices, seed
        self.device = torch.device(device)
        self.rank, self.world = rank_and_world()
        self.loss: torch.nn.Module
        self.loss_names: tuple[str, ...] = ()
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.saved: dict[str, Any] = {}
        self.train_modules: tuple[torch.nn.Module, ...] = ()
        # seconds trained by earlier processes (from the checkpoint), and since when this one
        # has (set by train_loop)
        self.seconds_before, self.since = 0.0, time.perf_counter()

    def elapsed(self) -> float:
        """Seconds this training has run: in this call of :func:`train_loop` and, resumed from
        a checkpoint, before it."""
        return self.seconds_before + time.perf_counter() - self.since

    @property
    def stopped(self) -> bool:
        """True to end training before ``config.steps`` (early stopping)."""
        return False

    @property
    def shard(self) -> slice:
        """This rank's share of a minibatch (all of it outside torchrun)."""
        return slice(self.rank, None, self.world) if self.distributed else slice(None)

    def batch(self, step: int) -> LatticeBatch:
        """The minibatch of ``step`` (0-based), or this rank's share of it."""
        lattices = minibatch(self.lattices, self.config.batch_size, self.seed, step)
        return LatticeBatch(lattices[self.shard], self.device)

    def first_records(self) -> list[dict]:
        """The history of a fresh run before its first step (e.g. a validation at step 0)."""
        return []

    def record(self, step: int, losses: tuple, out: Any, norms: list[torch.Tensor]) -> dict:
        """The record of ``step`` (1-based: steps done), without the step itself, from the
        losses, the loss module's ``out`` and the gradient norms before clipping (one per
        optimiser; none without clipping)."""
        raise NotImplementedError

    def progress(self, record: dict) -> dict:
        """What the progress bar shows after a step (nothing: keep what it shows)."""
        return {}

    def state(self) -> dict:
        """What a checkpoint holds besides the history, the step and the RNG states."""
        return {key: obj.state_dict() for key, obj in self.saved.items()}

    def restore(self, state: dict) -> None:
        for key, obj in self.saved.items():
            obj.load_state_dict(state[key])


def train_loop(
    trainer: Trainer,
    *,
    checkpoint: Optional[str | os.PathLike] = None,
    quiet: bool = False,
    callback: Optional[Callable[[int, dict], None]] = None,
) -> list[dict]:
    """Train until ``config.steps`` or until the trainer stops (module docstring), resuming
    from ``checkpoint`` if it exists; returns the history (a record per step, after the
    trainer's first records). ``callback(step, record)`` is called after every step."""
    config, world = trainer.config, trainer.world
    loss = trainer.loss
    if world > 1 and trainer.distributed:
        loss = torch.nn.parallel.DistributedDataParallel(
            loss, find_unused_parameters=trainer.find_unused_parameters
        )
    generator = torch.Generator(device=trainer.device).manual_seed(
        stream_seed(trainer.seed, "train", trainer.rank)
    )
    state = load_checkpoint(checkpoint, config)
    history, done = [], 0
    trainer.since = time.perf_counter()
    if state is not None:
        restore_state(checkpoint, state, trainer.restore, generator)
        history, done = state["history"], state["step"]
        trainer.seconds_before = state.get("seconds", 0.0)  # checkpoints before it: none
    if not history:
        history = trainer.first_records()

    def save(step: int) -> None:
        state = {"history": history, "seconds": trainer.elapsed(), **trainer.state()}
        save_checkpoint(checkpoint, config, step, state, generator)

    bar = tqdm(
        range(done, config.steps),
        desc=trainer.name,
        disable=quiet,
        initial=done,
        total=config.steps,
    )
    with checkpointed():
        for step in bar:
            if trainer.stopped:
                break
            record = {"step": step + 1, **_step(trainer, loss, step, generator, checkpoint)}
            history.append(record)
            if postfix := trainer.progress(record):
                bar.set_postfix(postfix)
            done = step + 1
            if done % config.checkpoint_every == 0 or trainer.stopped:
                save(done)
            if callback is not None:
                callback(done, record)
            if any(from_every_rank(interrupt_requested(), world)):  # all ranks stop together
                save(done)
                if checkpoint:
                    raise Interrupted(f"interrupted after step {done}; checkpoint {checkpoint}")
                raise Interrupted(
                    f"interrupted after step {done}",
                    "no checkpoint was kept: run it again to start over (or pass a checkpoint)",
                )
        save(done)
    return history


def _step(
    trainer: Trainer,
    loss: torch.nn.Module,
    step: int,
    generator: torch.Generator,
    checkpoint: Optional[str | os.PathLike],
) -> dict:
    """One optimisation step (module docstring); returns the trainer's record of it."""
    for module in trainer.train_modules:
        module.train()
    batch = trainer.batch(step)
    clip = trainer.config.grad_clip
    with cpu_threads(trainer.device):
        losses, out = loss(batch, generator)
        for value, what in zip(losses, trainer.loss_names, strict=True):
            check_finite(value, what, step, checkpoint)
        for opt in trainer.optimizers.values():
            opt.zero_grad()
        total = losses[0]
        for value in losses[1:]:  # disjoint parameters: one backward serves every optimiser
            total = total + value
        total.backward()
        norms = []
        if clip is not None:
            for what, opt in trainer.optimizers.items():
                params = [p for group in opt.param_groups for p in group["params"]]
                norms.append(torch.nn.utils.clip_grad_norm_(params, clip))
                check_finite(norms[-1], f"{what}'s gradient norm", step, checkpoint)
        for opt in trainer.optimizers.values():
            opt.step()
    return trainer.record(step + 1, losses, out, norms)
