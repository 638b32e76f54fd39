"""log Z of each pair under the scorer, by importance sampling, and the bounds built on it.

With M paths per pair from a proposal r (here an even mixture of samplers, each path weighted
against the whole mixture: ``nfst.models.samplers.mixture``), log Ẑ = log (1/M) Σ_j p̃(z_j)/r(z_j)
(``metrics.log_z_is``). Ẑ is unbiased for Z = Σ_z p̃(z), so E[log Ẑ] ≤ log Z (Jensen): each log Ẑ
is a lower bound in expectation, tight only when r is close to the posterior. Partial KL + log Ẑ
is therefore a lower bound on the exclusive KL(q ‖ p) (:func:`add_exclusive_kl`). Where the
scorer is a WFST, ``nfst.evaluate.exact`` gives the exact values to check these against.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..models.samplers.base import Sampler
from ..models.samplers.mixture import mixture_counts, mixture_draw
from ..models.scorer import Scorer
from ..runtime.distributed import item_seed, shared_map
from ..runtime.threads import cpu_threads
from . import metrics
from .metrics import mean_and_se
from .pareto import pareto_k, pareto_summary
from .samplers import Structure, eval_mode


def estimate_log_z(proposals: Mapping[str, Sampler], scorer: Scorer,
                   lattices: Sequence[Lattice], M: int, *, batch_size: int = 16, seed: int = 0,
                   device: torch.device | str = "cpu",
                   structure: Optional[Structure] = None) -> dict:
    """Per-pair IS estimates of log Z (``metrics.log_z_is``) with M samples per pair from an
    even mixture of ``proposals`` (by name), each path weighted against the whole mixture
    (``nfst.models.samplers.mixture``). Ẑ is unbiased, so E[log Ẑ] ≤ log Z: each log Ẑ is a
    lower bound in expectation, tight only when the mixture is close to the posterior.

    Diagnostics: the Pareto k̂ of each pair's M weights (``nfst.evaluate.pareto``; above 0.7
    the estimate is unreliable whatever its standard error says), and, from the same draw,
    each proposal's own IS estimate from just the paths it drew (``by_proposal``); ``spread``,
    the mixture's mean log Ẑ minus the best single proposal's, says how much the mixture
    tightened the bound. With ``structure``, also the posterior's share on it
    (self-normalised over the same samples). Another seed than the evaluation's, so its
    samples are not reused; under torchrun the ranks share the minibatches (a collective)."""
    device = torch.device(device)
    starts = list(range(0, len(lattices), batch_size))
    components = list(proposals.values())

    @torch.no_grad()
    def one_batch(i: int) -> list[dict]:
        batch = LatticeBatch(lattices[starts[i]:starts[i] + batch_size], device)
        generator = torch.Generator(device=device).manual_seed(item_seed(seed + 1, i))
        drawn = mixture_draw(components, [1.0] * len(components), batch, M, generator)
        with cpu_threads(device):
            log_p = scorer.score_arcs(batch, drawn.arcs).double().cpu()
        log_w = log_p - drawn.log_r.double().cpu()
        log_q = drawn.log_q.double().cpu()
        local = torch.where(drawn.arcs >= 0, drawn.arcs - batch.arc_offsets[:-1, None, None],
                            drawn.arcs).cpu()
        bounds = torch.tensor((0,) + drawn.counts).cumsum(0).tolist()
        out = []
        for b, lat in enumerate(batch.lattices):
            value, se = metrics.log_z_is(log_w[b])
            own = {name: metrics.log_z_is(log_p[b, lo:hi] - log_q[c, b, lo:hi])[0]
                   for c, (name, lo, hi) in enumerate(zip(proposals, bounds, bounds[1:]))
                   if hi > lo}
            out.append({"value": value, "se": se, "pareto_k": pareto_k(log_w[b]), "own": own,
                        "share": None if structure is None else
                        structure.share(lat, local[b], torch.softmax(log_w[b], 0))})
        return out

    with eval_mode(scorer, *components):
        per_pair = [v for part in shared_map(one_batch, range(len(starts))) for v in part]
    by_proposal = {name: mean_and_se([p["own"][name] for p in per_pair])
                   for name in per_pair[0]["own"]}
    counts = [n for n in mixture_counts([1.0] * len(components), M) if n]
    mean = sum(p["value"] for p in per_pair) / len(per_pair)
    ks = [p["pareto_k"] for p in per_pair]
    names = " and ".join(proposals)
    result = {"method": f"importance sampling, {M} samples per pair from an even mixture of "
                        f"{names}; a lower bound in expectation (E[log Ẑ] ≤ log Z)",
              "proposals": list(proposals), "samples": M,
              "mean_se": sum(p["se"] for p in per_pair) / len(per_pair),
              "pareto_k": pareto_summary(ks),
              "by_proposal": {name: {"log_z": v, "log_z_se": se, "samples": count}
                              for (name, (v, se)), count in zip(by_proposal.items(), counts)},
              "spread": mean - max(v for v, _ in by_proposal.values()),
              "per_pair": [p["value"] for p in per_pair],
              "per_pair_se": [p["se"] for p in per_pair], "per_pair_pareto_k": ks}
    if structure is not None:
        result[structure.name], result[f"{structure.name}_se"] = mean_and_se(
            [p["share"] for p in per_pair])
    return result


def add_exclusive_kl(result: dict) -> dict:
    """Add partial KL + log Ẑ (003:7), per pair with ``result["log_z"]``
    (:func:`estimate_log_z`), to every sampler of :func:`evaluate`'s result:
    ``exclusive_kl_lower_bound`` ± ``exclusive_kl_lower_bound_se`` (over pairs) and, where the
    untrained sampler was evaluated too, ``untrained_exclusive_kl_lower_bound``. Since
    E[log Ẑ] ≤ log Z, each is a lower bound in expectation on the exclusive KL(q ‖ p), low by
    the same log Z − E[log Ẑ] for every sampler: differences between samplers are unbiased,
    ratios are not. Returns ``result``."""
    return add_partial_kl_plus(result, result["log_z"]["per_pair"], "exclusive_kl_lower_bound")


def add_partial_kl_plus(result: dict, log_z: Sequence[float], key: str) -> dict:
    """To every sampler of :func:`evaluate`'s result, partial KL + ``log_z`` per pair as ``key``
    ± ``key_se`` (mean and standard error over pairs), and as ``untrained_key`` where the
    untrained sampler's partial KL is there too: the exclusive KL with the exact log Z, its
    lower bound with an estimate. Returns ``result``."""
    for m in result["samplers"].values():
        for prefix in ("", "untrained_"):
            per_pair = m.get(f"{prefix}per_pair_partial_kl")
            if per_pair is not None:
                m[prefix + key], m[f"{prefix}{key}_se"] = mean_and_se(
                    [p + z for p, z in zip(per_pair, log_z)])
    return result
