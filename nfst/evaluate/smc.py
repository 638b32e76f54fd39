"""Evaluating SMC samplers: offset KL against the number of particles M (000 §7, Fig. 2).

For each method and each M ∈ {8, 16, 32, 64, 128}, ``runs`` independent SMC runs on every
evaluation pair give weighted particles p̂; per pair, in nats, their partial KL and offset KL
(000:34, §7.1), ESS and deduplicated ESS, log Ẑ and Pareto k̂ (``nfst.evaluate.offset_kl``
says how each is computed, and above which k̂ a method's figures at that M are unreliable).

Methods (the names of the returned dict):

- ``PF``, ``PF:R``: 000's particle filter — proposal q ∝ p_θ over the lattice's legal marks
  (``LookaheadProposal`` with C = 0), without / with resampling;
- ``PS``, ``PS:R``: 000's particle smoother — proposal q ∝ p_θ · exp(C) (000:26) and C in
  the weights (000:31), without / with resampling;
- ``BEAM``: the M best prefixes (000 §7.2), weighted by p̃_θ;
- ``IS[name]``: the given trained sampler, importance sampling (no lookahead, no resampling);
- ``PS:R[name]``: the same sampler as proposal with C in the weights and resampling;
- ``IS-WOR[name]``: M distinct paths from the sampler by stochastic beam search, weighted by
  priority sampling (``nfst.smc.without_replacement``);
- ``ABSTRACT``: M distinct paths from the abstract-particle proposal (``nfst.smc.abstract``:
  top-k regions per lattice state plus a catch-all, under a mark n-gram fitted to the scorer
  on the sampler's paths), weighted by priority sampling.

Each method's cost is reported as scorer calls per pair (``nfst.models.scorer_calls``):
next-mark distributions of live prefixes, |ω| + 1 for a scored path; IS-WOR and ABSTRACT score
their distinct paths over each pair's prefix tree, one call per distinct prefix, so at equal M
they cost less (the plot shows offset KL against calls as well as against M).

C is a :class:`~nfst.smc.lookahead.LearnedLookahead` fitted by regression on the trained
sampler's particles (``nfst.smc.fitting.fit_lookahead``) unless one is given. Resampling is
adaptive (ESS < M/2, 000 fn. 9), multinomial by default as in 000.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional, Sequence

import torch
from tqdm.auto import tqdm

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..models.samplers.base import Sampler
from ..models.scorer import Scorer
from ..models.scorer_calls import CountingScorer
from ..runtime.distributed import item_seed, shared_map
from ..smc.abstract import AbstractConfig, fit_abstract_proposal
from ..smc.beam import beam_search
from ..smc.engine import Particles, SMCConfig, smc
from ..smc.fitting import fit_lookahead
from ..smc.lookahead import LearnedLookahead, Lookahead, LookaheadProposal, ZeroLookahead
from ..smc.without_replacement import distinct_particles
from .offset_kl import pair_stats, summarise_methods
from .tables import text_table

PARTICLES = (8, 16, 32, 64, 128)


@dataclass
class SMCEvalConfig:
    particles: tuple[int, ...] = PARTICLES
    runs: int = 2
    """Independent runs per method and M (≥ 2 for the variance of log Ẑ)."""
    resample_threshold: float = 0.5
    resampling: str = "multinomial"
    batch_size: int = 16
    """Pairs per SMC call."""
    lookahead_steps: int = 100
    """Regression steps of the learned lookahead (when none is given)."""
    lookahead_particles: int = 16
    abstract_regions: int = 4
    """k of the ABSTRACT method: concrete-history regions kept per lattice state."""
    abstract_depth: int = 2
    """d of the ABSTRACT method: marks of history a region keeps."""
    abstract_fit_paths: int = 4
    """Sampler paths per lattice for fitting the ABSTRACT method's mark n-gram."""


Draw = Callable[[LatticeBatch, int, torch.Generator], Particles]


