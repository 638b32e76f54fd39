"""The beam-search baseline of particle smoothing (000 §7.2): keep the M best prefixes by their
score so far, with no lookahead. It returns :class:`~nfst.smc.engine.Particles` weighted by p̃,
so the same estimators apply (they only lower-bound Z: the beam is not a sample).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ..dp.batch import LatticeBatch
from ..errors import PathTooLongError
from ..models.scorer import Scorer
from ..runtime.threads import cpu_threads
from .engine import Particles, check_scorer


def beam_search(
    batch: LatticeBatch, scorer: Scorer, beam: int, max_length: Optional[int] = None
) -> Particles:
    """The M = ``beam`` best prefixes by score so far G_t = log p̃_θ(ω_{≤t}), no lookahead
    (000 §7.2). Complete paths stay in the beam with their final score and compete with the
    prefixes. Returns them as particles weighted by p̃_θ, i.e. p̂ = p restricted to the
    beam; slots left empty (fewer than M paths) have weight 0.

    With a locally normalised scorer (every log p_θ ≤ 0) a beam at least as wide as the number
    of prefixes of any length keeps everything, so it returns the exact top M."""
    with torch.no_grad(), cpu_threads(batch.device):
        return _beam_search(batch, scorer, beam, max_length)


def _beam_search(batch, scorer, beam, max_length) -> Particles:
    check_scorer(batch, scorer)
    B, M = batch.batch_size, beam
    N, dev, f64 = B * M, batch.device, torch.float64
    cap = batch.max_height if max_length is None else max_length
    D = batch.out_arcs.shape[1]
    group = torch.arange(B, device=dev)[:, None] * M

    state = batch.start.repeat_interleave(M)
    alive = torch.ones(N, dtype=torch.bool, device=dev)
    score = torch.full((B, M), float("-inf"), dtype=f64, device=dev)
    score[:, 0] = 0.0  # one empty prefix per lattice to begin with
    scorer_state = scorer.start(N)
    parents, taken = [], []
    for _ in range(cap + 1):
        next_lp = scorer.next_log_probs(scorer_state).to(f64)
        arcs = batch.out_arcs[state]  # (N, D)
        marks = batch.arc_mark[arcs.clamp(min=0)]
        grow = next_lp.gather(1, marks).masked_fill(arcs < 0, float("-inf"))
        stop = next_lp[:, scorer.eos].masked_fill(~batch.final[state], float("-inf"))
        cand = torch.cat([grow, stop[:, None]], 1) + score.view(N, 1)
        # a complete path has one candidate: itself, unchanged (in the STOP column)
        ended = torch.full_like(cand, float("-inf"))
        ended[:, D] = score.view(N)
        cand = torch.where(alive[:, None], cand, ended).view(B, M * (D + 1))
        score, flat = cand.topk(M, dim=1)
        parent, col = flat // (D + 1), flat % (D + 1)
        index = (group + parent).view(N)
        col = col.view(N)
        was_alive = alive[index]
        moving = was_alive & (col < D) & torch.isfinite(score.view(N))
        arc = torch.where(moving, arcs[index, col.clamp(max=D - 1)], torch.full_like(col, -1))
        mark = torch.where(moving, batch.arc_mark[arc.clamp(min=0)], scorer.eos)
        scorer_state = scorer.advance(scorer.select_state(scorer_state, index), mark)
        state = torch.where(moving, batch.arc_dst[arc.clamp(min=0)], state[index])
        alive = moving
        parents.append(parent)
        taken.append(arc.view(B, M))
        if not bool(alive.any()):
            break
    else:
        raise PathTooLongError(f"beam search: a path exceeded max_length={cap} marks")

    path_arcs = backtrack(taken, parents)
    lengths = (path_arcs >= 0).sum(-1)
    arcs = path_arcs[..., : int(lengths.max())]
    marks = batch.marks_of(arcs)
    return Particles(arcs=arcs, marks=marks, lengths=lengths, log_p=score, log_weights=score)


def backtrack(taken: list[Tensor], parents: list[Tensor]) -> Tensor:
    """The paths (B, M, T) of a beam's final slots: slot m's arc at step t (``taken[t]``,
    (B, M)) was taken when it was created from slot ``parents[t]`` (B, M) of step t − 1."""
    slot = torch.arange(taken[0].shape[1], device=taken[0].device).expand_as(taken[0])
    path = []
    for t in range(len(taken) - 1, -1, -1):
        path.append(taken[t].gather(1, slot))
        slot = parents[t].gather(1, slot)
    return torch.stack(path[::-1], -1)
