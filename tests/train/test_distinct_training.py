"""Training a sampler on distinct samples (``sampler.without_replacement``)."""

import math

import torch

from nfst import compile_lattice
from nfst.experiment.options import apply_overrides
from nfst.experiment.presets import preset
from nfst.fsts import deletion_insertion
from nfst.models.samplers import SamplerConfig, Vocabulary, make_sampler
from nfst.models.scorer import ArcFactoredScorer
from nfst.train.sampler import SamplerTrainConfig, train_sampler
from nfst.train.sampler_trainer import validate


def test_the_option_reaches_the_trainer_and_training_improves():
    assert (
        apply_overrides(
            preset("small"), ["sampler.without_replacement=true"]
        ).sampler.without_replacement
        is True
    )
    T = deletion_insertion("ab", "cd")
    lats = [compile_lattice(T, x, y) for x, y in [("ab", "c"), ("ba", "dc"), ("a", "cd")]]
    torch.manual_seed(0)
    scorer = ArcFactoredScorer(torch.randn(len(lats[0].mark_vocab) + 1) * 2)
    sampler = make_sampler(
        "swa", Vocabulary(lats[0].mark_vocab, "abcd"), SamplerConfig(d=16, dropout=0.0)
    )
    before = validate(sampler, scorer, lats, 16, 4, 0, torch.device("cpu"))
    cfg = SamplerTrainConfig(
        sampler=SamplerConfig(d=16, dropout=0.0),
        lr=1e-2,
        steps=20,
        batch_size=3,
        k=8,
        eval_every=10,
        patience=10,
        without_replacement=True,
    )
    result = train_sampler(sampler, scorer, lats, lats, cfg, quiet=True)
    assert all(math.isfinite(h["loss"]) for h in result.history[1:])  # after step 0 (untrained)
    assert result.best_dev_partial_kl < before
