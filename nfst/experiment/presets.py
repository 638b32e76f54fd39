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
small's recipe on the larger training set.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Optional

from ..models.samplers import SamplerConfig
from ..train.sampler import SamplerTrainConfig
from ..train.scorer import ScorerConfig


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


PRESETS: dict[str, Preset] = {
    "paper": Preset(
        scorer=ScorerConfig(),
        sampler=SamplerTrainConfig(),
        train_pairs=None, dev_pairs=None, test_pairs=None),
    "small": Preset(
        scorer=ScorerConfig(hidden=64, dropout=0.1, steps=600, batch_size=32, K=16, lr=1e-2,
                            label_smoothing=0.0, bootstrap=SamplerConfig(d=64, dropout=0.1),
                            bootstrap_lr=3e-3),
        sampler=SamplerTrainConfig(sampler=SamplerConfig(d=64, dropout=0.1), lr=3e-3, steps=200,
                                   eval_every=50, eval_k=8, patience=3),
        train_pairs=500, dev_pairs=32, test_pairs=100),
    "large": Preset(
        scorer=ScorerConfig(hidden=64, dropout=0.1, steps=600, batch_size=32, K=16, lr=1e-2,
                            label_smoothing=0.0, bootstrap=SamplerConfig(d=128, dropout=0.1),
                            bootstrap_lr=1e-3),
        sampler=SamplerTrainConfig(sampler=SamplerConfig(d=128, dropout=0.1), lr=3e-3,
                                   steps=3000, eval_every=100, eval_k=8, patience=5,
                                   min_delta=0.1),
        train_pairs=2000, dev_pairs=100, test_pairs=100),
}


def preset(name: str) -> Preset:
    """A fresh copy of a preset (safe to modify)."""
    if name not in PRESETS:
        raise KeyError(f"no preset {name!r}; presets: {', '.join(PRESETS)}")
    return copy.deepcopy(PRESETS[name])
