"""Which cipher do a run's samplers pick? The diagnosis in docs/results/disagreements.md,
"cipher: the local samplers at chance".

On cipher, a path's first decision (the ε move ``cipher_i``) picks one of five substitution
ciphers; only the one that generated the pair explains y without many deletions and
insertions.

    python examples/cipher_choice.py picks RUN [SAMPLERS]
    python examples/cipher_choice.py supervised RUN SAMPLER [STEPS] [LR]
    python examples/cipher_choice.py lengths RUN [SAMPLERS] [N]

``picks``: for each sampler of RUN, untrained and trained (the samples of the run's
evaluation: same k per test pair, seed and device), the share of samples that pick the
generating cipher, and the partial KL (003:7) of the samples that do and of those that do not.

``supervised``: the easiest training signal there is. Starting from SAMPLER's untrained
initialisation, maximise log q of the generating paths of RUN's training pairs (all of them:
the run's data size, e.g. 20,000 for a run made with ``--set train_size=20000 --option
train_pairs=20000``; batch 16, Adam, clip 5), and print, at step 0 and every STEPS / 8 steps,
for training (the first 500), validation and test pairs: the mean q of the generating cipher
at its choice, the share of pairs where it is the most probable of the five ciphers there,
and the mean log q of the generating path. If q of the cipher stays at 1/5 on validation and
test pairs, the sampler cannot learn the choice from these pairs even when told the answer;
if it rises on training pairs only, it memorises them.

``lengths``: where sleep training's triples and the test pairs part. For N (default 600)
fresh triples drawn from RUN's scorer (``nfst.train.draw_triples``, training seed 1,000's:
none that a run trains) and for the test pairs, by the length of x: the share of each trained
sampler's samples (k 16) that pick the right cipher, "right" being the cipher of the drawn ω
for a triple (an exact sample of the posterior, so a sampler equal to the posterior scores
Σ_c p(c | x, y)² there) and the generating cipher for a test pair; and how the lengths of x
spread over the triples, the validation and the test pairs. If a sampler picks well on
triples of the test pairs' lengths but not on the test pairs, length is not what parts them.

Reads NFST_CACHE_DIR like the command line. Prints one JSON object per line.
"""

import json
import os
import random
import sys
import time
from collections import Counter

import torch

from nfst.dp.batch import LatticeBatch
from nfst.evaluate.drawing import draw
from nfst.experiment.run import Run
from nfst.fst.compile import compile_lattice
from nfst.models.samplers import route_of_arcs
from nfst.runtime.distributed import stream_seed
from nfst.train.triples import draw_triples


def is_cipher(mark: str) -> bool:
    return mark.startswith("cipher")


def cipher_of(marks) -> str:
    """The cipher a path's marks pick (its first decision)."""
    return next(m for m in marks if is_cipher(m))


def picked(lat, arcs: list[int]) -> str:
    """The cipher of a sampled path: its lattice-local arcs, -1 padded."""
    return cipher_of(lat.marks_of([a for a in arcs if a >= 0]))


def generating_ciphers(run: Run) -> list[str]:
    """The cipher that generated each compiled test pair."""
    return [cipher_of(lat.marks_of(arcs)) for lat, arcs in generating_paths(run, "test")]


def open_run(run_dir: str) -> Run:
    run = Run.open(run_dir, cache_dir=os.environ.get("NFST_CACHE_DIR", ".nfst-cache"), quiet=True)
    if run.config.task != "cipher":
        sys.exit(f"{run_dir} is a {run.config.task} run; this diagnosis needs cipher")
    return run


