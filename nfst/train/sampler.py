"""Training a sampler q_φ against the frozen scorer (003 §4, App. C–D): inclusive KL with k
proposals (003 §4), or the λ-mixture with the REINFORCE exclusive KL (000:32, 000:45), or
training paths from SMC particles (002:1), with early stopping on the partial KL (003:7) of a
validation set. The loop, its checkpoints and its ranks: ``nfst.train.loop``.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Callable, Literal, Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..errors import NfstError
from ..evaluate.metrics import partial_kl
from ..evaluate.samplers import draw
from ..fst.dataset import minibatch
from ..fst.lattice import Lattice
from ..models.samplers import Sampler, SamplerConfig
from ..models.scorer import Scorer
from ..runtime.distributed import stream_seed
from ..smc.lookahead import Lookahead
from .early_stopping import EarlyStopping, copy_params
from .loop import LoopConfig, Trainer, check_config, train_loop
from .nasmc import nasmc_lookahead
from .step_loss import StepLoss
from .sleep import SleepBatch, TripleFeed, sleep_batch


Objective = Literal["is", "nasmc", "mixture", "posterior"]


@dataclass
class SamplerTrainConfig(LoopConfig):
    """``train_sampler``'s settings, beside those every trainer shares
    (:class:`~nfst.train.loop.LoopConfig`; some with other defaults here)."""

    steps: int = field(default=20_000, metadata={"least": 0})
    """Most training steps, one minibatch each (``patience`` may stop training sooner); 0
    with ``sleep_steps``: sleep training alone."""
    lr: float = field(default=1e-5, metadata={"range": "(0, inf)"})
    """Adam learning rate (003 Table 3: 1e-5)."""
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    """The sampler's sizes."""
    k: int = 16
    """Proposals per pair."""
    lam: float = field(default=0.0, metadata={"range": "[0, 1]"})
    """Weight of the exclusive KL in the mixture (000:32); 0 = inclusive KL only (003)."""
    objective: Objective = "is"
    """Where the training paths come from: ``is`` – k independent proposals, weighted by
    self-normalised importance sampling (003); ``nasmc`` – k SMC particles (particle smoothing
    with resampling and a lookahead, which ``train_sampler`` requires), each step's log q
    weighted by its filtering weight (002:1); ``mixture`` – the λ-mixture on the final SMC
    particles (000:32; without resampling when λ > 0); ``posterior`` – maximum likelihood on k
    exact samples of the posterior p(ω | x, y) of a WFST scorer (the n-gram, ``scorer.kind =
    ngram``): the inclusive KL's gradient −E_p[∇ log q_φ] without importance weights, so what
    the sampler reaches shows what its architecture can represent."""
    without_replacement: bool = False
    """With ``is``: k *distinct* proposals by stochastic beam search, weighted by priority
    sampling (``nfst.smc.without_replacement``; inclusive KL only)."""
    teacher: str = ""
    """A sampler of the same run, trained first, whose paths are mixed into the training
    paths (``nfst.train.defensive``; objective ``is`` only); "" = none (003)."""
    teacher_share: float = field(default=0.5, metadata={"range": "(0, 1)"})
    """The teacher's share of the k training paths."""
    eval_every: int = 200
    """Validate (partial KL) every this many steps."""
    eval_k: int = 8
    """Samples per dev pair for the validation partial KL."""
    patience: int = 5
    """Stop after this many validations without improvement."""
    min_delta: float = field(default=0.0, metadata={"range": "[0, inf)"})
    """An improvement of the validation partial KL counts (keeps the parameters, restarts the
    patience) only if it is larger than this, in nats: on a flat curve, changes below the
    validation's own jitter would otherwise keep training going to the step cap."""
    sleep_steps: int = field(default=0, metadata={"least": 0})
    """Steps of maximum likelihood on fresh triples (x, y, ω) drawn from the frozen scorer
    (``nfst.train.triples``: exact posterior samples, 003 fn. 7) before the usual training,
    ``batch_size`` triples a step; 0: none. Validation and early stopping's best parameters
    run through both phases; patience counts in the usual training only."""
    sleep_share: float = field(default=0.0, metadata={"range": "[0, 1]"})
    """Share of every minibatch of the usual training taken from fresh triples, trained by
    maximum likelihood (wake-sleep); 0: none."""
    baseline: Literal["ema", "loo"] = "ema"
    """The REINFORCE baseline of the exclusive KL (λ > 0, and the ``mixture`` objective):
    ``ema`` – 000's running mean of d = log q − log p̃ over minibatches (000 App. B); ``loo`` –
    each sample's mean of the other k − 1 samples' d of its own pair (003 §6)."""
    sleep_max_length: int = 400
    """Most marks of a string drawn for a triple (longer strings are rejected: the triples of
    a pair all of whose paths are shorter stay exact)."""

    def sleep_pairs(self) -> int:
        """Fresh triples in each minibatch of the usual training: round(sleep_share ·
        batch_size)."""
        return round(self.sleep_share * self.batch_size)

    def triples_needed(self) -> int:
        """Triples that training takes, each once: sleep_steps · batch_size + sleep_pairs() ·
        steps."""
        return self.sleep_steps * self.batch_size + self.sleep_pairs() * self.steps

    def check_sleep(self) -> None:
        """NfstError for a ``sleep_share`` that puts no triple in a minibatch (its rounding
        would silently train without wake-sleep)."""
        if self.sleep_share and not self.sleep_pairs():
            raise NfstError(f"sleep_share={self.sleep_share} puts no fresh triple in a minibatch "
                            f"of {self.batch_size}", f"use sleep_share=0, or at least "
                            f"{1 / self.batch_size:.3g} (one pair of {self.batch_size})")


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

    @property
    def stopped_by(self) -> str:
        """What ended training: ``"patience"`` (early stopping) or ``"steps"`` (the cap)."""
        return "patience" if self.stopped_early else "steps"

    @property
    def steps(self) -> int:
        """Steps trained (``config.steps`` unless stopped early)."""
        return max((h["step"] for h in self.history), default=0)


