"""Presets: every training size and hyperparameter of a run, by name.

``paper`` is 003 Table 3 (batch 16, k 16, K 32, dropout 0.3, clip 5.0, sampler lr 1e-5, scorer
lr 1e-3, label smoothing 0.1, d 256); 003's length threshold (100) and length penalty (1.0)
are not reproduced, as the paper does not define them. Every preset trains its scorer on
paths from the posterior of a mark trigram fitted by exact maximum likelihood
(``ScorerConfig.proposal = "ngram"``); 003's own recipe, a co-trained SWA sampler, is
``--option scorer.proposal=bootstrap``. ``small`` trains everything on the cipher task on a
2-core CPU in minutes; its scorer takes 600 steps of 32 pairs at 1e-2 without label
smoothing: on cipher that brings its test log Ẑ from −82 (200 steps, 3e-3, smoothing 0.1) to
about −70 nats per pair. ``large`` trains the samplers to convergence: 2,000 training pairs
(4× small; the tasks' default training subset), d 128, and training until the partial KL on
100 validation pairs has not improved by more than 0.1 nats for 5 validations 100 steps apart
(the 3,000-step cap is a safety net; ``stopped_by`` in results.json says which ended it); its scorer is
small's recipe on the larger training set. ``tiny`` is for smoke tests and examples: the whole
cipher pipeline in under a minute on 2 cores, with models too small and too briefly trained for
its figures to mean anything.

Every preset evaluates the same way (:class:`EvaluationConfig`'s defaults) except ``tiny``.
Every preset but ``paper`` (003's recipe) sleeps before the usual training
(``sampler.sleep_steps=auto``, confirmed at the large preset on tr, scan and cipher:
docs/results/confirm-protocol.md); ``--option sampler.sleep_steps=0`` trains the usual way.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Optional

from ..models.samplers import SamplerConfig
from ..train.ngram import NgramConfig
from ..train.sampler import SamplerTrainConfig
from ..train.scorer import ScorerConfig


@dataclass
class EvaluationConfig:
    """How a run evaluates its samplers on the test pairs (``nfst.experiment.evaluation``) and
    runs particle smoothing (``nfst.evaluate.smc``)."""

    k: int = 16
    """Samples per test pair for each sampler's partial KL, ESS and expected length."""
    log_z_samples: int = 256
    """Samples per test pair for the IS estimate of log Z, from an even mixture of the n-gram's
    posterior and every sampler."""
    log_z_max_samples: int = 2048
    """Samples per test pair where a first draw of ``log_z_samples`` has Pareto k̂ above 0.7.
    The first draw only chooses: each pair's estimate comes from a fresh draw of this many or of
    ``log_z_samples`` (``nfst.evaluate.log_z``), so Ẑ stays unbiased; at most ``log_z_samples``:
    one draw, which gives the estimate."""
    smc_particles: tuple[int, ...] = (8, 16, 32, 64, 128)
    """The numbers of particles M at which every SMC method runs (a TOML array:
    ``--option "evaluate.smc_particles=[4, 8]"``)."""
    smc_pairs: int = 16
    """Test pairs (the first ones) for particle smoothing."""
    smc_lookahead_steps: int = 100
    """Regression steps of the learned lookahead C of particle smoothing
    (``nfst.smc.fitting``), on the sampler's particles on up to 256 training pairs."""


@dataclass
class Preset:
    scorer: ScorerConfig
    """How the scorer is trained (``nfst.train.scorer``)."""
    sampler: SamplerTrainConfig
    """How each sampler is trained (``nfst.train.sampler``)."""
    train_pairs: Optional[int]
    """Training pairs to use (a prefix of the task's seeded subset); None: all."""
    dev_pairs: Optional[int]
    """Validation pairs to use (a prefix of the dev split); None: all."""
    test_pairs: Optional[int]
    """Test pairs to evaluate on (a prefix of the test split); None: all."""
    evaluate: EvaluationConfig = field(default_factory=EvaluationConfig)
    """How the samplers are evaluated and SMC run on the test pairs."""


PRESETS: dict[str, Preset] = {
    "paper": Preset(
        scorer=ScorerConfig(),
        sampler=SamplerTrainConfig(),
        train_pairs=None,
        dev_pairs=None,
        test_pairs=None,
    ),
    "small": Preset(
        scorer=ScorerConfig(
            hidden=64,
            dropout=0.1,
            steps=600,
            batch_size=32,
            K=16,
            lr=1e-2,
            label_smoothing=0.0,
            bootstrap=SamplerConfig(d=64, dropout=0.1),
            bootstrap_lr=3e-3,
        ),
        sampler=SamplerTrainConfig(
            sampler=SamplerConfig(d=64, dropout=0.1),
            lr=3e-3,
            steps=200,
            eval_every=50,
            eval_k=8,
            patience=3,
            sleep_steps="auto",
        ),
        train_pairs=500,
        dev_pairs=32,
        test_pairs=100,
    ),
    "large": Preset(
        scorer=ScorerConfig(
            hidden=64,
            dropout=0.1,
            steps=600,
            batch_size=32,
            K=16,
            lr=1e-2,
            label_smoothing=0.0,
            bootstrap=SamplerConfig(d=128, dropout=0.1),
            bootstrap_lr=1e-3,
        ),
        sampler=SamplerTrainConfig(
            sampler=SamplerConfig(d=128, dropout=0.1),
            lr=3e-3,
            steps=3000,
            eval_every=100,
            eval_k=8,
            patience=5,
            min_delta=0.1,
            sleep_steps="auto",
        ),
        train_pairs=2000,
        dev_pairs=100,
        test_pairs=100,
    ),
    "tiny": Preset(
        scorer=ScorerConfig(
            hidden=16,
            dropout=0.1,
            steps=20,
            batch_size=8,
            K=8,
            lr=1e-2,
            label_smoothing=0.0,
            ngram=NgramConfig(order=3, steps=20),
            bootstrap=SamplerConfig(d=16, dropout=0.1),
            bootstrap_lr=3e-3,
        ),
        sampler=SamplerTrainConfig(
            sampler=SamplerConfig(d=16, dropout=0.1),
            lr=3e-3,
            steps=20,
            batch_size=8,
            k=8,
            eval_every=10,
            eval_k=4,
            patience=3,
            sleep_steps="auto",
            # 10 steps, one validation (patience never ends it): the tiny scorer's own strings
            # are rarely paths of T (1 in 450 on cipher), and 30 steps' triples took 35 s
            sleep_cap=10,
            # the strings it keeps are a few marks long, and drawing stops at this length: a
            # tiny cipher run took 41 s against 53 s with the default's 400
            sleep_max_length=64,
        ),
        train_pairs=64,
        dev_pairs=8,
        test_pairs=16,
        evaluate=EvaluationConfig(
            k=8,
            log_z_samples=32,
            log_z_max_samples=64,
            smc_particles=(4, 8),
            smc_pairs=4,
            smc_lookahead_steps=20,
        ),
    ),
}


def preset(name: str) -> Preset:
    """A fresh copy of a preset (safe to modify)."""
    if name not in PRESETS:
        raise KeyError(f"no preset {name!r}; presets: {', '.join(PRESETS)}")
    return copy.deepcopy(PRESETS[name])
