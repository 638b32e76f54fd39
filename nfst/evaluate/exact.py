"""Ground truth for samplers evaluated against a WFST scorer.

When p̃_θ is a weighted FST over marks (the mark n-gram, ``nfst.models.ngram``), its log
partition function log Z = log Σ_z p̃(z) over a lattice's paths comes from the backward pass,
and its posterior p = p̃ / Z can be sampled exactly (``NgramScorer.posterior``). So, per pair:

- exclusive KL(q ‖ p) = E_q[log q − log p̃] + log Z: the pair's partial KL (003:7, k samples
  from q) plus the exact log Z. An unbiased estimate, with the standard error of its samples;
  no lower-bound bias, unlike partial KL + log Ẑ with an importance-sampled log Ẑ
  (``log_z.add_exclusive_kl``);
- inclusive KL(p ‖ q) = E_p[log p − log q] over k exact posterior samples scored by q
  (teacher forcing): unbiased too.

Over pairs, both are averaged with standard errors (``metrics.mean_and_se``). Beside the
estimates an LSTM scorer must use (log Ẑ by importance sampling), these show how far those
estimates are from the truth on the same pairs.
"""

from __future__ import annotations

from typing import Mapping, Optional, Protocol, Sequence

import torch
from torch import Tensor

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..models.samplers.base import Sampler
from ..models.scorer import Scorer
from ..runtime.distributed import item_seed, shared_map
from .drawing import eval_mode
from .log_z import add_partial_kl_plus
from .metrics import mean_and_se


class ExactScorer(Protocol):
    """A scorer whose log partition function and posterior are exact (a WFST over marks)."""

    def log_partition(self, batch: LatticeBatch) -> Tensor: ...

    def posterior(self) -> Sampler: ...


def is_exact(scorer: Scorer) -> bool:
    """Whether ``scorer`` gives exact log Z and posterior samples (:class:`ExactScorer`)."""
    return callable(getattr(scorer, "log_partition", None)) and callable(
        getattr(scorer, "posterior", None)
    )


@torch.no_grad()
def exact_log_z(
    scorer: ExactScorer,
    lattices: Sequence[Lattice],
    *,
    batch_size: int = 16,
    device: torch.device | str = "cpu",
) -> list[float]:
    """log Z of each lattice (float64 backward pass of the WFST scorer)."""
    device = torch.device(device)
    return [
        float(v)
        for lo in range(0, len(lattices), batch_size)
        for v in scorer.log_partition(LatticeBatch(lattices[lo : lo + batch_size], device))
    ]


@torch.no_grad()
def inclusive_kl(
    samplers: Mapping[str, Sampler],
    scorer: ExactScorer,
    lattices: Sequence[Lattice],
    k: int,
    *,
    batch_size: int = 16,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> dict[str, list[float]]:
    """Per sampler (by name) and pair, (1/k) Σ_j log p(z_j) − log q(z_j) over the same k exact
    posterior samples z_j of the pair, drawn once for every sampler. Each minibatch draws from
    its own generator, so under torchrun the ranks share them (a collective)."""
    device = torch.device(device)
    posterior = scorer.posterior()
    starts = list(range(0, len(lattices), batch_size))

    def one_batch(i: int) -> dict[str, list[float]]:
        batch = LatticeBatch(lattices[starts[i] : starts[i] + batch_size], device)
        generator = torch.Generator(device=device).manual_seed(item_seed(seed, i))
        paths = posterior.sample(batch, k, generator)
        log_p = paths.log_q.double().cpu()  # the posterior's log q is the exact log p
        return {
            name: [
                float((lp - lq).mean())
                for lp, lq in zip(log_p, sampler.score(batch, paths.arcs).double().cpu())
            ]
            for name, sampler in samplers.items()
        }

    with eval_mode(posterior, *samplers.values()):
        parts = shared_map(one_batch, range(len(starts)))
    return {name: [v for part in parts for v in part[name]] for name in samplers}


def add_exact(
    result: dict,
    scorer: ExactScorer,
    samplers: Mapping[str, Sampler],
    lattices: Sequence[Lattice],
    *,
    k: int,
    batch_size: int = 16,
    seed: int = 0,
    device: torch.device | str = "cpu",
    log_z: Optional[list[float]] = None,
) -> dict:
    """Add the module docstring's exact quantities to :func:`samplers.evaluate`'s ``result``
    (on the same ``lattices``): ``result["exact_log_z"]`` (mean and per pair) and, for each
    sampler, ``exclusive_kl`` ± ``exclusive_kl_se`` (and ``untrained_exclusive_kl`` where the
    untrained sampler's partial KL is there) and ``inclusive_kl`` ± ``inclusive_kl_se`` (and
    ``per_pair_inclusive_kl``), from k posterior samples per pair. Where ``result["log_z"]``
    holds an importance-sampled estimate, its ``error`` (mean log Ẑ − log Z) is added.
    ``log_z``: the lattices' :func:`exact_log_z`, when the caller has it already. Returns
    ``result``."""
    if log_z is None:
        log_z = exact_log_z(scorer, lattices, batch_size=batch_size, device=device)
    result["exact_log_z"] = {"mean": sum(log_z) / len(log_z), "per_pair": log_z}
    add_partial_kl_plus(result, log_z, "exclusive_kl")
    inclusive = inclusive_kl(
        samplers, scorer, lattices, k, batch_size=batch_size, seed=seed, device=device
    )
    for name, m in result["samplers"].items():
        m["per_pair_inclusive_kl"] = inclusive[name]
        m["inclusive_kl"], m["inclusive_kl_se"] = mean_and_se(inclusive[name])
    estimate = result.get("log_z", {}).get("per_pair")
    if estimate is not None:
        result["log_z"]["error"] = sum(e - z for e, z in zip(estimate, log_z)) / len(log_z)
    return result