def generating_paths(run: Run, split: str) -> list:
    """(lattice, arcs of the generating path) for the split's compiled pairs."""
    marks = dict(zip(run.task.pairs(split), run.task.true_marks(split)))
    out = []
    for lat in run.lattices(split):
        index = {mark: i for i, mark in enumerate(lat.mark_vocab)}
        offsets, arc_mark = lat.arc_offsets.tolist(), lat.arc_mark.tolist()
        state, arcs = 0, []
        for mark in marks[(tuple(lat.x), tuple(lat.y))]:  # lattices are deterministic
            arc = next(
                a for a in range(offsets[state], offsets[state + 1]) if arc_mark[a] == index[mark]
            )
            arcs.append(arc)
            state = int(lat.arc_dst[arc])
        out.append((lat, arcs))
    return out


def picks(run_dir: str, samplers: str = "") -> None:
    run = open_run(run_dir)
    test, scorer = run.lattices("test"), run.scorer()
    seed = stream_seed(run.training_seed(0), "test")  # the evaluation's test draws
    truth = generating_ciphers(run)
    for name in samplers.split(",") if samplers else run.config.samplers:
        for state, sampler in (
            ("untrained", run.untrained_sampler(name)),
            ("trained", run.sampler(name)),
        ):
            right, wrong = [], []
            samples = draw(
                sampler, scorer, test, run.preset.evaluate.k, seed=seed, device=run.device
            )
            for lat, pair, cipher in zip(test, samples, truth):
                for arcs, log_q, log_p in zip(
                    pair.arcs.tolist(), pair.log_q.tolist(), pair.log_p.tolist()
                ):
                    (right if picked(lat, arcs) == cipher else wrong).append(log_q - log_p)
            n = len(right) + len(wrong)
            print(
                json.dumps(
                    {
                        "sampler": name,
                        "state": state,
                        "generating_cipher": round(len(right) / n, 3),
                        "partial_kl": round((sum(right) + sum(wrong)) / n, 2),
                        "partial_kl_generating": round(sum(right) / len(right), 2)
                        if right
                        else None,
                        "partial_kl_other": round(sum(wrong) / len(wrong), 2) if wrong else None,
                    }
                ),
                flush=True,
            )


def as_batch(items: list) -> tuple[LatticeBatch, torch.Tensor]:
    """A batch of the items' lattices and their paths as (B, L) batch-global arcs."""
    batch = LatticeBatch([lat for lat, _ in items], "cpu")
    arcs = torch.full((len(items), max(len(p) for _, p in items)), -1, dtype=torch.long)
    for b, (_, path) in enumerate(items):
        arcs[b, : len(path)] = torch.tensor(path) + int(batch.arc_offsets[b])
    return batch, arcs


@torch.no_grad()
def generating_fit(sampler, items: list) -> dict:
    """Over (lattice, generating path) items: the mean q of the generating cipher at its
    choice, the share of items where it is the most probable of the ciphers there (chance:
    1/5), and the mean log q of the generating path (teacher forcing, one pass)."""
    sampler.eval()
    q_cipher, argmax, log_q = [], [], []
    for lo in range(0, len(items), 64):
        chunk = items[lo : lo + 64]
        batch, arcs = as_batch(chunk)
        route = route_of_arcs(batch, torch.arange(len(chunk)), arcs, per_lattice=1)
        lp = sampler.path_log_probs(batch, sampler.prepare(batch), route)  # (B, L + 1, D + 1)
        steps = lp.gather(2, route.choice[..., None])[..., 0]
        steps = torch.where(route.valid, steps, torch.zeros_like(steps))
        for b, (lat, path) in enumerate(chunk):
            t = next(t for t, m in enumerate(lat.marks_of(path)) if is_cipher(m))
            q_cipher.append(float(steps[b, t].exp()))
            arcs = batch.out_arcs[route.states[b, t]].tolist()  # the choice's columns
            ciphers = [
                c
                for c, a in enumerate(arcs)
                if a >= 0 and is_cipher(lat.mark_vocab[int(batch.arc_mark[a])])
            ]
            best = max(ciphers, key=lambda c: float(lp[b, t, c]))
            argmax.append(best == int(route.choice[b, t]))
            log_q.append(float(steps[b].sum()))
    sampler.train()
    return {
        "q_generating_cipher": round(sum(q_cipher) / len(q_cipher), 3),
        "argmax_generating_cipher": round(sum(argmax) / len(argmax), 3),
        "log_q_generating_path": round(sum(log_q) / len(log_q), 2),
    }


