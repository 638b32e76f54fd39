"""Run by tests/train/test_distributed.py under torchrun: DDP sampler and scorer training, and
training from particles, on 2 CPU ranks."""

import dataclasses
import gc
import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from nfst import compile_lattice
from nfst.errors import Interrupted
from nfst.fsts import deletion_insertion
from nfst.models.samplers import SamplerConfig, Vocabulary, make_sampler
from nfst.models.scorer import ArcFactoredScorer
from nfst.runtime.interrupt import graceful_interrupts
from nfst.smc.engine import SMCConfig
from nfst.smc.lookahead import BetaLookahead
from nfst.train.nasmc import AdaptConfig, adapt
from nfst.train.sampler import SamplerTrainConfig, train_sampler
from nfst.train.scorer import ScorerConfig, train_scorer

dist.init_process_group("gloo")
T = deletion_insertion("ab", "cd")
lats = [compile_lattice(T, x, y) for x, y in [("ab", "c"), ("ba", "dc"), ("a", "cd"), ("b", "d")]]
torch.manual_seed(0)
scorer = ArcFactoredScorer(torch.randn(len(lats[0].mark_vocab) + 1))
cfg = SamplerTrainConfig(
    sampler=SamplerConfig(d=8, dropout=0.1), lr=1e-2, steps=6, batch_size=4, k=4, eval_every=3
)


def train(steps, checkpoint=None, callback=None):
    torch.manual_seed(1)
    s = make_sampler("swa", Vocabulary(lats[0].mark_vocab, "abcd"), cfg.sampler)
    r = train_sampler(
        s,
        scorer,
        lats,
        lats,
        dataclasses.replace(cfg, steps=steps),
        quiet=True,
        checkpoint=checkpoint,
        callback=callback,
    )
    return r, torch.cat([p.detach().flatten() for p in r.sampler.parameters()])


r, flat = train(6)
out = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
dist.all_gather(out, flat)
assert all(torch.equal(out[0], o) for o in out), "parameters differ across ranks"
assert len({round(h["loss"], 6) for h in r.history[1:]}) > 1  # after step 0 (untrained)
# Stopped after 3 steps and resumed, each rank must continue from its own random state.
checkpoint = Path(sys.argv[1]) / "sampler.ckpt"
train(3, checkpoint)
resumed, flat_resumed = train(6, checkpoint)
assert torch.equal(flat_resumed, flat), "a resumed run differs from an uninterrupted one"
if dist.get_rank() == 0:  # the checkpoint keeps rank 0's history of local losses
    assert resumed.history == r.history


def sigterm_on_rank_1_after_step_2(step, record):
    if dist.get_rank() == 1 and step == 2:
        os.kill(os.getpid(), signal.SIGTERM)


# A signal that reaches one rank stops both after the same step, with a checkpoint.
checkpoint = Path(sys.argv[1]) / "interrupted.ckpt"
with graceful_interrupts():
    try:
        train(6, checkpoint, callback=sigterm_on_rank_1_after_step_2)
        raise AssertionError("training was not interrupted")
    except Interrupted:
        pass
resumed, flat_resumed = train(6, checkpoint)
assert len(resumed.history) == 7  # step 0 (untrained) and six steps
assert torch.equal(flat_resumed, flat), "a run resumed after a signal differs"
# The scorer loop too: ranks share every minibatch, stay identical and resume exactly.
scorer_cfg = ScorerConfig(
    hidden=8,
    layers=1,
    steps=4,
    batch_size=4,
    K=4,
    bootstrap=SamplerConfig(d=8, dropout=0.1),
    checkpoint_every=2,
)


def train_p(steps, checkpoint=None):
    r = train_scorer(
        lats,
        dataclasses.replace(scorer_cfg, steps=steps),
        vocabulary=Vocabulary(lats[0].mark_vocab, "abcd"),
        seed=1,
        checkpoint=checkpoint,
        quiet=True,
    )
    return torch.cat([p.detach().flatten() for p in r.scorer.parameters()])


flat_p = train_p(4)
out = [torch.zeros_like(flat_p) for _ in range(dist.get_world_size())]
dist.all_gather(out, flat_p)
assert all(torch.equal(out[0], o) for o in out), "scorer parameters differ across ranks"
checkpoint = Path(sys.argv[1]) / "scorer.ckpt"
train_p(2, checkpoint)
assert torch.equal(train_p(4, checkpoint), flat_p), "a resumed scorer run differs"
# Training from particles: each rank runs SMC on its share of the minibatch, DDP averages.
torch.manual_seed(2)
particles = make_sampler(
    "swa", Vocabulary(lats[0].mark_vocab, "abcd"), SamplerConfig(d=8, dropout=0.0)
)
adapt(
    particles,
    scorer,
    lats,
    AdaptConfig(steps=3, batch_size=4, smc=SMCConfig(particles=4)),
    BetaLookahead.exact(scorer),
    seed=1,
)
flat_a = torch.cat([p.detach().flatten() for p in particles.parameters()])
out = [torch.zeros_like(flat_a) for _ in range(dist.get_world_size())]
dist.all_gather(out, flat_a)
assert all(torch.equal(out[0], o) for o in out), "adapt's parameters differ across ranks"
sys.stdout.write(f"rank {dist.get_rank()} ok\n")  # one write: ranks share the pipe
sys.stdout.flush()
# DDP's reducers live as long as the parameters they hooked: free the models while the
# process group is alive (a reducer destroyed after it aborts the process at exit).
del r, resumed, particles
gc.collect()
dist.destroy_process_group()