def methods(
    sampler: Sampler,
    scorer: Scorer,
    lookahead: Lookahead,
    config: SMCEvalConfig,
    abstract: Optional[Sampler] = None,
) -> dict[str, Draw]:
    """The methods of the module docstring, each ``draw(batch, M, generator) -> Particles``
    (``ABSTRACT`` only when its proposal ``abstract`` is given)."""
    pf = LookaheadProposal(scorer, ZeroLookahead())
    ps = LookaheadProposal(scorer, lookahead)
    name = sampler.name or type(sampler).__name__

    def run(proposal, look, tau):
        def draw(batch, M, generator):
            cfg = SMCConfig(particles=M, resample_threshold=tau, resampling=config.resampling)
            return smc(batch, proposal, scorer, look, cfg, generator)

        return draw

    tau = config.resample_threshold
    return {
        "PF": run(pf, None, 0.0),
        "PF:R": run(pf, None, tau),
        "PS": run(ps, lookahead, 0.0),
        "PS:R": run(ps, lookahead, tau),
        "BEAM": lambda batch, M, generator: beam_search(batch, scorer, M),
        f"IS[{name}]": run(sampler, None, 0.0),
        f"PS:R[{name}]": run(sampler, lookahead, tau),
        f"IS-WOR[{name}]": lambda batch, M, generator: distinct_particles(
            sampler, scorer, batch, M, generator
        ),
    } | (
        {}
        if abstract is None
        else {
            "ABSTRACT": lambda batch, M, generator: distinct_particles(
                abstract, scorer, batch, M, generator
            )
        }
    )


def evaluate_smc(
    sampler: Sampler,
    scorer: Scorer,
    lattices: Sequence[Lattice],
    *,
    particles: Sequence[int] = PARTICLES,
    runs: Optional[int] = None,
    seed: int = 0,
    device: str | torch.device = "cpu",
    lookahead: Optional[Lookahead] = None,
    train_lattices: Optional[Sequence[Lattice]] = None,
    config: Optional[SMCEvalConfig] = None,
    quiet: bool = True,
    only: Optional[Sequence[str]] = None,
) -> dict:
    """Offset KL and friends for every method at every M; a JSON-serialisable dict

        {"M": [...], "pairs": n, "runs": r, "methods": {name: {"offset_kl": [per M], ...}},
         "z_paths": mean |𝒴| per pair, "lookahead": {...}, "config": {...}}

    ``lookahead``: C for the smoothing methods; default a LearnedLookahead fitted on
    ``train_lattices`` (default: the evaluation lattices themselves — no labels are used,
    only the scorer and the sampler); the ABSTRACT method's n-gram is fitted there too.
    ``only``: the names of the methods to run (default all)."""
    config = config if config is not None else SMCEvalConfig()
    config = SMCEvalConfig(
        **(
            asdict(config)
            | {"particles": tuple(particles)}
            | ({"runs": runs} if runs is not None else {})
        )
    )
    device = torch.device(device)
    sampler, scorer = sampler.to(device).eval(), scorer.to(device).eval()
    fit_on = list(train_lattices or lattices)
    lookahead, look_info = _lookahead(
        lookahead, sampler, scorer, fit_on, config, seed, device, quiet
    )
    abstract, look_info["abstract_fit_seconds"] = _abstract(
        sampler, scorer, fit_on, config, seed, device
    )
    counter = CountingScorer(scorer)
    every = methods(sampler, counter, lookahead, config, abstract)
    # a method's seed is its place among all methods, so `only` does not change its samples
    seeds = {name: i for i, name in enumerate(every)}
    draws = {name: draw for name, draw in every.items() if only is None or name in only}
    batches = [
        LatticeBatch(list(lattices[i : i + config.batch_size]), device)
        for i in range(0, len(lattices), config.batch_size)
    ]
    units, done = _run_units(draws, seeds, batches, config, seed, device, counter, quiet)
    methods_out, z_paths = summarise_methods(
        units, done, [b.batch_size for b in batches], config.particles
    )
    return {
        "M": list(config.particles),
        "pairs": len(lattices),
        "runs": config.runs,
        "methods": methods_out,
        "z_paths": z_paths,
        "lookahead": look_info,
        "config": asdict(config) | {"particles": list(config.particles)},
        "units": "nats",
    }


