"""Seconds per sleep step with a run's preset, on its frozen scorer, with whichever nfst this
interpreter imports (run it with an older checkout's interpreter for the figures before).
The samplers SAMPLERS (default: swa twice) one after the other on the same triples, as a run
trains them (the later ones read the lattice cache where the code has one); a step's time
includes compiling its triples, so the first sampler's includes all the compiling.

    python tools/sleep_step.py RUN_DIR STEPS OUT.json [SAMPLERS]   # the JSON also printed

DEVICE (default cpu) names the device the samplers train on (tools/device_sleep.sh: cuda).
"""

import dataclasses
import json
import os
import sys
import tempfile
import time

import torch

from nfst.experiment.run import Run
from nfst.train.sampler import train_sampler
from nfst.train.sleep import TripleFeed
from nfst.train.triples import draw_triples

run_dir, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names = (sys.argv[4] if len(sys.argv) > 4 else "swa,swa").split(",")
device = os.environ.get("DEVICE", "cpu")
torch.set_num_threads(1)
run = Run.open(run_dir, quiet=True, processes=2)
scorer, T = run.scorer(), run.T
config = dataclasses.replace(run.preset.sampler, sleep_steps=steps, steps=1, eval_every=10**6)
drawn = draw_triples(scorer, T, steps * config.batch_size, seed=1)
triples = getattr(drawn, "triples", drawn)
train, dev = run.lattices("train"), run.lattices("dev")[:8]
cache = tempfile.mkdtemp()
result = {"steps": steps, "batch_size": config.batch_size, "device": device, "samplers": []}
for k, name in enumerate(names):
    try:
        feed = TripleFeed(T, triples, cache_dir=cache, processes=2)
    except TypeError:  # before: one background process, no cache
        feed = TripleFeed(T, triples)
    stamps = {}

    def tick(step, record, stamps=stamps):
        stamps[step] = time.perf_counter()

    torch.manual_seed(k)
    sampler = run.untrained_sampler(name, k)
    started = time.perf_counter()  # the first step's compiling counts; so does step 0's
    train_sampler(
        sampler,
        scorer,
        train,
        dev,
        config,
        seed=k,
        device=device,
        quiet=True,
        callback=tick,
        triples=feed,
    )
    feed.close()
    result["samplers"].append(
        {  # validation of 8 dev pairs (the same for all) included
            "sampler": name,
            "seconds_per_sleep_step": (stamps[steps] - started) / steps,
            "after_the_first": (stamps[steps] - stamps[1]) / (steps - 1),
        }
    )
print(json.dumps(result))
open(out, "w").write(json.dumps(result))
