"""One training step of each sampler on the same cipher batch (``nfst bench step``).

A step is what :func:`nfst.train.sampler.train_sampler` does per minibatch: sample k paths per
lattice with gradients, score them with the frozen scorer, the inclusive-KL loss, backward,
clip and an Adam update. Every sampler gets the same batch (16 cipher training lattices, the
first of the task's seeded training subset), the same scorer and the same seeds, in one run.

Reported (milliseconds, the median of ``repeat`` steps after one warm-up step, the
samplers taking turns; see ``_Stepper`` for the clock), for each
hidden size in ``dims`` (003's 256 and the small preset's 64): ``ms_per_step`` per sampler,
``ms_sampler_only`` per sampler (the step minus the scorer's forward pass, which is the same
work for every sampler), ``over_swp`` (each sampler's step over SWP's, measured in the same
run) and ``swp_over_swa``. The paper found SWP about 10× slower than SWA (003 App. G).

    nfst bench step [--device cuda]     # prints the JSON object as its last line
"""

from __future__ import annotations

import statistics
import time
from typing import Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..runtime.threads import cpu_threads
from ..train.objectives import inclusive_kl_loss
from ..models.samplers import SamplerConfig, make_sampler
from ..models.scorer import LSTMScorer
from ..tasks import get_task
from .common import cipher_lattices, emit

SAMPLER_NAMES = ("nolookahead", "swa", "sws", "swp", "swp-prefix", "swp-sws")


def bench_step(lattices: int = 16, k: int = 16, dims: Sequence[int] = (256, 64),
               scorer_hidden: int = 256, repeat: int = 5, samplers: Sequence[str] = SAMPLER_NAMES,
               device: str = "cpu", seed: int = 0, cache_dir: Optional[str] = None) -> dict:
    """Time one training step (``lattices`` pairs, k paths each) of each sampler at each
    hidden size in ``dims``; see the module docstring."""
    device = torch.device(device)
    task = get_task("cipher")
    T = task.mfst()
    symbols = T.input_alphabet + T.output_alphabet
    lats = cipher_lattices(lattices, cache_dir=cache_dir)
    batch = LatticeBatch(lats, device)
    vocab = len(lats[0].mark_vocab)
    torch.manual_seed(seed)
    scorer = LSTMScorer(vocab, scorer_hidden).to(device).freeze()
    result = {"benchmark": "step", "device": str(device), "lattices": lattices, "k": k,
              "scorer_hidden": scorer_hidden, "states": batch.num_states, "arcs": batch.num_arcs,
              "max_height": batch.max_height, "repeat": repeat}
    for d in dims:
        steppers = {name: _Stepper(make_sampler(name, vocab, SamplerConfig(d=d), symbols),
                                   scorer, batch, k, seed) for name in samplers}
        for _ in range(repeat + 1):  # round robin: a busy machine slows every sampler alike
            for stepper in steppers.values():
                stepper.step()
        per_step = {n: 1000 * statistics.median(s.totals[1:]) for n, s in steppers.items()}
        sampler_only = {n: 1000 * statistics.median(t - c for t, c in
                                                     zip(s.totals[1:], s.scoring[1:]))
                        for n, s in steppers.items()}
        at_d = {"ms_per_step": {n: round(v, 1) for n, v in per_step.items()},
                "ms_sampler_only": {n: round(v, 1) for n, v in sampler_only.items()}}
        if "swp" in per_step:
            at_d["over_swp"] = {n: round(v / per_step["swp"], 2) for n, v in per_step.items()}
            if "swa" in per_step:
                at_d["swp_over_swa"] = round(per_step["swp"] / per_step["swa"], 3)
        result[f"d{d}"] = at_d
    return result


class _Stepper:
    """Training steps of one sampler, timed: wall-clock on a GPU (synchronised), this
    process's CPU time on a CPU (one thread, so the same on an idle machine, and not
    inflated by other processes on a shared one)."""

    def __init__(self, sampler, scorer, batch: LatticeBatch, k: int, seed: int):
        torch.manual_seed(seed)
        self.device = batch.device
        self.sampler = sampler.to(self.device).train()
        self.scorer, self.batch, self.k = scorer, batch, k
        self.opt = torch.optim.Adam(self.sampler.parameters(), lr=1e-5)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.totals: list[float] = []
        self.scoring: list[float] = []

    def clock(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return time.perf_counter()
        return time.process_time()

    def step(self) -> None:
        t0 = self.clock()
        with cpu_threads(self.device):
            paths = self.sampler.sample(self.batch, self.k, self.generator)
            t1 = self.clock()
            with torch.no_grad():
                log_p = self.scorer.score_paths(paths)
            t2 = self.clock()
            loss = inclusive_kl_loss(log_p, paths.log_q)
            self.opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.sampler.parameters(), 5.0)
            self.opt.step()
        self.totals.append(self.clock() - t0)
        self.scoring.append(t2 - t1)


if __name__ == "__main__":
    emit(bench_step())