def validate(sampler: Sampler, scorer: Scorer, dev: Sequence[Lattice], k: int, batch_size: int,
             seed: int, device: torch.device) -> float:
    """Mean partial KL (003:7) on the validation lattices, with a fixed sampling seed."""
    samples = draw(sampler, scorer, dev, k, batch_size=batch_size, seed=seed, device=device)
    return sum(float(partial_kl(s.log_q, s.log_p)) for s in samples) / len(samples)


class _SamplerTrainer(Trainer):
    """``train_sampler``'s part of the loop: its loss, validation and early stopping."""

    find_unused_parameters = True

    def __init__(self, sampler: Sampler, scorer: Scorer, train: Sequence[Lattice],
                 dev: Sequence[Lattice], config: SamplerTrainConfig, seed: int,
                 device: torch.device, teacher: Optional[Sampler],
                 lookahead: Optional[Lookahead], triples: Optional[TripleFeed]):
        # the loop runs both phases: the sleep steps, then the usual training's steps
        loop_config = dataclasses.replace(config, steps=config.sleep_steps + config.steps)
        super().__init__(f"train {sampler.name}", loop_config, train, seed, device)
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
        return self.early.stopped

    def batch(self, step: int) -> LatticeBatch | SleepBatch:
        """Step ``step``'s minibatch: in the sleep phase ``batch_size`` fresh triples; after
        it the usual training's minibatch of step ``step - sleep_steps`` (so that with no
        sleep steps it is today's), a share ``sleep_share`` of it replaced by fresh
        triples. Triples are taken in the feed's order, each once until it runs out."""
        config, B = self.config, self.config.batch_size
        if not (config.sleep_steps or config.sleep_share):
            return super().batch(step)
        if step < config.sleep_steps:
            start, n_sleep = step * B, B
        else:
            step -= config.sleep_steps
            n_sleep = config.sleep_pairs()
            start = config.sleep_steps * B + step * n_sleep
        wake = [] if n_sleep == B else minibatch(self.lattices, B, self.seed, step)[n_sleep:]
        return sleep_batch(self.triples, start, n_sleep, wake[self.shard], self.shard,
                           self.device)

    def validate(self) -> float:
        config = self.config
        return validate(self.sampler, self.scorer, self.dev, config.eval_k, config.batch_size,
                        stream_seed(self.seed, "early_stopping"), self.device)

    def first_records(self) -> list[dict]:  # step 0: the untrained sampler
        self.early.best = self.validate()
        return [{"step": 0, "dev_partial_kl": self.early.best}]

    def record(self, step, losses, ess, norms) -> dict:
        record = {"loss": float(losses[0].detach()),
                  "grad_norm": float(norms[0]) if norms else None, "ess": ess}
        sleep = self.config.sleep_steps
        if step <= sleep:
            record["phase"] = "sleep"
        if step % self.config.eval_every == 0 or step in (self.config.steps, sleep):
            record["dev_partial_kl"] = self.validate()
            # patience counts in the usual training only: the sleep phase runs its N steps
            self.early.update(step, record["dev_partial_kl"], self.sampler,
                              count=step > sleep)
        return record

    def progress(self, record: dict) -> dict:
        if "dev_partial_kl" not in record:
            return {}
        return {"dev_kl": f"{record['dev_partial_kl']:.2f}", "best": f"{self.early.best:.2f}"}

    def state(self) -> dict:
        baseline = self.loss.baseline.value if self.loss.baseline is not None else None
        return {**super().state(), "baseline": baseline, **self.early.state()}

    def restore(self, state: dict) -> None:
        super().restore(state)
        if self.loss.baseline is not None:
            self.loss.baseline.value = state["baseline"]
        self.early.restore(state)


