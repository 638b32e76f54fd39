"""log Z of each pair under the scorer, by importance sampling, and the bounds built on it.

With M paths per pair from a proposal r (here an even mixture of samplers, each path weighted
against the whole mixture: ``nfst.models.samplers.mixture``), log Ẑ = log (1/M) Σ_j p̃(z_j)/r(z_j)
(``metrics.log_z_is``). Ẑ is unbiased for Z = Σ_z p̃(z), so E[log Ẑ] ≤ log Z (Jensen): each log Ẑ
is a lower bound in expectation, tight only when r is close to the posterior. Partial KL + log Ẑ
is therefore a lower bound on the exclusive KL(q ‖ p) (:func:`add_exclusive_kl`). Where the
scorer is a WFST, ``nfst.evaluate.exact`` gives the exact values to check these against.

Adaptive sample sizes: a first draw of M paths per pair only decides how many paths a second,
fresh draw has: N where the first draw's weights are heavy-tailed (Pareto k̂ above its
threshold, ``pareto.pareto_threshold``: 0.585 at M = 256), else M. The estimate is the second
draw's alone, from seeds no first draw had. Its size depends on the first draw only, so Ẑ stays
unbiased; keeping the first draw where its k̂ looks fine would not (it is kept exactly when it
looks light-tailed, which its value correlates with), nor would pooling the two.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..fst.structure import Structure
from ..models.samplers.base import Sampler
from ..models.samplers.mixture import mixture_counts, mixture_draw
from ..models.scorer import Scorer
from ..runtime.distributed import item_seed, shared_map
from ..runtime.threads import cpu_threads
from . import metrics
from .drawing import eval_mode
from .metrics import mean_and_se
from .pareto import nonzero_weights, pareto_k, pareto_summary, pareto_threshold


@torch.no_grad()
def _draw(
    proposals: Mapping[str, Sampler],
    scorer: Scorer,
    lattices: Sequence[Lattice],
    M: int,
    seed: int,
    device: torch.device,
    structure: Optional[Structure],
) -> list[dict]:
    """Per pair of ``lattices`` (one minibatch), M paths from the even mixture of
    ``proposals``: log Ẑ ± SE, k̂ and the nonzero weights it is computed from, each
    proposal's own log Ẑ from its paths, the share."""
    components = list(proposals.values())
    batch = LatticeBatch(lattices, device)
    generator = torch.Generator(device=device).manual_seed(seed)
    drawn = mixture_draw(components, [1.0] * len(components), batch, M, generator)
    with cpu_threads(device):
        log_p = scorer.score_arcs(batch, drawn.arcs).double().cpu()
    log_w = log_p - drawn.log_r.double().cpu()
    log_q = drawn.log_q.double().cpu()
    local = torch.where(
        drawn.arcs >= 0, drawn.arcs - batch.arc_offsets[:-1, None, None], drawn.arcs
    ).cpu()
    bounds = torch.tensor((0,) + drawn.counts).cumsum(0).tolist()
    out = []
    for b, lat in enumerate(batch.lattices):
        value, se = metrics.log_z_is(log_w[b])
        own = {
            name: metrics.log_z_is(log_p[b, lo:hi] - log_q[c, b, lo:hi])[0]
            for c, (name, lo, hi) in enumerate(zip(proposals, bounds, bounds[1:]))
            if hi > lo
        }
        share = (
            None
            if structure is None
            else structure.share(lat, local[b], torch.softmax(log_w[b], 0))
        )
        out.append(
            {
                "value": value,
                "se": se,
                "pareto_k": pareto_k(log_w[b]),
                "weights": nonzero_weights(log_w[b]),
                "own": own,
                "samples": M,
                "share": share,
            }
        )
    return out


