"""What a walk shares with the one-pass scoring of its paths, kept in an object its caller owns.

``Sampler.sample`` walks without gradients, then scores the drawn paths in one teacher-forced
pass with gradients (``Sampler.path_log_probs``). The two must see the same network, dropout
included, and the pass need not compute again what the walk computed. A :class:`WalkRecord`
holds both, for one walk of N walkers and the pass over its N paths:

- each dropout site's masks, one per walker (``dropout.WalkDropout``), drawn at the site's
  first use and applied at every step and every position;
- per-walk constants (the prefix GRU's table of input gates);
- what each step of a walk without gradients computed, to be replayed by the pass: the prefix
  GRU's states (``recurrence.Recurrence``), swp-prefix's g (:class:`ReplayedLinear`).

A walk with static shapes (``graph``: every step computes every walker's row, so that a GPU
can replay it as a CUDA graph) is made with ``static=True``: its steps keep nothing, since
they are not the rows the pass lays out.

The caller creates the record and hands it to ``Sampler.start`` (the walk carries it as
``Walk.record``) and to ``Sampler.path_log_probs``; it lives as long as the call that made it,
so no call sees another's walk. Without a record (particle smoothing's walks, stochastic beam
search's), dropout is fresh at every call and nothing is recorded.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import torch
from torch import Tensor, nn


class WalkRecord:
    """The record of one walk of ``walkers`` walkers; entries are keyed by the module that
    made them. ``static``: the walk keeps static shapes (see ``Walk.static``)."""

    def __init__(self, walkers: int, static: bool = False):
        self.walkers = walkers
        self.static = static
        self.masks: dict[nn.Module, Tensor] = {}
        self.constants: dict[nn.Module, Tensor] = {}
        self.steps: dict[nn.Module, list[Any]] = {}

    def mask(self, site: nn.Module, draw: Callable[[], Tensor]) -> Tensor:
        """The walkers' mask at dropout site ``site``: ``draw()`` the first time."""
        if site not in self.masks:
            _not_capturing("dropout mask")
            self.masks[site] = draw()
        return self.masks[site]

    def constant(self, module: nn.Module, compute: Callable[[], Tensor]) -> Tensor:
        """A value of ``module`` that is the same at every step of the walk: ``compute()``
        the first time. Only a walk without gradients keeps it (the weights cannot change
        during it); with gradients every call computes it, in the graph."""
        if torch.is_grad_enabled():
            return compute()
        if module not in self.constants:
            _not_capturing("per-walk constant")
            self.constants[module] = compute()
        return self.constants[module]

    def keep(self, module: nn.Module, entry: Any) -> None:
        """Record what ``module`` computed at this step of the walk (its rows: the positions
        of the walkers that stepped, in walker order). Only a walk without gradients records:
        a pass with gradients computes everything itself, and a static walk's steps are not
        the pass's rows."""
        if not torch.is_grad_enabled() and not self.static:
            self.steps.setdefault(module, []).append(entry)

    def replay(
        self, module: nn.Module, running: Sequence[int], rows: Callable = len
    ) -> Optional[list]:
        """What ``module`` recorded at each step of the walk, for the one-pass scoring of its
        paths, or None if it recorded nothing. A walk reads step t's positions, in walker
        order, at its t-th step: just the rows that the scoring lays out at step t
        (``running`` rows per step; ``rows(entry)`` counts an entry's). Raises if the record
        is not of these paths."""
        tape = self.steps.get(module)
        if not tape:
            return None
        steps, rest = tape[: len(running)], tape[len(running) :]
        if [rows(entry) for entry in steps] != list(running) or any(rows(entry) for entry in rest):
            raise RuntimeError("the recorded walk is not the paths being scored")
        return steps


def _not_capturing(what: str) -> None:
    """Raise if a CUDA graph is being captured: what a walk first forms is formed once, and a
    replayed graph would form it anew at every step (``graph`` captures a walk's step after
    step 0, which forms all of it). The capture then fails and the walk goes on without it."""
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            f"a walk's {what} was first formed while capturing a CUDA graph; "
            "form it at the walk's first step"
        )


class ReplayedLinear(torch.autograd.Function):
    """x Wᵀ + b (n, out) for x (n, in) whose value a walk already computed, one (n_t, out)
    entry per step (``steps``, laid out as x's rows); gradients as a linear layer's."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor, steps: list[Tensor]) -> Tensor:
        ctx.save_for_backward(x, weight)
        return torch.cat(steps)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        return grad @ weight, grad.T @ x, grad.sum(0), None
