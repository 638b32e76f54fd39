"""The cipher series of docs/results/disagreements.md ("cipher: the local samplers at chance"):
SWS, SWA, the no-lookahead baseline and sws-mlp (an interaction of the suffix encodings), at
2,000 and 20,000 training pairs, (i) fitted to the generating paths (``examples/cipher_choice.py
supervised``) and (ii) trained as usual against the run's frozen scorer, with SWP beside them
as the reference of the gaps. ``tools/cipher_series.sh OUT`` runs all of it in parallel; its
steps are:

    python tools/cipher_series.py prepare OUT STEPS          # the two runs, compiled
    python tools/cipher_series.py scorer RUN [RUN...]        # the first run's scorer, for all
    python tools/cipher_series.py usual RUN SAMPLER JSON     # train as usual, then measure
    python tools/cipher_series.py summary OUT                # OUT/cipher-series.json, tables

``prepare`` records OUT/runs/c2000 and OUT/runs/c20000: the large preset at that many training
pairs (c20000: ``--set train_size=20000 --option train_pairs=20000``; its first 2,000 pairs
are c2000's), every sampler trained for STEPS steps (patience past the cap, so none stops
early; the parameters of the best validation are kept, as always); both use c2000's n-gram
and scorer, trained first (one target for both sizes). ``usual`` writes one JSON:
the training (steps, best step, validation curve, seconds) and, on training (the first 500),
validation and test pairs, the share of samples that name the generating cipher, the partial
KL (per test pair too) and the generating paths' fit (``cipher_choice.generating_fit``).
``summary`` gathers every job's JSON, adds each sampler's paired gap to SWP on test pairs, and
prints the tables. Reads NFST_CACHE_DIR, SIZES and OPTIONS (further ``--option`` settings of
both runs, e.g. for a quick trial); every job runs on one thread.
"""

import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]
import cipher_choice  # noqa: E402  (the examples are scripts, not a package)

from nfst.evaluate.drawing import draw  # noqa: E402
from nfst.evaluate.metrics import partial_kl  # noqa: E402
from nfst.evaluate.paired_gaps import gap  # noqa: E402
from nfst.experiment.config import RunConfig  # noqa: E402
from nfst.experiment.run import Run  # noqa: E402
from nfst.runtime import storage  # noqa: E402
from nfst.runtime.distributed import stream_seed  # noqa: E402
from tools.checkout import head_commit  # noqa: E402
from tools.cipher_series_tables import tables  # noqa: E402

SIZES = tuple(int(n) for n in os.environ.get("SIZES", "2000 20000").split())
"""Training pairs of the two runs (a smaller pair of sizes makes a quick trial of the script)."""
SAMPLERS = ("nolookahead", "swa", "sws", "sws-mlp", "swp")
MEASURED_TRAIN = 500
"""Training pairs measured: the first 500 (all of them would cost more than the training)."""


def cache_dir() -> str:
    return os.environ.get("NFST_CACHE_DIR", ".nfst-cache")


def prepare(out: str, steps: str) -> None:
    """Record both runs and compile their pairs (the larger first, in every core)."""
    started, cores = time.time(), len(os.sched_getaffinity(0))
    timings = {}
    for size in sorted(SIZES, reverse=True):
        config = RunConfig(
            task="cipher",
            preset="large",
            samplers=SAMPLERS,
            task_settings={"train_size": size},
            overrides=(
                f"train_pairs={size}",
                f"sampler.steps={steps}",
                f"sampler.patience={steps}",
                *os.environ.get("OPTIONS", "").split(),
            ),
        )
        run = Run(
            config,
            Path(out) / "runs" / f"c{size}",
            cache_dir=cache_dir(),
            processes=cores,
            quiet=True,
        )
        run.run_dir.finish("compile", run.stage_compile())
        timings[f"c{size}"] = round(time.time() - started, 1)
    print(json.dumps({"cores": cores, "seconds_after": timings}))


def scorer(run_dir: str, *others: str) -> None:
    """Train the run's n-gram and scorer, and give the ``others`` runs the same ones (so every
    size's samplers learn the same target; the others' records say so in ``scorer.json``).
    On SCORER_DEVICE (default: a GPU if there is one) with SCORER_THREADS intra-op threads
    (default 4); the files are written for the CPU, where the samplers train."""
    device = os.environ.get("SCORER_DEVICE", "cuda" if torch.cuda.is_available() else "cpu")
    torch.set_num_threads(int(os.environ.get("SCORER_THREADS", "4")))
    started = time.time()
    Run.open(run_dir, cache_dir=cache_dir(), device=device, quiet=True).scorer()
    for model in ("scorer.pt", "ngram.pt"):
        saved = storage.load(Path(run_dir) / model)
        saved["state"] = {k: v.cpu() for k, v in saved["state"].items()}
        storage.save(Path(run_dir) / model, saved, durable=True)
    for other in map(Path, others):
        (other / "stages").mkdir(exist_ok=True)
        for model in ("scorer.pt", "ngram.pt"):
            shutil.copy(Path(run_dir) / model, other / model)
        for stage in ("ngram", "scorer"):
            recorded = json.loads((Path(run_dir) / "stages" / f"{stage}.json").read_text())
            recorded["shared_from"] = str(run_dir)
            (other / "stages" / f"{stage}.json").write_text(json.dumps(recorded))
    print(
        json.dumps(
            {
                "run": run_dir,
                "shared_with": others,
                "device": device,
                "threads": torch.get_num_threads(),
                "scorer_seconds": round(time.time() - started, 1),
            }
        )
    )


