"""The walk step by step (``Sampler.sample``'s walk on a CPU, and that of the samplers that do
not score in one pass): each step asks the sampler for log q at the walkers' states, draws
their choices (``choices.choose``) and advances them, and the sampler computes its heads only
for the walkers with a choice. The walk with static shapes, for a GPU, is ``graph``'s.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor

from ...dp.batch import LatticeBatch
from ...errors import PathTooLongError
from .choices import choose
from .record import WalkRecord
from .route import Route


def eager_walk(
    sampler: Any,
    batch: LatticeBatch,
    context: Any,
    lattice: Tensor,
    k: int,
    generator: Optional[torch.Generator],
    cap: int,
    record: Optional[WalkRecord],
) -> tuple[Route, Tensor, Optional[Tensor]]:
    """``Sampler._walk`` step by step: the paths' route, their arcs (N, L) and the log q of
    each choice (N, L + 1) as the walk computed it, or None when the walk has a ``record`` and
    runs without gradients (the sampler's one pass then gives log q). Raises
    PathTooLongError if a walker is still alive after ``cap`` marks."""
    # A GPU would wait for every check of the loop's end: check every 16 steps there.
    check_every = 1 if batch.device.type == "cpu" else 16
    states, choices, arcs, steps = [], [], [], []
    gather = record is None or torch.is_grad_enabled()
    walk = sampler.start(batch, context, lattice, record)
    for t in range(cap + 1):
        lp = sampler.log_probs(batch, context, walk)
        choice, arc = choose(batch, walk, lp.detach(), generator)
        states.append(walk.state)
        choices.append(choice)
        arcs.append(arc)
        if gather:
            step = lp.gather(1, choice[:, None]).squeeze(1)
            steps.append(torch.where(walk.alive, step, torch.zeros_like(step)))
        walk = sampler.advance(batch, context, walk, choice)
        if (t + 1) % check_every == 0 and not bool(walk.alive.any()):
            break
    if bool(walk.alive.any()):
        raise PathTooLongError(f"{sampler.name}: a sampled path exceeded max_length={cap} marks")
    L = int(walk.length.max())
    arcs_t = torch.stack(arcs, 1)[:, :L]
    route = Route(
        lattice,
        torch.stack(states, 1)[:, : L + 1],
        torch.stack(choices, 1)[:, : L + 1],
        batch.marks_of(arcs_t),
        walk.length,
        per_lattice=k,
    )
    return route, arcs_t, torch.stack(steps, dim=1)[:, : L + 1] if gather else None
