"""Training a sampler q_φ against the frozen scorer (003 §4, App. C–D): inclusive KL with k
proposals (003 §4), or the λ-mixture with the REINFORCE exclusive KL (000:32, 000:45), or
training paths from SMC particles (002:1), with early stopping on the partial KL (003:7) of a
validation set. The loop, its checkpoints and its ranks: ``nfst.train.loop``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..errors import NfstError
from ..evaluate.drawing import draw
from ..evaluate.metrics import partial_kl
from ..fst.dataset import minibatch
from ..fst.lattice import Lattice
from ..models.samplers import Sampler
from ..models.scorer import Scorer
from ..runtime.distributed import stream_seed
from ..smc.lookahead import Lookahead
from .early_stopping import EarlyStopping, copy_params
from .loop import Trainer, check_config, train_loop
from .nasmc import nasmc_lookahead
from .sampler_config import SamplerTrainConfig
from .sleep import SleepBatch, TripleFeed, sleep_batch
from .step_loss import StepLoss

log = logging.getLogger("nfst")


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

    @property
    def stopped_by(self) -> str:
        """What ended training: ``"patience"`` (early stopping) or ``"steps"`` (the cap)."""
        return "patience" if self.stopped_early else "steps"

    @property
    def steps(self) -> int:
        """Steps trained (``config.steps`` unless stopped early)."""
        return max((h["step"] for h in self.history), default=0)


def validate(
    sampler: Sampler,
    scorer: Scorer,
    dev: Sequence[Lattice],
    k: int,
    batch_size: int,
    seed: int,
    device: torch.device,
) -> float:
    """Mean partial KL (003:7) on the validation lattices, with a fixed sampling seed."""
    samples = draw(sampler, scorer, dev, k, batch_size=batch_size, seed=seed, device=device)
    return sum(float(partial_kl(s.log_q, s.log_p)) for s in samples) / len(samples)


class _SamplerTrainer(Trainer):
    """``train_sampler``'s part of the loop: its loss, validation and early stopping."""

    find_unused_parameters = True

    def __init__(
        self,
        sampler: Sampler,
        scorer: Scorer,
        train: Sequence[Lattice],
        dev: Sequence[Lattice],
        config: SamplerTrainConfig,
        seed: int,
        device: torch.device,
        teacher: Optional[Sampler],
        lookahead: Optional[Lookahead],
        triples: Optional[TripleFeed],
    ):
        # the loop runs both phases: the sleep steps (at most), then the usual training's steps
        loop_config = dataclasses.replace(config, steps=config.sleep_limit() + config.steps)
        super().__init__(f"train {sampler.name}", loop_config, train, seed, device)
        self.usual_steps = config.steps
        # the step that ends the sleep phase, and why (None until ``auto`` decides it)
        self.switch: Optional[int] = None if config.sleep_steps == "auto" else config.sleep_steps
        self.switched_by = "steps" if config.sleep_steps not in (0, "auto") else None
        self.sleep_since_best = 0  # sleep validations since the last improvement (``auto``)
        self.done = 0
        self.sampler, self.scorer, self.dev, self.triples = sampler, scorer, dev, triples
        opt = torch.optim.Adam(sampler.parameters(), lr=config.lr)
        # Under torchrun each process takes its share of every minibatch and DDP averages the
        # gradients; parameters stay identical, so validation and early stopping agree.
        self.loss = StepLoss(sampler, scorer, config, teacher, lookahead)
        self.loss_names = (f"the {sampler.name} sampler's loss",)
        self.optimizers = {f"the {sampler.name} sampler": opt}
        self.saved = {"sampler": sampler, "opt": opt}
        self.train_modules = (sampler,)
        self.early = EarlyStopping(config.patience, copy_params(sampler), config.min_delta)

    @property
    def stopped(self) -> bool:
        ended = self.switch is not None and self.done >= self.switch + self.usual_steps
        return self.early.stopped or ended

    def sleeping(self, step: int) -> bool:
        """Whether ``step`` (1-based) is a step of the sleep phase."""
        return self.switch is None or step <= self.switch

    def batch(self, step: int) -> LatticeBatch | SleepBatch:
        """Step ``step``'s minibatch: in the sleep phase ``batch_size`` fresh triples; after
        it the usual training's minibatch of step ``step - sleep_steps`` (so that with no
        sleep steps it is today's), a share ``sleep_share`` of it replaced by fresh
        triples. Triples are taken in the feed's order, each once until it runs out."""
        config, B = self.config, self.config.batch_size
        if not (config.sleep_steps or config.sleep_share):
            return super().batch(step)
        if self.sleeping(step + 1):
            start, n_sleep = step * B, B
        else:
            step -= self.switch
            n_sleep = config.sleep_pairs()
            start = self.switch * B + step * n_sleep
        wake = [] if n_sleep == B else minibatch(self.lattices, B, self.seed, step)[n_sleep:]
        return sleep_batch(self.triples, start, n_sleep, wake[self.shard], self.shard, self.device)

    def validate(self) -> float:
        config = self.config
        return validate(
            self.sampler,
            self.scorer,
            self.dev,
            config.eval_k,
            config.batch_size,
            stream_seed(self.seed, "early_stopping"),
            self.device,
        )

    def first_records(self) -> list[dict]:  # step 0: the untrained sampler
        self.early.best = self.validate()
        return [{"step": 0, "dev_partial_kl": self.early.best}]

    def record(self, step, losses, ess, norms) -> dict:
        record = {
            "loss": float(losses[0].detach()),
            "grad_norm": float(norms[0]) if norms else None,
            "ess": ess,
        }
        config, self.done = self.config, step
        sleeping = self.sleeping(step)
        if sleeping:
            record["phase"] = "sleep"
        last = (
            step == config.sleep_cap
            if self.switch is None
            else step in (self.switch, self.switch + self.usual_steps)
        )
        if step % config.eval_every == 0 or last:
            record["dev_partial_kl"] = self.validate()
            # patience counts in the usual training only: the sleep phase runs its steps
            improved = self.early.update(
                step, record["dev_partial_kl"], self.sampler, count=not sleeping
            )
            if self.switch is None:  # ``auto``: does the sleep phase end here?
                self.sleep_since_best = 0 if improved else self.sleep_since_best + 1
                if self.sleep_since_best >= config.sleep_patience:
                    self.switch, self.switched_by = step, "patience"
                elif step == config.sleep_cap:
                    self.switch, self.switched_by = step, "cap"
        if step == self.switch and self.switched_by:  # the optimiser's state carries on
            record["sleep_stopped_by"] = self.switched_by
            why = {
                "steps": f"sleep_steps={step}",
                "cap": f"the cap, sleep_cap={step}",
                "patience": f"{config.sleep_patience} validations without improvement",
            }
            log.info(
                "%s: the sleep phase ends after step %d (%s; best validation partial KL "
                "%.4g at step %d)",
                self.name,
                step,
                why[self.switched_by],
                self.early.best,
                self.early.best_step,
            )
        return record

    def progress(self, record: dict) -> dict:
        if "dev_partial_kl" not in record:
            return {}
        return {"dev_kl": f"{record['dev_partial_kl']:.2f}", "best": f"{self.early.best:.2f}"}

    def state(self) -> dict:
        baseline = self.loss.baseline.value if self.loss.baseline is not None else None
        return {
            **super().state(),
            "baseline": baseline,
            **self.early.state(),
            "sleep": {
                "switch": self.switch,
                "switched_by": self.switched_by,
                "since_best": self.sleep_since_best,
                "done": self.done,
            },
        }

    def restore(self, state: dict) -> None:
        super().restore(state)
        if self.loss.baseline is not None:
            self.loss.baseline.value = state["baseline"]
        self.early.restore(state)
        sleep = state["sleep"]
        self.switch, self.switched_by = sleep["switch"], sleep["switched_by"]
        self.sleep_since_best, self.done = sleep["since_best"], sleep["done"]


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
    trainer = _SamplerTrainer(
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