def measure(run: Run, sampler, lattices: list, seed: int, split: str) -> dict:
    """The share of ``evaluate.k`` samples per pair naming the generating cipher, the partial KL
    (mean, SE over pairs, per pair) and the generating paths' fit, on ``lattices``."""
    samples = draw(sampler, run.scorer(), lattices, run.preset.evaluate.k, seed=seed)
    structure = run.task.structure(split)
    share = [
        structure.share(
            lat, s.arcs, torch.full((len(s.arcs),), 1 / len(s.arcs), dtype=torch.float64)
        )
        for lat, s in zip(lattices, samples)
    ]
    kl = [float(partial_kl(s.log_q, s.log_p)) for s in samples]
    mean = sum(kl) / len(kl)
    se = math.sqrt(sum((v - mean) ** 2 for v in kl) / (len(kl) - 1) / len(kl))
    paths = dict(zip(map(id, run.lattices(split)), cipher_choice.generating_paths(run, split)))
    fit = cipher_choice.generating_fit(sampler, [paths[id(lat)] for lat in lattices])
    return {
        "pairs": len(lattices),
        "generating_cipher": sum(share) / len(share),
        "partial_kl": mean,
        "partial_kl_se": se,
        "per_pair_partial_kl": kl,
    } | fit


def usual(run_dir: str, name: str, out_json: str) -> None:
    """Train ``name`` as the run says, then measure it; the JSON is rewritten after each
    split (test first), so a job stopped by the deadline keeps what it measured."""
    run = Run.open(run_dir, cache_dir=cache_dir(), quiet=True)
    started = time.time()
    sampler = run.train_sampler(name)
    trained = run.done(f"sampler-{name}")
    seed = run.training_seed(0)
    result = {
        "sampler": name,
        "train_pairs": len(run.lattices("train")),
        "steps": trained["steps"],
        "best_step": trained["best_step"],
        "stopped_by": trained["stopped_by"],
        "train_seconds": round(trained["seconds"], 1),
        "curve": [
            [h["step"], h["dev_partial_kl"]] for h in trained["history"] if "dev_partial_kl" in h
        ],
    }
    test = run.lattices("test")
    untrained = draw(
        run.untrained_sampler(name),
        run.scorer(),
        test,
        run.preset.evaluate.k,
        seed=stream_seed(seed, "test"),
    )
    result["untrained_test_partial_kl"] = sum(
        float(partial_kl(s.log_q, s.log_p)) for s in untrained
    ) / len(untrained)
    for split, lattices in (
        ("test", test),
        ("dev", run.lattices("dev")),
        ("train", run.lattices("train")[:MEASURED_TRAIN]),
    ):
        stream = stream_seed(seed, "test" if split == "test" else "validation")
        result[split] = measure(run, sampler, lattices, stream, split)
        result["seconds"] = round(time.time() - started, 1)
        Path(out_json).write_text(json.dumps(result, indent=1))


def summary(out: str) -> None:
    """OUT/cipher-series.json from every job's output, and the tables (markdown) on stdout."""
    jobs = Path(out) / "jobs"
    usual_runs, fitted = {}, {}
    for size in SIZES:
        runs = {
            s: json.loads(p.read_text())
            for s in SAMPLERS
            if (p := jobs / f"usual-{s}-{size}.json").exists()
        }
        kl = {s: r["test"]["per_pair_partial_kl"] for s, r in runs.items() if "test" in r}
        for name, r in runs.items():
            if "swp" in kl and name in kl and name != "swp":
                g = gap([kl[name]], [kl["swp"]])  # one seed: the SE is the pairs'
                r["gap_to_swp"], r["gap_to_swp_se"] = g["mean"], g["se"]
            for split in ("train", "dev", "test"):
                r.get(split, {}).pop("per_pair_partial_kl", None)
        usual_runs[str(size)] = runs
        fitted[str(size)] = {
            s: last_line(p)
            for s in SAMPLERS
            if (p := jobs / f"supervised-{s}-{size}.jsonl").exists()
        }
    result = {
        "command": f"bash tools/cipher_series.sh {out}",
        "commit": head_commit(),
        "machine": os.environ.get("MACHINE", f"{os.cpu_count()} cores"),
        "scorer": f"c{SIZES[0]}'s n-gram and scorer, for every size",
        "fitted_to_generating_paths": fitted,
        "trained_as_usual": usual_runs,
    }
    (Path(out) / "cipher-series.json").write_text(json.dumps(result, indent=1))
    print(tables(result))


def last_line(path: Path) -> dict:
    lines = [line for line in path.read_text().splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


if __name__ == "__main__":
    commands = {"prepare": prepare, "scorer": scorer, "usual": usual, "summary": summary}
    if len(sys.argv) < 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    torch.set_num_threads(1)
    commands[sys.argv[1]](*sys.argv[2:])