def estimate_log_z(
    proposals: Mapping[str, Sampler],
    scorer: Scorer,
    lattices: Sequence[Lattice],
    M: int,
    *,
    max_samples: Optional[int] = None,
    batch_size: int = 16,
    seed: int = 0,
    device: torch.device | str = "cpu",
    structure: Optional[Structure] = None,
) -> dict:
    """Per-pair IS estimates of log Z (``metrics.log_z_is``) with M samples per pair from an
    even mixture of ``proposals`` (by name), each path weighted against the whole mixture
    (``nfst.models.samplers.mixture``). Ẑ is unbiased, so E[log Ẑ] ≤ log Z: each log Ẑ is a
    lower bound in expectation, tight only when the mixture is close to the posterior. With
    ``max_samples`` N > M, a first draw of M decides the size of a fresh one that gives the
    estimate: N paths where its k̂ is above its threshold, else M (module docstring;
    minibatches of as many paths at any size). A pair whose first draw is not diagnosable (a
    tail of fewer than 5 distinct paths, repeated) gets M: those paths are drawn often, so
    their share is well estimated, and what lies beyond them no k̂ can say.

    Diagnostics: the Pareto k̂ of each pair's weights (``nfst.evaluate.pareto``; above
    min(1 − 1/log₁₀ S, 0.7) for S paths the estimate is unreliable whatever its standard error
    says), and, from the same draw,
    each proposal's own IS estimate from just the paths it drew (``by_proposal``); ``spread``,
    the mixture's mean log Ẑ minus the best single proposal's, says how much the mixture
    tightened the bound. With ``structure``, also the posterior's share on it
    (self-normalised over the same samples). Another seed than the evaluation's, so its
    samples are not reused; under torchrun the ranks share the minibatches (a collective)."""
    device = torch.device(device)

    def stage(lats: Sequence[Lattice], m: int, index: int) -> list[dict]:
        size = max(1, batch_size * M // m)  # as many paths per minibatch at any m
        starts = list(range(0, len(lats), size))
        # stage s's minibatch i is seeded (s, i) (``item_seed``): no fresh draw repeats the
        # first draw, nor one of the other stage
        parts = shared_map(
            lambda i: _draw(
                proposals,
                scorer,
                lats[starts[i] : starts[i] + size],
                m,
                item_seed(seed, index, i),
                device,
                structure,
            ),
            range(len(starts)),
        )
        return [v for part in parts for v in part]

    with eval_mode(scorer, *proposals.values()):
        per_pair = stage(lattices, M, 0)
        first = [(p["pareto_k"], p["weights"]) for p in per_pair]
        if (max_samples or 0) > M:
            heavy = [k > pareto_threshold(s) for k, s in first]
            for again, size in enumerate((M, max_samples), 1):
                chosen = [j for j, h in enumerate(heavy) if h == (size == max_samples)]
                for j, p in zip(chosen, stage([lattices[j] for j in chosen], size, again)):
                    per_pair[j] = p
    return _summary(proposals, per_pair, first, M, max_samples, structure)


def _summary(
    proposals: Mapping[str, Sampler],
    per_pair: list[dict],
    first: list[tuple],
    M: int,
    max_samples: Optional[int],
    structure: Optional[Structure],
) -> dict:
    """:func:`estimate_log_z`'s result from its per-pair estimates and the first draw's (k̂,
    nonzero weights) per pair."""
    names = [name for name in proposals if all(name in p["own"] for p in per_pair)]
    by_proposal = {name: mean_and_se([p["own"][name] for p in per_pair]) for name in names}
    counts = {
        m: dict(zip(proposals, mixture_counts([1.0] * len(proposals), m)))
        for m in {p["samples"] for p in per_pair}
    }  # each proposal's paths per pair
    mean = sum(p["value"] for p in per_pair) / len(per_pair)
    ks = [p["pareto_k"] for p in per_pair]
    adaptive = (max_samples or 0) > M
    more = sum(p["samples"] != M for p in per_pair)
    how = (
        f" ({max_samples} on the {more} of {len(per_pair)} pairs where a first draw of {M} "
        f"had Pareto k̂ above its threshold ({pareto_threshold(M):.3g}), which then only chose "
        f"the size)"
        if adaptive
        else ""
    )
    mixture = " and ".join(proposals)
    result = {
        "method": f"importance sampling, {M} samples per pair{how} from an even mixture "
        f"of {mixture}; a lower bound in expectation (E[log Ẑ] ≤ log Z)",
        "proposals": list(proposals),
        "samples": M,
        "max_samples": max_samples if adaptive else None,
        "more_samples": more,
        "samples_drawn": sum(p["samples"] for p in per_pair) + adaptive * len(per_pair) * M,
        "mean_se": sum(p["se"] for p in per_pair) / len(per_pair),
        "pareto_k": pareto_summary(ks, [p["weights"] for p in per_pair]),
        "by_proposal": {
            name: {
                "log_z": v,
                "log_z_se": se,
                "samples": sum(counts[p["samples"]][name] for p in per_pair) / len(per_pair),
            }
            for name, (v, se) in by_proposal.items()
        },
        "spread": mean - max(v for v, _ in by_proposal.values()),
        "per_pair": [p["value"] for p in per_pair],
        "per_pair_se": [p["se"] for p in per_pair],
        "per_pair_pareto_k": ks,
        "per_pair_samples": [p["samples"] for p in per_pair],
    }
    if adaptive:
        result["first_pareto_k"] = pareto_summary([k for k, _ in first], [s for _, s in first])
    if structure is not None:
        result[structure.name], result[f"{structure.name}_se"] = mean_and_se(
            [p["share"] for p in per_pair]
        )
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
                    [p + z for p, z in zip(per_pair, log_z)]
                )
    return result