def _abstract(
    sampler: Sampler,
    scorer: Scorer,
    lattices: list[Lattice],
    config: SMCEvalConfig,
    seed: int,
    device: torch.device,
) -> tuple[Sampler, float]:
    """The ABSTRACT method's proposal, its mark n-gram fitted on ``lattices`` to the scorer on
    the sampler's paths, and the seconds the fit took."""
    started = time.time()
    abstract = fit_abstract_proposal(
        scorer,
        sampler,
        lattices,
        AbstractConfig(config.abstract_regions, config.abstract_depth),
        config.abstract_fit_paths,
        config.batch_size,
        item_seed(seed, "abstract"),
        device,
    )
    return abstract, round(time.time() - started, 2)


def _run_units(
    draws: dict[str, Draw],
    seeds: dict[str, int],
    batches: list[LatticeBatch],
    config: SMCEvalConfig,
    seed: int,
    device: torch.device,
    counter: CountingScorer,
    quiet: bool,
) -> tuple[list[tuple], list[tuple]]:
    """Every method of ``draws`` at every M, ``config.runs`` times (the beam once), on every
    minibatch: the units (name, M, run, minibatch) and what each gave (its per-pair rows and
    paths found, ``nfst.evaluate.offset_kl.pair_stats``; its seconds and scorer calls)."""
    # One unit of work per (method, M, run, minibatch), with its own generator: under torchrun
    # the ranks share the units, with the results one process would get.
    units = [
        (name, M, r, i)
        for name in draws
        for M in config.particles
        for r in range(config.runs if name != "BEAM" else 1)
        for i in range(len(batches))
    ]
    bar = tqdm(total=len(units), desc="smc", unit="batch", disable=quiet)

    def run_unit(unit: tuple) -> tuple[list[tuple], list[dict], float, int]:
        name, M, r, i = unit
        bar.set_postfix_str(f"{name} M={M}")
        started, counter.calls = time.time(), 0
        generator = torch.Generator(device=device).manual_seed(
            item_seed(seed, seeds[name], M, r, i)
        )
        with torch.no_grad():
            p = draws[name](batches[i], M, generator)
        bar.update()
        return (*pair_stats(p), time.time() - started, counter.calls)

    done = shared_map(run_unit, units)
    bar.close()
    return units, done


def _lookahead(
    lookahead: Optional[Lookahead],
    sampler: Sampler,
    scorer: Scorer,
    lattices: list[Lattice],
    config: SMCEvalConfig,
    seed: int,
    device: torch.device,
    quiet: bool,
) -> tuple[Lookahead, dict]:
    """The smoothing methods' C in eval mode, and what to report of it: ``lookahead`` itself,
    or a LearnedLookahead fitted on ``lattices`` when none is given."""
    if lookahead is not None:
        return lookahead.eval(), {"kind": type(lookahead).__name__}
    torch.manual_seed(item_seed(seed, "lookahead", "init"))
    lookahead = LearnedLookahead(scorer.vocab_size).to(device)
    started = time.time()
    history = fit_lookahead(
        lookahead,
        sampler,
        scorer,
        lattices,
        steps=config.lookahead_steps,
        particles=config.lookahead_particles,
        seed=item_seed(seed, "lookahead", "fit"),
        device=device,
        quiet=quiet,
    )
    return lookahead.eval(), {
        "kind": "LearnedLookahead",
        "fit_steps": len(history),
        "fit_loss_first": history[0],
        "fit_loss_last": history[-1],
        "fit_seconds": round(time.time() - started, 2),
    }


def format_table(result: dict, metric: str = "offset_kl") -> str:
    """One metric of ``evaluate_smc``'s result as a text table: methods × M."""
    rows = [(metric, *(f"M={m}" for m in result["M"]))]
    rows += [(name, *(f"{v:.2f}" for v in res[metric])) for name, res in result["methods"].items()]
    return text_table(rows)
