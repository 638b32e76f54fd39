"""Which cipher do a run's samplers pick? The diagnosis behind the README's training section.

On cipher, a path's first decision (the ε move ``cipher_i``) picks one of five substitution
ciphers; only the one that generated the pair explains y without many deletions and
insertions. This prints, for each sampler of RUN, untrained and trained (the samples of the
run's evaluation: same k per test pair, seed and device): the share of samples that pick the
generating cipher, and the partial KL (003:7) of the samples that do and of those that do not.

    python examples/cipher_choice.py runs/cipher-small-0 [SAMPLERS]

Reads NFST_CACHE_DIR like the command line. Prints one JSON object per sampler and state.
"""

import json
import os
import sys

from nfst.evaluate.samplers import draw
from nfst.experiment.run import Run


def cipher_of(marks) -> str:
    return next(m for m in marks if m.startswith("cipher"))


def main(run_dir: str, samplers: str = "") -> None:
    run = Run.open(run_dir, cache_dir=os.environ.get("NFST_CACHE_DIR", ".nfst-cache"))
    if run.config.task != "cipher":
        sys.exit(f"{run_dir} is a {run.config.task} run; this diagnosis needs cipher")
    test, scorer = run.lattices("test"), run.scorer()
    generated = dict(zip(run.task.pairs("test"), run.task.true_marks("test")))
    truth = [cipher_of(generated[(tuple(lat.x), tuple(lat.y))]) for lat in test]
    for name in (samplers.split(",") if samplers else run.config.samplers):
        for state, sampler in (("untrained", run.untrained_sampler(name)),
                               ("trained", run.sampler(name))):
            right, wrong = [], []
            for lat, samples, cipher in zip(test, draw(sampler, scorer, test, run.config.eval_k,
                                                           seed=run.config.seed, device=run.device), truth):
                for arcs, log_q, log_p in zip(samples.arcs.tolist(), samples.log_q.tolist(),
                                              samples.log_p.tolist()):
                    picked = cipher_of(lat.marks_of([a for a in arcs if a >= 0]))
                    (right if picked == cipher else wrong).append(log_q - log_p)
            n = len(right) + len(wrong)
            print(json.dumps({
                "sampler": name, "state": state, "generating_cipher": round(len(right) / n, 3),
                "partial_kl": round((sum(right) + sum(wrong)) / n, 2),
                "partial_kl_generating": round(sum(right) / len(right), 2) if right else None,
                "partial_kl_other": round(sum(wrong) / len(wrong), 2) if wrong else None}),
                flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(*sys.argv[1:])
