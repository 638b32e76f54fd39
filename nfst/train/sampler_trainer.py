"""The sampler's part of the training loop (``nfst.train.loop``) for
:func:`~nfst.train.sampler.train_sampler`: the step's loss (``nfst.train.step_loss``), the
validation partial KL (003:7) that early stopping watches, and the sleep phase: steps on fresh
triples drawn from the scorer, for a fixed number of steps or, with ``sleep_steps=auto``, until
``sleep_patience`` validations without improvement or ``sleep_cap`` (only the cap for the
samplers in ``sleep_to_cap``); then the usual training, a share ``sleep_share`` of each
minibatch replaced by fresh triples.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..evaluate.drawing import draw
from ..evaluate.metrics import partial_kl
from ..fst.dataset import minibatch
from ..fst.lattice import Lattice
from ..models.samplers import Sampler
from ..models.scorer import Scorer
from ..runtime.distributed import stream_seed
from ..smc.lookahead import Lookahead
from .early_stopping import EarlyStopping, copy_params
from .loop import Trainer
from .sampler_config import SamplerTrainConfig
from .sleep import SleepBatch, TripleFeed, sleep_batch
from .step_loss import StepLoss

log = logging.getLogger("nfst")


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


class SamplerTrainer(Trainer):
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
        self.sleep_patience = (
            math.inf if sampler.name in config.sleep_to_cap else config.sleep_patience
        )
        self.sleep_seconds: Optional[float] = None  # :meth:`elapsed` where the sleep phase ended
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
                if self.sleep_since_best >= self.sleep_patience:
                    self.switch, self.switched_by = step, "patience"
                elif step == config.sleep_cap:
                    self.switch, self.switched_by = step, "cap"
        if step == self.switch and self.switched_by:  # the optimiser's state carries on
            record["sleep_stopped_by"] = self.switched_by
            self.sleep_seconds = self.elapsed()
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
                "seconds": self.sleep_seconds,
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
        self.sleep_seconds = sleep.get("seconds")  # checkpoints before it: none