def train_sampler(sampler: Sampler, scorer: Scorer, train: Sequence[Lattice],
                  dev: Sequence[Lattice], config: SamplerTrainConfig, *,
                  seed: int = 0, device: torch.device | str = "cpu",
                  checkpoint: Optional[str | os.PathLike] = None, quiet: bool = False,
                  callback: Optional[Callable[[int, dict], None]] = None,
                  teacher: Optional[Sampler] = None,
                  lookahead: Optional[Lookahead] = None,
                  triples: Optional[TripleFeed] = None) -> SamplerResult:
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
    ``config.sleep_share``, required by them: ``TripleFeed(T, draw_triples(scorer, T, n))``
    (``nfst.train.triples``) with n = ``config.triples_needed()``, each to be used once.

    With sleep steps, the history's steps 1..sleep_steps (``"phase": "sleep"``) are the sleep
    phase, validated at its last step too; the usual training's steps follow."""
    _check(train, dev, config, teacher)
    if (config.sleep_steps or config.sleep_share) and triples is None:
        raise NfstError("sleep training needs triples drawn from the scorer",
                        "pass triples=TripleFeed(T, draw_triples(scorer, T, n)), or set "
                        "sleep_steps=0 and sleep_share=0")
    if config.objective == "posterior" and not hasattr(scorer, "posterior"):
        raise NfstError("the objective 'posterior' needs a scorer with an exact posterior",
                        "use scorer.kind=ngram, or another objective")
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
    trainer = _SamplerTrainer(sampler, scorer, train, dev, config, seed, device, teacher,
                              lookahead, triples)
    history = train_loop(trainer, checkpoint=checkpoint, quiet=quiet, callback=callback)
    sampler.load_state_dict(trainer.early.best_params)
    sampler.eval()
    return SamplerResult(sampler, history, trainer.early.best_step, trainer.early.best,
                         trainer.early.stopped)


def _check(train: Sequence[Lattice], dev: Sequence[Lattice], config: SamplerTrainConfig,
           teacher: Optional[Sampler]) -> None:
    if not train or not dev:
        raise ValueError("train_sampler needs training and validation lattices")
    check_config(config)
    config.check_sleep()
    if config.teacher and config.objective != "is":
        raise NfstError(f"a teacher trains with the objective 'is' only, not "
                        f"{config.objective!r}", "unset sampler.teacher or use objective=is")
    if bool(config.teacher) != (teacher is not None):
        raise NfstError(f"the config names teacher {config.teacher!r} but "
                        f"{'one was' if teacher is not None else 'none was'} passed",
                        "pass the trained teacher sampler, or set SamplerTrainConfig.teacher")
