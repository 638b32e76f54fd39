"""One training step of each sampler on the same cipher batch (``nfst bench step``).

A step is what :func:`nfst.train.sampler.train_sampler` does per minibatch: sample k paths per
lattice with gradients, score them with the frozen scorer, the inclusive-KL loss, backward,
clip and an Adam update. Every sampler gets the same batch (16 cipher training lattices, the
first of the task's seeded training subset), the same scorer and the same seeds, in one run.

Reported (milliseconds, the median of ``repeat`` steps after one warm-up step):
``ms_per_step`` per sampler, ``ms_sampler_only`` per sampler (the step minus the scorer's
forward pass, which is the same work for every sampler), and ``swp_over_swa`` (whole steps).
The paper found SWP about 10× slower than SWA (003 App. G).

    python -m nfst.bench.step            # prints the JSON object as its last line
"""

from __future__ import annotations

import statistics
import time
from typing import Sequence

import torch

from ..dp.batch import LatticeBatch
from ..runtime.threads import cpu_threads
from ..train.objectives import inclusive_kl_loss
from ..models.samplers import SamplerConfig, make_sampler
from ..models.scorer import LSTMScorer
from ..tasks import get_task
from .common import cipher_lattices, emit

SAMPLER_NAMES = ("nolookahead", "swa", "sws", "swp", "swp-prefix", "swp-sws")


def bench_step(lattices: int = 16, k: int = 16, d: int = 256, scorer_hidden: int = 256,
               repeat: int = 5, samplers: Sequence[str] = SAMPLER_NAMES,
               device: str = "cpu", seed: int = 0) -> dict:
    """Time one training step (``lattices`` pairs, k paths each) of each sampler; see the
    module docstring. ``d`` is the samplers' hidden size (003: 256)."""
    device = torch.device(device)
    task = get_task("cipher")
    T = task.mfst()
    symbols = T.input_alphabet + T.output_alphabet
    lats = cipher_lattices(lattices)
    batch = LatticeBatch(lats, device)
    vocab = len(lats[0].mark_vocab)
    torch.manual_seed(seed)
    scorer = LSTMScorer(vocab, scorer_hidden).to(device).freeze()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    per_step, sampler_only = {}, {}
    for name in samplers:
        torch.manual_seed(seed)
        sampler = make_sampler(name, vocab, SamplerConfig(d=d), symbols).to(device).train()
        opt = torch.optim.Adam(sampler.parameters(), lr=1e-5)
        generator = torch.Generator(device=device).manual_seed(seed)
        totals, scoring = [], []
        for _ in range(repeat + 1):
            sync()
            t0 = time.perf_counter()
            with cpu_threads(device):
                paths = sampler.sample(batch, k, generator)
                sync()
                t1 = time.perf_counter()
                with torch.no_grad():
                    log_p = scorer.score_paths(paths)
                sync()
                t2 = time.perf_counter()
                loss = inclusive_kl_loss(log_p, paths.log_q)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(sampler.parameters(), 5.0)
                opt.step()
            sync()
            t3 = time.perf_counter()
            totals.append(t3 - t0)
            scoring.append(t2 - t1)
        per_step[name] = 1000 * statistics.median(totals[1:])
        sampler_only[name] = 1000 * statistics.median(t - s for t, s in zip(totals[1:], scoring[1:]))
    result = {
        "benchmark": "step", "device": str(device), "lattices": lattices, "k": k, "d": d,
        "scorer_hidden": scorer_hidden, "states": batch.num_states, "arcs": batch.num_arcs,
        "max_height": batch.max_height, "repeat": repeat,
        "ms_per_step": {n: round(v, 1) for n, v in per_step.items()},
        "ms_sampler_only": {n: round(v, 1) for n, v in sampler_only.items()},
    }
    if "swp" in per_step and "swa" in per_step:
        result["swp_over_swa"] = round(per_step["swp"] / per_step["swa"], 3)
        result["swp_over_swa_sampler_only"] = round(sampler_only["swp"] / sampler_only["swa"], 3)
    return result


if __name__ == "__main__":
    emit(bench_step())
