"""What :func:`~nfst.train.sampler.train_sampler` takes: the sampler's training settings
(``nfst options`` lists them under ``sampler.``), and the triples its sleep training needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..errors import NfstError
from ..models.samplers import SamplerConfig
from .loop import LoopConfig

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
    sleep_steps: int | Literal["auto"] = field(default=0, metadata={"least": 0})
    """Steps of maximum likelihood on fresh triples (x, y, ω) drawn from the frozen scorer
    (``nfst.train.triples``: exact posterior samples, 003 fn. 7) before the usual training,
    ``batch_size`` triples a step; 0: none; ``auto``: until the validation partial KL has not
    improved for ``sleep_patience`` validations, or for ``sleep_cap`` steps. Validation and
    early stopping's best parameters run through both phases; ``patience`` counts in the
    usual training only."""
    sleep_patience: int = 3
    """With ``sleep_steps=auto``: end the sleep phase after this many validations without an
    improvement larger than ``min_delta``."""
    sleep_cap: int = 4000
    """With ``sleep_steps=auto``: the most sleep steps (the triples drawn are enough for
    these)."""
    sleep_to_cap: tuple[str, ...] = ()
    """With ``sleep_steps=auto``: the samplers whose sleep phase runs to ``sleep_cap`` whatever
    the validation does; for a sampler whose sleep pays late (SWA on cipher: its validation
    partial KL rises over the first 700 sleep steps and falls after 1,400)."""
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

    def sleep_limit(self) -> int:
        """The most sleep steps: ``sleep_cap`` with ``sleep_steps=auto``, else
        ``sleep_steps``."""
        return self.sleep_cap if self.sleep_steps == "auto" else self.sleep_steps

    def triples_needed(self) -> int:
        """Triples that training takes, each once: sleep_limit() · batch_size + sleep_pairs()
        · steps."""
        return self.sleep_limit() * self.batch_size + self.sleep_pairs() * self.steps

    def check_sleep(self) -> None:
        """NfstError for a ``sleep_share`` that puts no triple in a minibatch (its rounding
        would silently train without wake-sleep)."""
        if self.sleep_share and not self.sleep_pairs():
            raise NfstError(
                f"sleep_share={self.sleep_share} puts no fresh triple in a minibatch "
                f"of {self.batch_size}",
                f"use sleep_share=0, or at least "
                f"{1 / self.batch_size:.3g} (one pair of {self.batch_size})",
            )
