"""The walkers of a sampler (:class:`Walk`) and the paths they draw (:class:`Paths`).

N walkers (particles) walk lattices of a batch at once, one choice per step (003 §3); a walker
is a row of every tensor of its :class:`Walk`, the sampler's recurrent state included, so that
walkers can be copied or reordered (:meth:`Walk.select`, as particle smoothing resamples).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from torch import Tensor

from .record import WalkRecord


def select_tree(obj: Any, index: Tensor) -> Any:
    """Index the first dimension of every tensor in a nest of tuples/lists/dicts/dataclasses."""
    if obj is None:
        return None
    if isinstance(obj, Tensor):
        return obj[index]
    if isinstance(obj, (tuple, list)):
        return type(obj)(select_tree(o, index) for o in obj)
    if isinstance(obj, dict):
        return {key: select_tree(o, index) for key, o in obj.items()}
    if dataclasses.is_dataclass(obj):
        return dataclasses.replace(
            obj,
            **{f.name: select_tree(getattr(obj, f.name), index) for f in dataclasses.fields(obj)},
        )
    raise TypeError(f"cannot select walkers from a {type(obj).__name__}")


@dataclass
class Walk:
    """N walkers, each on one lattice of a LatticeBatch."""

    lattice: Tensor
    """(N,) long: index into the batch."""
    state: Tensor
    """(N,) long: current state (batch-global id)."""
    alive: Tensor
    """(N,) bool: False once STOP was chosen (the walker then stays put)."""
    length: Tensor
    """(N,) long: marks emitted so far."""
    last_mark: Tensor
    """(N,) long: the previous mark id (BOS = vocab_size at the start)."""
    hidden: Any
    """The sampler's recurrent state, first dimension N (e.g. a GRU's h (N, d)), or None."""
    record: Optional[WalkRecord] = field(default=None, kw_only=True)
    """What this walk shares with the one-pass scoring of its paths (``Sampler.sample``'s
    walks); None for walks without one (particle smoothing's), which can select walkers."""

    @property
    def static(self) -> bool:
        """Whether each step must keep static shapes and never wait for the device: compute
        every walker's row (finding the walkers with a choice would do neither). Always on a
        GPU; on a CPU, in a walk whose record says so (``record.WalkRecord.static``, the walk
        of ``graph``)."""
        return self.state.device.type != "cpu" or (self.record is not None and self.record.static)

    def select(self, index: Tensor) -> "Walk":
        """The walkers ``index`` (N',), in that order; duplicates are independent copies.
        A walk with a record cannot: the record is of its walkers."""
        if self.record is not None:
            raise ValueError("cannot select walkers of a walk with a record")
        return select_tree(self, index)

    def __len__(self) -> int:
        return len(self.state)


@dataclass
class Paths:
    """k sampled paths per lattice; L is the longest path's number of marks."""

    arcs: Tensor
    """(B, k, L) long: the arcs taken, -1 after the path ends."""
    marks: Tensor
    """(B, k, L) long: their marks, -1 after the path ends."""
    lengths: Tensor
    """(B, k) long: number of marks."""
    log_q: Tensor
    """(B, k): log q of the whole path, STOP included (differentiable in φ)."""
    step_log_q: Tensor
    """(B, k, L + 1): log q of each choice (0 after STOP), the last choice being STOP."""
    context: Any = None
    """The sampler's :meth:`Sampler.prepare` context the paths were drawn with: pass it to
    :meth:`Sampler.score` to score other paths under the same proposal (a randomized sampler,
    SWP at budget < 1, draws a new one on every ``prepare``)."""
