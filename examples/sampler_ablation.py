"""One row of an ablation in docs/results.md ("Where we disagree with 003, measured"): train
samplers with changed settings against the frozen scorer of an existing run, then print their
test partial KL untrained and trained.

    python examples/sampler_ablation.py runs/cipher-small-0 runs/abl-k64 swa sampler.k=64

The new run directory OUT gets a copy of RUN's scorer and n-gram (so every row shares them) and
RUN's task with its settings (``--set``), preset, seed and options, one training seed;
OVERRIDES are further ``--option`` settings. Reads NFST_DATA_DIR and NFST_CACHE_DIR like the
command line. Prints one JSON object.
"""

import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path

from nfst.experiment.config import RunConfig
from nfst.experiment.run import Run


def ablation_config(base: RunConfig, samplers: str, overrides: tuple[str, ...]) -> RunConfig:
    """RUN's configuration with these samplers, one training seed and OVERRIDES added. It keeps
    RUN's task settings (``--set``): they shape the lattices that RUN's scorer was trained on."""
    return dataclasses.replace(base, samplers=tuple(samplers.split(",")), seeds=1,
                               overrides=base.overrides + tuple(overrides)
                               + ("evaluate.log_z_samples=64",))


def main(base: str, out: str, samplers: str, *overrides: str) -> dict:
    where = {"data_dir": os.environ.get("NFST_DATA_DIR"),
             "cache_dir": os.environ.get("NFST_CACHE_DIR", ".nfst-cache")}
    base_run, out_dir = Run.open(base, **where), Path(out)
    (out_dir / "stages").mkdir(parents=True, exist_ok=True)
    for model in ("scorer.pt", "ngram.pt"):
        shutil.copy(Path(base) / model, out_dir / model)
    for stage in ("ngram", "scorer"):
        shutil.copy(Path(base) / "stages" / f"{stage}.json", out_dir / "stages")
    config = ablation_config(base_run.config, samplers, overrides)
    started = time.time()
    run = Run(config, out_dir, **where, quiet=True)
    run.train_samplers()  # then evaluate: stages after training never train
    run.evaluation()
    keys = ("untrained_partial_kl", "partial_kl", "partial_kl_se", "per_pair_partial_kl",
            "untrained_exclusive_kl_lower_bound", "exclusive_kl_lower_bound", "exclusive_kl",
            "exclusive_kl_se", "inclusive_kl", "inclusive_kl_se", "training", "curve",
            "stopped_by", "steps", "best_step")
    results = run.results()
    structure = run.task.structure("test")
    share = [structure.name, f"{structure.name}_se"] if structure else []
    return {"run": out, "task": config.task, "overrides": list(overrides),
            "seconds": time.time() - started,
            "scorer": {k: results["scorer"].get(k) for k in (
                "kind", "test_log_z", "test_log_z_se", "test_log_z_exact", *share)},
            "samplers": {name: {k: metrics.get(k) for k in (*keys, *share)}
                         for name, metrics in results["samplers"].items()}}


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    print(json.dumps(main(*sys.argv[1:])))
