"""A walker's legal choices at its state, and drawing one (003 §3).

Column c < D of a state's row is its out-arc ``batch.out_arcs[s, c]`` (-1 padded), column D is
STOP. Illegal columns have probability exactly 0: padding, and STOP at a non-final state.

Most states of most lattices leave a walker one legal choice (one out-arc and not final, or
final without out-arcs; ``batch.choices``), where q is 1 whatever a sampler's network says.
Samplers run their networks only for the walkers with a choice (:func:`choosing`) and fill the
other rows with :func:`forced_log_probs` (:func:`with_forced`).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ...dp.batch import LatticeBatch
from .walk import Walk


def legal_log_softmax(batch: LatticeBatch, states: Tensor, logits: Tensor) -> Tensor:
    """Log-softmax of mark logits (..., vocab_size + 1), the last column STOP, over just the
    legal choices at states (...): (..., D + 1) in the columns of ``batch.out_arcs``, then STOP."""
    if logits.shape[-1] != len(batch.mark_vocab) + 1:
        raise ValueError(f"{logits.shape[-1]} logits for {len(batch.mark_vocab)} marks and STOP")
    columns = logits.gather(-1, batch.column_marks[states])  # (..., D + 1)
    return torch.log_softmax(columns.masked_fill(~batch.legal[states], float("-inf")), dim=-1)


def forced_log_probs(batch: LatticeBatch, states: Tensor, dtype: torch.dtype) -> Tensor:
    """(..., D + 1) log q at states (...) where a walker has one legal choice
    (``batch.choices``): 0 at it and -inf at every other column, whatever a sampler's network
    says. Samplers run their networks only where there is a choice and take these rows
    elsewhere (at most states of most lattices: one out-arc, not final)."""
    legal = batch.legal[states]
    return torch.zeros(legal.shape, dtype=dtype, device=states.device).masked_fill(
        ~legal, float("-inf")
    )


def choosing(batch: LatticeBatch, walk: Walk) -> Optional[Tensor]:
    """The walkers (n,) with a choice to make now: alive, at a state with more than one legal
    choice. None in a walk with static shapes (``Walk.static``: on a GPU, where finding them
    would sync it with the host), where every walker's row is computed. See
    :func:`with_forced`."""
    if walk.static:
        return None
    return (walk.alive & (batch.choices[walk.state] > 1)).nonzero().squeeze(1)


def with_forced(batch: LatticeBatch, walk: Walk, rows: Tensor, log_probs: Tensor) -> Tensor:
    """(N, D + 1): ``log_probs`` (n, D + 1) at the walkers ``rows`` (n,) from
    :func:`choosing`, :func:`forced_log_probs` at the others (dead walkers' rows are unused)."""
    return forced_log_probs(batch, walk.state, log_probs.dtype).index_copy(0, rows, log_probs)


@torch.no_grad()
def choose(
    batch: LatticeBatch,
    walk: Walk,
    log_probs: Tensor,
    generator: Optional[torch.Generator] = None,
    noise: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor]:
    """One move per walker drawn from ``log_probs`` (N, D + 1): the column chosen (N,) and
    the arc it takes (N,), -1 for STOP. Walkers that have ended choose STOP again, at no cost.

    The draw is argmax_c q_c / E_c with E_c ~ Exp(1) i.i.d., a draw from q; ``noise`` (N, D + 1)
    gives the E_c (a walk that drew them beforehand), else they are drawn now from
    ``generator``."""
    stop_col = batch.out_arcs.shape[1]
    probs = log_probs.exp()
    # torch.multinomial(probs, 1)'s own draw (the same numbers), without its check that
    # syncs a GPU with the host; ended walkers draw too (and then stop), so that the draws
    # of the others do not depend on which have ended
    if noise is None:
        noise = torch.empty_like(probs).exponential_(generator=generator)
    choice = torch.where(walk.alive, (probs / noise).argmax(1), stop_col)
    moving = walk.alive & (choice != stop_col)
    arc = torch.where(moving, batch.out_arcs[walk.state, choice.clamp(max=stop_col - 1)], -1)
    return choice, arc
