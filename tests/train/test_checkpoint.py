"""Checkpoints of the training loop (nfst.train.loop, nfst.train.checkpoint): training from
particles and the n-gram fit resume exactly, as the scorer and the samplers do
(tests/train/test_loops.py); a checkpoint that is corrupt, of another nfst, of another trainer
or of another model is refused with a one-line message and a hint."""

import os
import signal

import pytest
import torch

from nfst.errors import CorruptCacheError, Interrupted, NfstError
from nfst.models.samplers import SamplerConfig, make_sampler
from nfst.runtime import storage
from nfst.runtime.interrupt import graceful_interrupts
from nfst.smc.engine import SMCConfig
from nfst.smc.lookahead import BetaLookahead
from nfst.train import AdaptConfig, NgramConfig, adapt, fit_ngram
from tests.helpers.lattices import del_ins_lattices, vocabulary_of
from tests.helpers.scorers import random_scorer

CONFIG = AdaptConfig(
    objective="nasmc",
    steps=6,
    batch_size=2,
    lr=0.01,
    checkpoint_every=2,
    smc=SMCConfig(particles=4),
)


def adapt_run(lats, scorer, checkpoint=None, callback=None, d=8):
    """``adapt`` of a fresh sampler with dropout (so the loop's global RNG state matters as
    well as its generator's): (losses, final parameters)."""
    torch.manual_seed(0)
    sampler = make_sampler("swa", vocabulary_of(lats), SamplerConfig(d=d, dropout=0.2)).train()
    losses = adapt(
        sampler,
        scorer,
        lats,
        CONFIG,
        BetaLookahead.exact(scorer),
        seed=2,
        checkpoint=checkpoint,
        callback=callback,
    )
    return losses, sampler.state_dict()


def sigterm_after(stop):
    def callback(step, record):
        if step == stop:
            os.kill(os.getpid(), signal.SIGTERM)

    return callback


@pytest.fixture(scope="module")
def setup():
    lats = del_ins_lattices()
    return lats, random_scorer(len(lats[0].mark_vocab), seed=0)


def test_adapt_resumes_after_a_signal_as_if_uninterrupted(setup, tmp_path):
    """A SIGTERM after step 3 stops ``adapt`` with a checkpoint of step 3 (between the
    scheduled ones); resumed, it ends with the losses and parameters of an uninterrupted run:
    the sampler, the optimiser and both RNG states (generator and dropout) are restored."""
    lats, scorer = setup
    full_losses, full = adapt_run(lats, scorer)
    assert len(set(full_losses)) == len(full_losses)  # a different SMC run at every step
    with graceful_interrupts(), pytest.raises(Interrupted, match="after step 3"):
        adapt_run(lats, scorer, tmp_path / "adapt.ckpt", sigterm_after(3))
    assert storage.load(tmp_path / "adapt.ckpt")["step"] == 3
    losses, resumed = adapt_run(lats, scorer, tmp_path / "adapt.ckpt")
    assert losses == full_losses
    assert all(torch.equal(full[key], resumed[key]) for key in full)


def test_fit_ngram_resumes_as_if_uninterrupted(tmp_path):
    lats = del_ins_lattices()
    config = NgramConfig(order=2, steps=6, batch_size=2, checkpoint_every=2)
    full = fit_ngram(lats, config, quiet=True)
    with graceful_interrupts(), pytest.raises(Interrupted, match="after step 3"):
        fit_ngram(
            lats, config, quiet=True, checkpoint=tmp_path / "ngram.ckpt", callback=sigterm_after(3)
        )
    resumed = fit_ngram(lats, config, quiet=True, checkpoint=tmp_path / "ngram.ckpt")
    assert resumed.history == full.history
    assert torch.equal(resumed.scorer.logits, full.scorer.logits)


def refused(run, error=NfstError):
    """The error ``run()`` raises: its message must be one line, with a hint."""
    with pytest.raises(error) as info:
        run()
    assert "\n" not in info.value.args[0] and info.value.hint, str(info.value)
    return info.value.args[0]


def test_bad_checkpoints_are_refused_with_a_hint(setup, tmp_path):
    lats, scorer = setup
    path = tmp_path / "adapt.ckpt"
    adapt_run(lats, scorer, path)
    good = storage.load(path)

    def with_state(state):
        storage.save(path, state)
        return lambda: adapt_run(lats, scorer, path)

    path.write_bytes(path.read_bytes()[:-5])
    assert "integrity" in refused(lambda: adapt_run(lats, scorer, path), CorruptCacheError)
    assert "not a training checkpoint" in refused(with_state({"sampler": good["sampler"]}))
    older = {**good, "config": {k: v for k, v in good["config"].items() if k != "grad_clip"}}
    assert "older nfst, without the settings grad_clip" in refused(with_state(older))
    storage.save(path, good)
    assert "another configuration" in refused(  # an adapt checkpoint is no n-gram's
        lambda: fit_ngram(lats, NgramConfig(), quiet=True, checkpoint=path)
    )
    assert "does not fit this model" in refused(lambda: adapt_run(lats, scorer, path, d=12))
