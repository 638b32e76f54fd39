"""Abstract particles and distinct samples against SMC and the beam (``nfst bench abstract``).

On the first ``pairs`` cipher test lattices, with a trained LSTM scorer and proposal sampler
(SWA by default; those of the run directory ``run_dir``, trained there first, small preset, if
missing), for each M ∈ ``particles``: offset KL (``nfst.evaluate.smc``) and scorer calls per
pair of

- ``abstract``: M distinct paths from the abstract-particle proposal (``nfst.smc.abstract``);
- ``beam``: the M best prefixes;
- ``ps_r``: particle smoothing with the sampler as proposal, learned lookahead, resampling;
- ``is``: importance sampling from the sampler, M independent paths;
- ``is_wor``: M distinct paths from the sampler by stochastic beam search (priority weights).

``dedup_ess``: per method and M, from the SMC evaluation. ``ess_k``: the evaluation's
deduplicated ESS at k = ``ess_k`` (``nfst.evaluate.samplers``) with replacement (``ess``) and
without (``ess_wor``), for the sampler and for the abstract proposal.

``z_ratio_mean`` / ``z_ratio_se``: unbiasedness of the without-replacement Ẑ of the sampler at
k = ``z_particles``: per pair, the mean of ``z_runs`` estimates divided by a reference Ẑ, the
importance-sampling estimate from ``z_reference`` paths of the abstract proposal (unbiased
and far less noisy); mean and standard error over pairs of that ratio (1 when unbiased).
``z_ratio_abstract_*``: the same for distinct paths of the abstract proposal.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

from ..dp.batch import LatticeBatch
from ..evaluate.samplers import evaluate
from ..evaluate.smc import SMCEvalConfig, evaluate_smc
from ..smc.abstract import fit_abstract_proposal
from ..smc.engine import SMCConfig, smc
from ..smc.without_replacement import distinct_particles
from .common import emit


def trained_models(run_dir: str | Path, sampler: str, device: str = "cpu"):
    """(run, scorer, sampler) of a cipher run directory, training what is missing."""
    from ..experiment.config import RunConfig
    from ..experiment.run import Run

    path = Path(run_dir)
    if (path / "config.json").exists():
        run = Run.open(path, device=device, quiet=True)
    else:
        run = Run(
            RunConfig(task="cipher", preset="small", samplers=(sampler,)),
            path,
            device=device,
            quiet=True,
        )
    return run, run.scorer(), run.train_sampler(sampler)


def bench_abstract(
    pairs: int = 16,
    particles: tuple[int, ...] = (4, 16, 64),
    runs: int = 2,
    sampler: str = "swa",
    ess_k: int = 16,
    z_particles: int = 16,
    z_runs: int = 16,
    z_reference: int = 1024,
    run_dir: str = "runs/cipher-small-0",
    device: str = "cpu",
    seed: int = 0,
) -> dict:
    run, scorer, proposal = trained_models(run_dir, sampler, device)
    lattices = run.lattices("test")[:pairs]
    train = run.lattices("train")[:256]
    config = SMCEvalConfig(batch_size=pairs)
    out = {"bench": "abstract", "pairs": len(lattices), "M": list(particles), "sampler": sampler}
    out |= _methods(
        proposal, scorer, lattices, train, sampler, particles, runs, config, seed, device
    )
    abstract = fit_abstract_proposal(
        scorer,
        proposal,
        train,
        paths=config.abstract_fit_paths,
        batch_size=pairs,
        seed=seed,
        device=device,
    )
    ess = evaluate(
        {sampler: proposal, "abstract": abstract},
        scorer,
        lattices,
        k=ess_k,
        batch_size=pairs,
        seed=seed,
        device=device,
        quiet=True,
    )["samplers"]
    out["ess_k"] = {
        "k": ess_k,
        **{
            name: {"ess": round(m["ess"], 3), "ess_wor": round(m["ess_wor"], 3)}
            for name, m in ess.items()
        },
    }
    return out | _unbiasedness(
        proposal, abstract, scorer, lattices, z_particles, z_runs, z_reference, device, seed
    )


def _methods(
    proposal, scorer, lattices, train, sampler, particles, runs, config, seed, device
) -> dict:
    """Offset KL, scorer calls and deduplicated ESS of each method (``nfst.evaluate.smc``), per
    M of ``particles``."""
    names = {
        "abstract": "ABSTRACT",
        "beam": "BEAM",
        "ps_r": f"PS:R[{sampler}]",
        "is": f"IS[{sampler}]",
        "is_wor": f"IS-WOR[{sampler}]",
    }
    result = evaluate_smc(
        proposal,
        scorer,
        lattices,
        particles=particles,
        runs=runs,
        seed=seed,
        device=device,
        train_lattices=train,
        config=config,
        only=list(names.values()),
    )
    methods = result["methods"]
    return {
        "offset_kl": {k: [round(v, 3) for v in methods[n]["offset_kl"]] for k, n in names.items()},
        "scorer_calls": {k: methods[n]["scorer_calls"] for k, n in names.items()},
        "dedup_ess": {k: [round(v, 3) for v in methods[n]["dedup_ess"]] for k, n in names.items()},
    }


def _unbiasedness(
    proposal, abstract, scorer, lattices, z_particles, z_runs, z_reference, device, seed
) -> dict:
    """``z_ratio_*`` (of ``proposal``) and ``z_ratio_abstract_*`` (of ``abstract``): the mean
    and standard error over pairs of :func:`z_ratios`, against the importance-sampling Ẑ of
    ``z_reference`` paths of ``abstract``."""
    batch = LatticeBatch(lattices, device)
    generator = torch.Generator(device=device).manual_seed(seed + 1)
    with torch.no_grad():
        ref = smc(
            batch,
            abstract,
            scorer,
            None,
            SMCConfig(particles=z_reference, resample_threshold=0.0),
            generator,
        ).log_z
    out = {"z_particles": z_particles, "z_runs": z_runs, "z_reference": z_reference}
    for key, source in (("z_ratio", proposal), ("z_ratio_abstract", abstract)):
        ratio = z_ratios(source, scorer, batch, ref, z_particles, z_runs, generator)
        out |= {
            f"{key}_mean": float(ratio.mean()),
            f"{key}_se": float(ratio.std() / math.sqrt(len(ratio))),
        }
    return out


@torch.no_grad()
def z_ratios(
    sampler,
    scorer,
    batch: LatticeBatch,
    log_ref: torch.Tensor,
    k: int,
    runs: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """(pairs,) mean over ``runs`` of Ẑ_WOR (k distinct paths) / exp(``log_ref``)."""
    wor = torch.stack(
        [distinct_particles(sampler, scorer, batch, k, generator).log_z for _ in range(runs)]
    )
    return torch.exp(torch.logsumexp(wor, 0) - math.log(runs) - log_ref).cpu()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=16)
    p.add_argument("--sampler", default="swa")
    p.add_argument("--run-dir", default="runs/cipher-small-0")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    emit(bench_abstract(args.pairs, sampler=args.sampler, run_dir=args.run_dir, device=args.device))


if __name__ == "__main__":
    main()
