"""The sleep phase of the sampler's training loop (``nfst.train.sampler_trainer``), through
train_sampler (sampler.sleep_steps): a fixed number of steps or ``auto`` (until the validation
partial KL stops improving, or a cap), the switch to the usual training, and resuming across
it."""

import dataclasses
import logging
import time

import pytest
import torch

from nfst.models.samplers import SamplerConfig
from nfst.runtime import storage
from nfst.train.sampler import SamplerTrainConfig, train_sampler
from nfst.train.sleep import TripleFeed
from nfst.train.triples import draw_triples
from tests.helpers.samplers import new_sampler
from tests.train.test_triples import toy_pairs, unigram
from tools.replay_sleep import loss_switch, replay, sleep_losses, sleep_validations


def sleep_setup(seed=0):
    T, lats = toy_pairs()
    scorer = unigram(T, {"d": 0.25, "i": 0.15, "s": 0.35, "EOS": 0.25})
    torch.manual_seed(seed)
    return T, lats, scorer, new_sampler("swa", lats).double()


def config(**changes) -> SamplerTrainConfig:
    settings = dict(
        sampler=SamplerConfig(d=8, dropout=0.0),
        lr=0.01,
        steps=3,
        batch_size=4,
        k=4,
        eval_every=2,
        eval_k=4,
        patience=10,
        sleep_cap=40,
    )
    return SamplerTrainConfig(**{**settings, **changes})


def run(cfg, checkpoint=None, callback=None, seed=0):
    T, lats, scorer, sampler = sleep_setup(seed)
    feed = TripleFeed(T, draw_triples(scorer, T, cfg.triples_needed(), seed=0).triples, chunk=8)
    return train_sampler(
        sampler,
        scorer,
        lats,
        lats,
        cfg,
        quiet=True,
        triples=feed,
        checkpoint=checkpoint,
        callback=callback,
    )


def validated(result) -> list[int]:
    return [h["step"] for h in result.history if "dev_partial_kl" in h]


def test_the_sleep_phase_ends_with_a_validation_off_the_eval_grid():
    """sleep_steps=3 with eval_every=2: validated at 2, at the phase's last step 3, then on the
    grid and at the last step."""
    result = run(config(sleep_steps=3, steps=4))
    assert validated(result) == [0, 2, 3, 4, 6, 7]
    assert [h.get("phase") for h in result.history[1:]] == ["sleep"] * 3 + [None] * 4
    assert (result.sleep_steps, result.sleep_stopped_by) == (3, "steps")
    assert result.history[3]["sleep_stopped_by"] == "steps"


def test_patience_counts_in_the_usual_training_only():
    """No validation improves (lr tiny, min_delta above its changes): patience 1 would stop at
    the first one; the fixed sleep phase still runs its 4 steps, then the first usual
    validation ends training."""
    result = run(config(sleep_steps=4, steps=6, lr=1e-9, min_delta=0.1, patience=1, eval_every=1))
    assert result.steps == 5 and result.stopped_by == "patience"
    assert result.sleep_steps == 4


def test_auto_ends_the_sleep_phase_on_patience_and_logs_why(caplog):
    """Without improvement, ``auto`` ends the sleep phase after sleep_patience validations
    (steps 2 and 4), logs it, records it, and trains ``steps`` usual steps after it."""
    with caplog.at_level(logging.INFO, logger="nfst"):
        result = run(config(sleep_steps="auto", sleep_patience=2, lr=1e-9, min_delta=0.1))
    assert (result.sleep_steps, result.sleep_stopped_by) == (4, "patience")
    assert result.steps == 4 + 3
    assert [h.get("phase") for h in result.history[1:]] == ["sleep"] * 4 + [None] * 3
    assert result.history[4]["sleep_stopped_by"] == "patience"
    assert (
        "the sleep phase ends after step 4 (2 validations without improvement; best "
        "validation partial KL" in caplog.text
    )


def test_auto_ends_the_sleep_phase_at_the_cap():
    result = run(config(sleep_steps="auto", sleep_patience=100, sleep_cap=5))
    assert (result.sleep_steps, result.sleep_stopped_by) == (5, "cap")
    assert validated(result) == [0, 2, 4, 5, 6, 8]
    assert result.steps == 8


class Interrupt(Exception):
    pass


@pytest.mark.parametrize("cut", [3, 6])
def test_resume_across_the_switch_gives_the_uninterrupted_result(tmp_path, cut):
    """``auto`` with the switch at step 4 (patience): a run cut after step ``cut`` (before or
    after the switch) and resumed from its checkpoint ends as the uninterrupted run, and
    Adam's state runs through both phases (its step count is every step's)."""
    cfg = config(sleep_steps="auto", sleep_patience=2, min_delta=10.0, steps=4, checkpoint_every=1)
    full = run(cfg, tmp_path / "full.ckpt")
    assert (full.sleep_steps, full.sleep_stopped_by, full.steps) == (4, "patience", 8)
    opt = storage.load(tmp_path / "full.ckpt")["opt"]
    assert all(int(s["step"]) == 8 for s in opt["state"].values())

    def stop(step, record):
        if step == cut:
            raise Interrupt

    with pytest.raises(Interrupt):
        run(cfg, tmp_path / "cut.ckpt", stop)
    resumed = run(cfg, tmp_path / "cut.ckpt")
    assert resumed.history == full.history
    assert (resumed.sleep_steps, resumed.sleep_stopped_by) == (4, "patience")
    for key, value in full.sampler.state_dict().items():
        assert torch.equal(value, resumed.sampler.state_dict()[key]), key


