"""Abstract particles and distinct samples against SMC and the beam (``nfst bench abstract``).

On the first ``pairs`` cipher test lattices, with a trained LSTM scorer and SWA sampler (those of
the run directory ``run_dir``; trained there first, small preset, if missing), for each
M ∈ ``particles``: offset KL (``nfst.smc_eval``) and scorer calls per pair of

- ``abstract``: M distinct paths from the abstract-particle proposal (``nfst.abstract``);
- ``beam``: the M best prefixes;
- ``ps_r``: particle smoothing with the SWA proposal, learned lookahead and resampling;
- ``is``: importance sampling from SWA, M independent paths;
- ``is_wor``: M distinct paths from SWA by stochastic beam search (priority weights).

``z_ratio_mean`` / ``z_ratio_se``: unbiasedness check of the without-replacement Ẑ at
M = ``z_particles``: per pair, the mean of ``z_runs`` estimates divided by a reference Ẑ, the
with-replacement importance-sampling estimate from ``z_reference`` SWA paths (unbiased too);
mean and standard error over pairs of that ratio (1 when both are unbiased).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

from ..evaluate.smc import SMCEvalConfig, evaluate_smc
from ..smc.engine import SMCConfig, smc
from ..smc.without_replacement import distinct_particles
from .common import emit

NAMES = {"abstract": "ABSTRACT", "beam": "BEAM", "ps_r": "PS:R[swa]", "is": "IS[swa]",
         "is_wor": "IS-WOR[swa]"}


def trained_models(run_dir: str | Path, device: str = "cpu"):
    """(run, scorer, SWA sampler) of a cipher run directory, training what is missing."""
    from ..experiment.config import RunConfig
    from ..experiment.run import Run
    path = Path(run_dir)
    if (path / "config.json").exists():
        run = Run.open(path, device=device, quiet=True)
    else:
        run = Run(RunConfig(task="cipher", preset="small", samplers=("swa",)), path,
                  device=device, quiet=True)
    return run, run.scorer(), run.sampler("swa")


def bench_abstract(pairs: int = 16, particles: tuple[int, ...] = (4, 16, 64), runs: int = 2,
                   z_particles: int = 16, z_runs: int = 8, z_reference: int = 1024,
                   run_dir: str = "runs/cipher-small-0", device: str = "cpu",
                   seed: int = 0) -> dict:
    run, scorer, swa = trained_models(run_dir, device)
    lattices = run.lattices("test")[:pairs]
    result = evaluate_smc(swa, scorer, lattices, particles=particles, runs=runs, seed=seed,
                          device=device, train_lattices=run.lattices("train")[:256],
                          config=SMCEvalConfig(batch_size=pairs), only=list(NAMES.values()))
    methods = result["methods"]
    out = {"bench": "abstract", "pairs": len(lattices), "M": list(particles),
           "offset_kl": {k: [round(v, 3) for v in methods[n]["offset_kl"]] for k, n in NAMES.items()},
           "scorer_calls": {k: methods[n]["scorer_calls"] for k, n in NAMES.items()},
           "dedup_ess": {k: [round(v, 3) for v in methods[n]["dedup_ess"]] for k, n in NAMES.items()}}
    ratio = z_ratios(swa, scorer, lattices, z_particles, z_runs, z_reference, seed, device)
    out |= {"z_particles": z_particles, "z_runs": z_runs, "z_reference": z_reference,
            "z_ratio_mean": float(ratio.mean()), "z_ratio_se": float(ratio.std() / math.sqrt(len(ratio)))}
    return out


@torch.no_grad()
def z_ratios(sampler, scorer, lattices, k: int, runs: int, reference: int, seed: int,
             device: str) -> torch.Tensor:
    """(pairs,) mean over ``runs`` of Ẑ_WOR (k distinct paths) / Ẑ_IS (``reference`` paths)."""
    from ..dp.batch import LatticeBatch
    batch = LatticeBatch(lattices, device)
    generator = torch.Generator(device=device).manual_seed(seed + 1)
    ref = smc(batch, sampler, scorer, None, SMCConfig(particles=reference, resample_threshold=0.0),
              generator).log_z
    wor = torch.stack([distinct_particles(sampler, scorer, batch, k, generator).log_z
                       for _ in range(runs)])
    return torch.exp(torch.logsumexp(wor, 0) - math.log(runs) - ref).cpu()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=16)
    p.add_argument("--run-dir", default="runs/cipher-small-0")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    emit(bench_abstract(args.pairs, run_dir=args.run_dir, device=args.device))


if __name__ == "__main__":
    main()
