"""Drawing the samples an evaluation scores: k paths per pair from a sampler q_φ, each scored
under both q_φ and the frozen scorer p̃_θ (:func:`draw`, as :class:`PairSamples`), with both
models in eval mode (:func:`eval_mode`: dropout off) and every minibatch seeded on its own, so
that under torchrun the ranks share the minibatches.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor
from tqdm.auto import tqdm

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..models.samplers.base import Sampler
from ..models.scorer import Scorer
from ..runtime.distributed import item_seed, shared_map
from ..runtime.threads import cpu_threads


@dataclass
class PairSamples:
    """k samples for one pair."""

    log_q: Tensor
    """(k,) float64."""
    log_p: Tensor
    """(k,) float64."""
    lengths: Tensor
    """(k,) long."""
    arcs: Tensor
    """(k, L) long, -1 padded, lattice-local arc ids (so identical paths compare equal)."""


@contextmanager
def eval_mode(*models: torch.nn.Module):
    """Every model in eval mode (dropout off) for the duration; each one's mode restored
    afterwards."""
    modes = [m.training for m in models]
    for m in models:
        m.eval()
    try:
        yield
    finally:
        for m, mode in zip(models, modes):
            m.train(mode)


@torch.no_grad()
def draw(
    sampler: Sampler,
    scorer: Scorer,
    lattices: Sequence[Lattice],
    k: int,
    *,
    batch_size: int = 16,
    seed: int = 0,
    device: torch.device | str = "cpu",
    progress: bool = False,
    desc: str = "sample",
) -> list[PairSamples]:
    """k samples per lattice from ``sampler``, scored by ``scorer`` (both in eval mode for the
    duration, see :func:`eval_mode`).

    Each minibatch draws from its own generator, seeded from ``seed`` and its index, so under
    torchrun the ranks share the minibatches and every rank gets the same samples as one
    process would (a collective then: all ranks call it)."""
    device = torch.device(device)
    starts = list(range(0, len(lattices), batch_size))
    bar = tqdm(total=len(starts), desc=desc, disable=not progress, leave=False)

    @torch.no_grad()
    def one_batch(i: int) -> list[PairSamples]:
        lo = starts[i]
        batch = LatticeBatch(lattices[lo : lo + batch_size], device)
        generator = torch.Generator(device=device).manual_seed(item_seed(seed, i))
        paths = sampler.sample(batch, k, generator)
        with cpu_threads(device):  # small batches: extra threads only spin
            log_p = scorer.score_paths(paths)
        local = torch.where(
            paths.arcs >= 0, paths.arcs - batch.arc_offsets[:-1, None, None], paths.arcs
        )
        bar.update()
        return [
            PairSamples(
                paths.log_q[b].double().cpu(),
                log_p[b].double().cpu(),
                paths.lengths[b].cpu(),
                local[b].cpu(),
            )
            for b in range(batch.batch_size)
        ]

    try:
        with eval_mode(sampler, scorer):
            return [s for batch in shared_map(one_batch, range(len(starts))) for s in batch]
    finally:
        bar.close()
