"""Two checkouts' training steps interleaved step by step (not part of the package).

    python tools/step_ab.py OLD_CHECKOUT NEW_CHECKOUT [ROUNDS]

Each checkout gets a worker process (its own ``nfst`` on PYTHONPATH, one thread, freed memory
kept for reuse where the checkout has ``nfst.runtime.memory``, as ``nfst`` commands do) that
builds ``nfst bench step``'s d-256 steppers (``nfst.bench.step._Stepper``: the bench's batch,
scorer and seeds). Then, round by round, each sampler takes one step in each worker, which
goes first alternating, so that both see the same load on a busy machine; round 0 warms up.
Prints one JSON line: the steps' process CPU times (ms) per checkout and sampler, and the new
over the old per round and of the medians. Works with checkouts from ``6c86e50`` on.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

# nfst.bench.step.SAMPLER_NAMES, spelled out: this process imports neither checkout's nfst
NAMES = ("nolookahead", "swa", "sws", "swp", "swp-prefix", "swp-sws")


def worker() -> None:
    """Build the steppers, then time one step per sampler name read from stdin."""
    import torch

    from nfst.bench.common import cipher_lattices
    from nfst.bench.step import _Stepper
    from nfst.dp.batch import LatticeBatch
    from nfst.models import samplers
    from nfst.models.scorer import LSTMScorer
    from nfst.tasks import get_task

    try:
        from nfst.runtime.memory import keep_freed_memory

        keep_freed_memory()
    except ImportError:  # a checkout from before it
        pass
    torch.set_num_threads(1)
    T = get_task("cipher").mfst()
    lats = cipher_lattices(16)
    batch = LatticeBatch(lats, torch.device("cpu"))
    torch.manual_seed(0)
    scorer = LSTMScorer(len(lats[0].mark_vocab), 256).freeze()
    config = samplers.SamplerConfig(d=256)
    if hasattr(samplers, "Vocabulary"):
        args = (samplers.Vocabulary.of(T), config)
    else:  # 6c86e50's signature
        args = (len(lats[0].mark_vocab), config, T.input_alphabet + T.output_alphabet)
    steppers = {
        name: _Stepper(samplers.make_sampler(name, *args), scorer, batch, 16, 0) for name in NAMES
    }
    print("ready", flush=True)
    for line in sys.stdin:
        stepper = steppers[line.strip()]
        stepper.step()
        print(f"{1000 * stepper.totals[-1]:.1f}", flush=True)


def main(old: str, new: str, rounds: int) -> dict:
    if rounds < 1:
        raise SystemExit("ROUNDS must be at least 1 (round 0 only warms up)")
    procs = {}
    for side, tree in (("old", old), ("new", new)):
        env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OMP_NUM_THREADS="1")
        procs[side] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker"],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert procs[side].stdout.readline().strip() == "ready"
    times = {side: {name: [] for name in NAMES} for side in procs}
    for r in range(rounds + 1):
        for i, name in enumerate(NAMES):
            for side in ("old", "new") if (r + i) % 2 == 0 else ("new", "old"):
                procs[side].stdin.write(name + "\n")
                procs[side].stdin.flush()
                times[side][name].append(float(procs[side].stdout.readline()))
    for proc in procs.values():
        proc.stdin.close()
        proc.wait()
    old_t, new_t = times["old"], times["new"]
    return {
        "old": old_t,
        "new": new_t,
        "rounds": rounds,
        "new_over_old": {
            n: [round(a / b, 3) for a, b in zip(new_t[n][1:], old_t[n][1:])] for n in NAMES
        },
        "median_new_over_old": {
            n: round(statistics.median(new_t[n][1:]) / statistics.median(old_t[n][1:]), 3)
            for n in NAMES
        },
    }


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        print(
            json.dumps(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 4))
        )
