"""Evaluating SMC samplers: offset KL against the number of particles M (000 §7, Fig. 2).

For each method and each M ∈ {8, 16, 32, 64, 128}, ``runs`` independent SMC runs on every
evaluation pair give weighted particles p̂ (duplicates merged: p̂(ω) = Σ_{m: ω_m = ω} w̄_m).
Per pair, in nats:

- partial KL of the SMC estimate (as 003:7, with p̂ in place of q):
      Σ_ω p̂(ω) [log p̂(ω) − log p̃_θ(ω)]  =  KL(p̂ ‖ p) − log Z(x, y)
- offset KL (000:34, §7.1): KL(p̂ ‖ p) with log Z replaced by z = log Σ_{ω ∈ 𝒴} p̃_θ(ω), 𝒴
  every distinct path any method drew for the pair at any M in any run (z ≤ log Z, so the
  offset KL is a "best effort" lower bound on KL(p̂ ‖ p); differences between methods are
  exact).
- ESS (Σw)²/Σw² of the final particles, and deduplicated ESS (003 Table 7: merge identical
  paths first); the mean and, over runs, the variance of log Ẑ;
- Pareto k̂ of the final weights (``nfst.evaluate.pareto``), the mean over runs and pairs
  where it can be fitted (None for the beam, whose weights are not importance weights, or
  where no pair has a k̂: fewer than 21 particles, or fewer than 5 distinct weights in the
  tail, as after resampling); above min(1 − 1/log₁₀ M, 0.7) the method's figures at that M
  are unreliable whatever their standard errors say.

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

import math
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
from ..smc.resampling import ess
from ..smc.without_replacement import distinct_particles
from .metrics import dedup_ess, mean_and_se
from .pareto import pareto_k
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


def merge_duplicates(
    particles: Particles, b: int
) -> tuple[list[tuple], torch.Tensor, torch.Tensor]:
    """Lattice b's distinct paths (tuples of arc ids), their merged normalised weights p̂ and
    their log p̃, dropping zero-weight slots."""
    w = particles.weights[b].double()
    table: dict[tuple, list] = {}
    for m in range(len(w)):
        if w[m] > 0:
            key = tuple(particles.arcs[b, m, : particles.lengths[b, m]].tolist())
            entry = table.setdefault(key, [0.0, float(particles.log_p[b, m])])
            entry[0] += float(w[m])
    keys = list(table)
    return (
        keys,
        torch.tensor([table[k][0] for k in keys], dtype=torch.float64),
        torch.tensor([table[k][1] for k in keys], dtype=torch.float64),
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
    started = time.time()
    abstract = fit_abstract_proposal(
        scorer,
        sampler,
        fit_on,
        AbstractConfig(config.abstract_regions, config.abstract_depth),
        config.abstract_fit_paths,
        config.batch_size,
        item_seed(seed, "abstract"),
        device,
    )
    look_info["abstract_fit_seconds"] = round(time.time() - started, 2)
    counter = CountingScorer(scorer)
    every = methods(sampler, counter, lookahead, config, abstract)
    # a method's seed is its place among all methods, so `only` does not change its samples
    seeds = {name: i for i, name in enumerate(every)}
    draws = {name: draw for name, draw in every.items() if only is None or name in only}
    batches = [
        LatticeBatch(list(lattices[i : i + config.batch_size]), device)
        for i in range(0, len(lattices), config.batch_size)
    ]
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
        return (*_pair_stats(p), time.time() - started, counter.calls)

    done = shared_map(run_unit, units)
    bar.close()
    methods_out, z_paths = _summarise(
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


def _pair_stats(p: Particles) -> tuple[list[tuple], list[dict]]:
    """Per lattice of one SMC call: (partial KL, ESS, dedup ESS, log Ẑ, Pareto k̂) of its
    final particles, and its distinct paths with their log p̃ (for 𝒴). Particles without a
    log Ẑ (plain ``Particles``) are the beam's: their weights are no importance weights (no k̂), and the mass they
    found stands for log Ẑ, a lower bound on log Z."""
    log_z = getattr(p, "log_z", None)
    beam = log_z is None
    if beam:
        log_z = torch.logsumexp(
            p.log_p.masked_fill(~torch.isfinite(p.log_weights), float("-inf")), -1
        )
    full_ess = ess(p.log_weights.double())
    rows, found = [], []
    for b in range(p.arcs.shape[0]):
        keys, w, log_p = merge_duplicates(p, b)
        found.append(dict(zip(keys, log_p.tolist())))
        partial = float((w * (w.log() - log_p)).sum())
        k_hat = math.nan if beam else pareto_k(p.log_weights[b])
        rows.append(
            (partial, float(full_ess[b]), float(dedup_ess(w.log())), float(log_z[b]), k_hat)
        )
    return rows, found


def _summarise(
    units: list[tuple], done: list[tuple], batch_sizes: list[int], particles: Sequence[int]
) -> tuple[dict, float]:
    """``methods`` and ``z_paths`` of :func:`evaluate_smc`'s result from each unit's
    (rows, found, seconds, scorer calls): 𝒴 is every path any method found for a pair, and
    offset KL = partial KL + log Σ_{z ∈ 𝒴} p̃(z) (module docstring)."""
    n = sum(batch_sizes)
    offsets = [sum(batch_sizes[:i]) for i in range(len(batch_sizes))]
    seen: list[dict[tuple, float]] = [{} for _ in range(n)]  # 𝒴 per pair
    # per method, M, run, pair: (partial KL, ESS, dedup ESS, log Ẑ, Pareto k̂)
    stats: dict[str, dict[int, list[list[tuple]]]] = {}
    seconds: dict[tuple, float] = {}
    calls: dict[tuple, float] = {}
    for (name, M, r, i), (rows, found, spent, used) in zip(units, done):
        per_run = stats.setdefault(name, {}).setdefault(M, [])
        if i == 0:
            per_run.append([])
        per_run[r].extend(rows)
        seconds[name, M] = seconds.get((name, M), 0.0) + spent
        calls[name, M] = calls.get((name, M), 0.0) + used
        for b, paths in enumerate(found):
            seen[offsets[i] + b].update(paths)
    z = torch.tensor(
        [
            torch.logsumexp(torch.tensor(list(s.values()), dtype=torch.float64), 0).item()
            for s in seen
        ],
        dtype=torch.float64,
    )
    methods = {}
    for name, by_m in stats.items():
        res = {
            key: []
            for key in (
                "offset_kl",
                "offset_kl_se",
                "partial_kl",
                "ess",
                "dedup_ess",
                "log_z",
                "log_z_var",
                "pareto_k",
                "seconds",
                "scorer_calls",
            )
        }
        for M in particles:
            table = torch.tensor(by_m[M], dtype=torch.float64)  # (runs, n, 5)
            mean, se = mean_and_se((table[..., 0] + z).mean(0).tolist())
            res["offset_kl"].append(mean)
            res["offset_kl_se"].append(se)
            res["partial_kl"].append(float(table[..., 0].mean()))
            res["ess"].append(float(table[..., 1].mean()))
            res["dedup_ess"].append(float(table[..., 2].mean()))
            res["log_z"].append(float(table[..., 3].mean()))
            res["log_z_var"].append(float(table[..., 3].var(0).mean()) if len(table) > 1 else 0.0)
            ks = table[..., 4][~table[..., 4].isnan()]  # the pairs with a k̂, over runs
            res["pareto_k"].append(float(ks.mean()) if len(ks) else None)
            res["seconds"].append(round(seconds[name, M] / len(table), 3))
            res["scorer_calls"].append(round(calls[name, M] / (len(table) * n), 1))
        methods[name] = res
    return methods, sum(len(s) for s in seen) / n


def format_table(result: dict, metric: str = "offset_kl") -> str:
    """One metric of ``evaluate_smc``'s result as a text table: methods × M."""
    rows = [(metric, *(f"M={m}" for m in result["M"]))]
    rows += [(name, *(f"{v:.2f}" for v in res[metric])) for name, res in result["methods"].items()]
    return text_table(rows)
