"""GPU checks of the walk for tools/device_check.sh (not part of the package, not run by tests).

    python3 tools/device_train.py graph             # captured walk == uncaptured walk, log q
    python3 tools/device_train.py train STEPS NAME...  # ms per training step, paper sizes

``graph``: for every registered sampler (float64, dropout on, small test lattices), the static
walk captured as a CUDA graph draws exactly the paths and log q of the same walk launched step
by step (the same noise), its log q equals the teacher-forced log q (1e-9), and a capture
really happened. ``train``: ``train_sampler`` for STEPS steps of each sampler at 003's sizes
(d 256, 16 pairs × k 16, lr 1e-5, a frozen random LSTM scorer of hidden 256, cipher
lattices), timing each step; prints one JSON line per sampler with the median ms per step
(steps 10 on) and what 20,000 steps (the paper preset's cap) would take.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch

from nfst.bench.common import cipher_lattices
from nfst.dp.batch import LatticeBatch
from nfst.models.samplers import (
    SAMPLERS,
    SamplerConfig,
    Vocabulary,
    WalkRecord,
    graph,
    make_sampler,
)
from nfst.models.scorer import LSTMScorer
from nfst.tasks import get_task
from nfst.train.sampler import SamplerTrainConfig, train_sampler

DEVICE = torch.device(os.environ.get("DEVICE", "cuda"))  # DEVICE=cpu: try the tool here


def check_graph() -> None:
    from tests.helpers.lattices import cipher_lattice, del_ins_lattices
    from tests.helpers.samplers import dropout_sampler

    lats = [cipher_lattice()] + del_ins_lattices()
    batch = LatticeBatch(lats, DEVICE)
    B, k = len(lats), 8
    lattice = torch.arange(B, device=DEVICE).repeat_interleave(k)
    out = {}
    for name in sorted(SAMPLERS):
        sampler = dropout_sampler(name, lats).to(DEVICE)
        walks = {}
        for capture in (False, True):
            torch.manual_seed(1)
            context = sampler.prepare(batch)
            record = WalkRecord(B * k, static=True)
            with torch.no_grad():
                walks[capture] = graph.static_walk(
                    sampler,
                    batch,
                    context,
                    lattice,
                    k,
                    torch.Generator(DEVICE).manual_seed(2),
                    batch.max_height,
                    record,
                    capture=capture,
                )
            forced = sampler._route_log_q(batch, context, walks[capture][0], record)
        (_, arcs, walked), (_, arcs0, walked0) = walks[True], walks[False]
        out[name] = {
            "same_arcs": bool(torch.equal(arcs, arcs0)),
            "same_log_q": float((walked - walked0).abs().max()),
            "walk_vs_forced": float((walked - forced.detach()).abs().max()),
            "captured": captured(),
        }
    print(json.dumps({"check": "graph", **out}), flush=True)


def captured() -> bool:
    """Whether a walk on DEVICE was captured as a CUDA graph, and none failed to be."""
    return any(d.type == DEVICE.type for d in graph._GRAPHS) and not graph._FAILED


class _Enough(Exception):
    pass


def time_training(steps: int, names: list[str]) -> None:
    seconds = float(os.environ.get("SECONDS_PER_SAMPLER", 60))  # then stop that sampler
    task = get_task("cipher")
    T = task.mfst()
    lats = cipher_lattices(272, processes=8, cache_dir=os.environ.get("CACHE_DIR"))
    train, dev = lats[:256], lats[256:]
    vocab = len(lats[0].mark_vocab)
    torch.manual_seed(0)
    scorer = LSTMScorer(vocab, 256).freeze()
    for name in names:
        sampler = make_sampler(name, Vocabulary.of(T), SamplerConfig(d=256))
        config = SamplerTrainConfig(steps=steps, sampler=sampler.config, eval_every=10**6)
        clock: list[float] = []
        start = time.perf_counter()

        def tick(step: int, record: dict, clock=clock, start=start) -> None:
            clock.append(time.perf_counter())
            if clock[-1] - start > seconds:
                raise _Enough

        try:
            train_sampler(
                sampler, scorer, train, dev, config, device=DEVICE, quiet=True, callback=tick
            )
        except _Enough:
            pass
        gaps = [b - a for a, b in zip(clock, clock[1:])][9:]
        ms = 1000 * statistics.median(gaps) if gaps else float("nan")
        print(
            json.dumps(
                {
                    "train": name,
                    "d": 256,
                    "steps": len(clock),
                    "ms_per_step": round(ms, 1),
                    "minutes_per_20000_steps": round(20000 * ms / 60000, 1),
                    "wall_s": round(time.perf_counter() - start, 1),
                    "static_walk": sampler.walks_statically(LatticeBatch(dev[:1], DEVICE)),
                    "captured": captured(),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    if sys.argv[1] == "graph":
        check_graph()
    else:
        time_training(int(sys.argv[2]), sys.argv[3:])
