"""Training a sampler q_φ against the frozen scorer (003 §4, App. C–D): inclusive KL with k
proposals (003 §4), or the λ-mixture with the REINFORCE exclusive KL (000:32, 000:45), or
training paths from SMC particles (002:1), with early stopping on the partial KL (003:7) of a
validation set. The loop, its checkpoints and its ranks: ``nfst.train.loop``; the sampler's part
of it (its steps, validation, early stopping and sleep phase): ``nfst.train.sampler_trainer``.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import torch

from ..errors import NfstError
from ..fst.lattice import Lattice
from ..models.samplers import Sampler
from ..models.scorer import Scorer
from ..runtime.distributed import stream_seed
from ..smc.lookahead import Lookahead
from .loop import check_config, train_loop
from .nasmc import nasmc_lookahead
from .sampler_config import SamplerTrainConfig
from .sampler_trainer import SamplerTrainer
from .sleep import TripleFeed


@dataclass
class SamplerResult:
    sampler: Sampler
    """With the parameters of the best validation step, in eval mode."""
    history: list[dict]
    """Step 0: the untrained sampler's dev_partial_kl; then per step: step, loss, grad_norm
    (before clipping), ess (:func:`~nfst.train.step_loss.weight_ess`; None for the SMC objectives); validation
    steps add dev_partial_kl."""
    best_step: int
    best_dev_partial_kl: float
    stopped_early: bool
    """True when ``patience`` validations without improvement ended training."""
    sleep_steps: int = 0
    """Steps of the sleep phase (``sleep_steps``, or where ``auto`` ended it)."""
    sleep_stopped_by: Optional[str] = None
    """What ended the sleep phase: ``"steps"`` (a fixed ``sleep_steps``), ``"patience"`` or
    ``"cap"`` (``sleep_steps=auto``); None without one."""
    seconds: float = 0.0
    """The training's wall time, every process that resumed it counted."""
    sleep_seconds: Optional[float] = None
    """The wall time to the end of the sleep phase (the first validation included); None
    without one."""

    @property
    def stopped_by(self) -> str:
        """What ended training: ``"patience"`` (early stopping) or ``"steps"`` (the cap)."""
        return "patience" if self.stopped_early else "steps"

    @property
    def steps(self) -> int:
        """Steps trained (``config.steps`` unless stopped early)."""
        return max((h["step"] for h in self.history), default=0)


def train_sampler(
    sampler: Sampler,
    scorer: Scorer,
    train: Sequence[Lattice],
    dev: Sequence[Lattice],
    config: SamplerTrainConfig,
    *,
    seed: int = 0,
    device: torch.device | str = "cpu",
    checkpoint: Optional[str | os.PathLike] = None,
    quiet: bool = False,
    callback: Optional[Callable[[int, dict], None]] = None,
    teacher: Optional[Sampler] = None,
    lookahead: Optional[Lookahead] = None,
    triples: Optional[TripleFeed] = None,
) -> SamplerResult:
    """Train ``sampler`` (``make_sampler``) against the frozen ``scorer`` as ``config`` says.

    The history starts with the untrained sampler's validation (step 0), which also counts
    for early stopping. ``teacher``: a trained sampler for ``config.teacher`` (required when it
    is set). Every step records its loss, the gradient norm before clipping and the ESS of the
    training weights (:func:`~nfst.train.step_loss.weight_ess`).

    Every ``eval_every`` steps the partial KL on ``dev`` is measured; training stops after
    ``patience`` validations without improvement, and the best parameters are restored.
    ``checkpoint``: a file to checkpoint to and resume from. ``callback(step, record)`` is
    called after every step. ``lookahead``: the SMC targets' C, required by the ``nasmc``
    objective (see ``nasmc_lookahead``). ``triples``: the triples of ``config.sleep_steps`` and
    ``config.sleep_share``, required by them:
    ``TripleFeed(T, draw_triples(scorer, T, n).triples)`` (``nfst.train.triples``) with n =
    ``config.triples_needed()``, each to be used once; training opens and closes it.

    With sleep steps, the history's steps 1..S (``"phase": "sleep"``) are the sleep phase,
    validated at its last step S too, whose record says what ended it
    (``"sleep_stopped_by"``); the usual training's ``config.steps`` steps follow. S is
    ``config.sleep_steps``, or with ``auto`` the step where ``sleep_patience`` validations
    without improvement, or ``sleep_cap``, ended it."""
    _check(train, dev, config, teacher)
    if (config.sleep_steps or config.sleep_share) and triples is None:
        raise NfstError(
            "sleep training needs triples drawn from the scorer",
            "pass triples=TripleFeed(T, draw_triples(scorer, T, n).triples), or set "
            "sleep_steps=0 and sleep_share=0",
        )
    if config.objective == "posterior" and not hasattr(scorer, "posterior"):
        raise NfstError(
            "the objective 'posterior' needs a scorer with an exact posterior",
            "use scorer.kind=ngram, or another objective",
        )
    if config.objective == "nasmc":  # refuse before any work rather than train on C = 0
        lookahead = nasmc_lookahead(lookahead)
    device = torch.device(device)
    torch.manual_seed(stream_seed(seed, "train"))
    sampler.to(device)
    scorer.to(device).freeze()
    if lookahead is not None:
        lookahead.to(device)
    if teacher is not None:
        teacher.to(device).eval().requires_grad_(False)
    trainer = SamplerTrainer(
        sampler, scorer, train, dev, config, seed, device, teacher, lookahead, triples
    )
    with triples if triples is not None else contextlib.nullcontext():
        history = train_loop(trainer, checkpoint=checkpoint, quiet=quiet, callback=callback)
    sampler.load_state_dict(trainer.early.best_params)
    sampler.eval()
    return SamplerResult(
        sampler,
        history,
        trainer.early.best_step,
        trainer.early.best,
        trainer.early.stopped,
        trainer.switch or 0,
        trainer.switched_by,
        trainer.elapsed(),
        trainer.sleep_seconds,
    )


def _check(
    train: Sequence[Lattice],
    dev: Sequence[Lattice],
    config: SamplerTrainConfig,
    teacher: Optional[Sampler],
) -> None:
    if not train or not dev:
        raise ValueError("train_sampler needs training and validation lattices")
    check_config(config)
    config.check_sleep()
    if config.teacher and config.objective != "is":
        raise NfstError(
            f"a teacher trains with the objective 'is' only, not {config.objective!r}",
            "unset sampler.teacher or use objective=is",
        )
    if bool(config.teacher) != (teacher is not None):
        raise NfstError(
            f"the config names teacher {config.teacher!r} but "
            f"{'one was' if teacher is not None else 'none was'} passed",
            "pass the trained teacher sampler, or set SamplerTrainConfig.teacher",
        )