def supervised(run_dir: str, name: str, steps: str = "400", lr: str = "3e-3") -> None:
    run = open_run(run_dir)
    steps, started = int(steps), time.time()
    train = generating_paths(run, "train")
    measured = {
        "train": train[:500],
        "dev": generating_paths(run, "dev"),
        "test": generating_paths(run, "test"),
    }
    torch.manual_seed(run.config.seed)
    sampler = run.untrained_sampler(name).train()
    opt = torch.optim.Adam(sampler.parameters(), lr=float(lr))
    rng = random.Random(run.config.seed)

    def report(step: int) -> None:
        fits = {split: generating_fit(sampler, items) for split, items in measured.items()}
        print(
            json.dumps(
                {"sampler": name, "train_pairs": len(train), "step": step}
                | fits
                | {"seconds": round(time.time() - started, 1)}
            ),
            flush=True,
        )

    report(0)
    for step in range(1, steps + 1):
        batch, arcs = as_batch(rng.sample(train, 16))
        loss = -sampler.score(batch, arcs[:, None]).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(sampler.parameters(), 5.0)
        opt.step()
        if step % max(1, steps // 8) == 0:
            report(step)


LENGTHS = ((0, 4), (5, 7), (8, 11), (12, 99))  # buckets of len(x); cipher's test x: 8–17


def bucket(x) -> str:
    lo, hi = next(b for b in LENGTHS if b[0] <= len(x) <= b[1])
    return f"x {lo}-{hi}"


def lengths(run_dir: str, samplers: str = "", n: str = "600") -> None:
    run = open_run(run_dir)
    scorer, T = run.scorer(), run.T
    seed = stream_seed(run.training_seed(1000), "triples")
    drawn = [
        (compile_lattice(T, x, y), cipher_of(marks))
        for x, y, marks in draw_triples(scorer, T, int(n), seed=seed).triples
    ]
    drawn = [(lat, c) for lat, c in drawn if lat.num_arcs]
    sets = {
        "triples": ([lat for lat, _ in drawn], [c for _, c in drawn]),
        "test": (run.lattices("test"), generating_ciphers(run)),
    }
    for split, lats in (
        ("triples", sets["triples"][0]),
        ("dev", run.lattices("dev")),
        ("test", sets["test"][0]),
    ):
        counts = Counter(bucket(lat.x) for lat in lats)
        print(
            json.dumps(
                {
                    "pairs": split,
                    "count": len(lats),
                    "x_length": round(sum(len(lat.x) for lat in lats) / len(lats), 2),
                    "share_by_x": {b: round(c / len(lats), 3) for b, c in sorted(counts.items())},
                }
            ),
            flush=True,
        )
    for name in samplers.split(",") if samplers else run.config.samplers:
        sampler = run.sampler(name)
        for split, (lats, right) in sets.items():
            by: dict[str, list[float]] = {}
            samples = draw(sampler, scorer, lats, 16, seed=1000, device=run.device)
            for lat, pair, cipher in zip(lats, samples, right):
                hits = [picked(lat, arcs) == cipher for arcs in pair.arcs.tolist()]
                by.setdefault(bucket(lat.x), []).append(sum(hits) / len(hits))
            every = [v for values in by.values() for v in values]
            print(
                json.dumps(
                    {
                        "sampler": name,
                        "pairs": split,
                        "right_cipher": round(sum(every) / len(every), 3),
                        "by_x": {
                            b: [round(sum(v) / len(v), 3), len(v)] for b, v in sorted(by.items())
                        },
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    commands = {"picks": picks, "supervised": supervised, "lengths": lengths}
    if len(sys.argv) < 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    torch.set_num_threads(1)
    commands[sys.argv[1]](*sys.argv[2:])