@pytest.mark.parametrize("cut", [3, 6])
def test_a_resumed_training_counts_the_seconds_of_every_process(tmp_path, cut):
    """Each step takes at least 0.1 s (its callback sleeps). Cut after step ``cut`` (the
    checkpoint of step ``cut`` written before its callback) and resumed: the training's seconds
    count the first process's steps 1..cut-1 and the second's, the sleep phase's (to step 4)
    those before the switch in either process; before, each counted the last process only,
    and a sleep phase that ended before the cut had no seconds at all."""
    cfg = config(sleep_steps="auto", sleep_patience=2, min_delta=10.0, steps=4, checkpoint_every=1)

    def slow(step, record):
        time.sleep(0.1)
        if step == cut and first:
            raise Interrupt

    first = True
    with pytest.raises(Interrupt):
        run(cfg, tmp_path / "cut.ckpt", slow)
    first = False
    resumed = run(cfg, tmp_path / "cut.ckpt", slow)
    assert (resumed.sleep_steps, resumed.steps) == (4, 8)
    assert resumed.seconds >= 0.1 * (cut - 1 + 8 - cut)
    assert 0.1 * min(cut - 1, 3) <= resumed.sleep_seconds < resumed.seconds


def test_a_larger_budget_trains_on_after_the_switch(tmp_path):
    """``auto`` switching at step 4, trained to steps=2 (ends at 6, a validation step), then
    on from its checkpoint to steps=4 (``--continue``): the history of a run trained to
    steps=4 from the start."""
    cfg = config(sleep_steps="auto", sleep_patience=2, min_delta=10.0, steps=2)
    short = run(cfg, tmp_path / "run.ckpt")
    assert (short.sleep_steps, short.steps) == (4, 6)
    longer = config(sleep_steps="auto", sleep_patience=2, min_delta=10.0, steps=4)
    continued = run(longer, tmp_path / "run.ckpt")
    assert continued.history == run(longer).history
    assert (continued.sleep_steps, continued.steps) == (4, 8)


REPLAYED = dict(lr=0.05, eval_every=1, steps=1, min_delta=0.001)


@pytest.fixture(scope="module")
def fixed_sleep_validations():
    """The validations of a 40-step sleep phase, trained once for every patience below."""
    return sleep_validations(run(config(sleep_steps=40, **REPLAYED)).history)


@pytest.mark.parametrize("patience", [2, 5, 6, 8, 12, 100])
def test_auto_replayed_on_a_fixed_sleep_phase_switches_where_auto_does(
    patience, fixed_sleep_validations
):
    """tools/replay_sleep.py on a 40-step sleep phase's record: the switch of an ``auto`` run
    of the same seed (sleep_cap 40). Its validations first worsen, improve at step 6, then not
    by min_delta: the switches are 2, 5, 12, 14, 18 and the cap."""
    auto = run(config(sleep_steps="auto", sleep_patience=patience, **REPLAYED))
    step, best = replay(fixed_sleep_validations, patience, REPLAYED["min_delta"])
    assert auto.sleep_stopped_by == ("cap" if patience == 100 else "patience")
    assert step == auto.sleep_steps
    assert best == min(
        h["dev_partial_kl"] for h in auto.history if h["step"] <= step and "dev_partial_kl" in h
    )


def test_the_sleep_loss_rule_switches_after_the_first_window_that_gains_under_eps():
    """Windows of 2 steps with means 5, 4, 3.95: the third gains 0.05 < 0.1, so the rule
    switches at its end, step 6; with eps 0.01 none does and the phase runs its steps (the
    unfinished seventh window counts for nothing). The earliest switch is at 2W."""
    losses = [5.5, 4.5, 4.0, 4.0, 3.9, 4.0, 1.0]
    assert loss_switch(losses, 2, 0.1) == 6
    assert loss_switch(losses, 2, 0.01) == 7
    assert loss_switch([5.0, 5.0, 4.95, 4.95, 1.0, 1.0], 2, 0.1) == 4  # the earliest, 2W
    history = [{"step": 0, "dev_partial_kl": 9.0}]
    history += [{"step": k + 1, "loss": v, "phase": "sleep"} for k, v in enumerate(losses)]
    history.append({"step": 8, "loss": 0.5})  # the usual training's
    assert sleep_losses(history) == losses


@pytest.mark.parametrize("named, steps, why", [(("swa",), 6, "cap"), (("swp",), 4, "patience")])
def test_a_sampler_in_sleep_to_cap_sleeps_to_the_cap_whatever_the_validation(named, steps, why):
    """No validation improves: patience 2 ends SWA's sleep at step 4, unless SWA is one of
    ``sleep_to_cap``; then it sleeps to the cap, 6."""
    cfg = config(sleep_steps="auto", sleep_patience=2, sleep_cap=6, lr=1e-9, min_delta=0.1)
    result = run(dataclasses.replace(cfg, sleep_to_cap=named))
    assert (result.sleep_steps, result.sleep_stopped_by) == (steps, why)
