"""Counting scorer calls: the cost unit for comparing inference methods at equal budget.

One *scorer call* is one next-mark distribution p_θ(· | ω_{<t}) of a live prefix: a particle
or beam item that has not stopped costs one per step, scoring a whole path ω costs |ω| + 1
(EOS included), and a set of paths scored over its prefix tree (``Scorer.log_prob_tree``)
costs one per distinct prefix. :class:`CountingScorer` wraps any scorer and counts them; a prefix
counts as stopped once EOS has been fed to it, which is how the SMC engine and the beam retire
their walkers (their empty beam slots at the first step are counted too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from .scorer import Scorer


@dataclass
class CountedState:
    inner: Any
    live: Tensor
    """(n,) bool: the prefix has not read EOS."""


class CountingScorer(Scorer):
    """``scorer`` unchanged, with ``calls`` counting scorer calls (module docstring)."""

    def __init__(self, scorer: Scorer):
        super().__init__()
        self.inner, self.vocab_size, self.calls = scorer, scorer.vocab_size, 0

    def log_prob(self, marks: Tensor, lengths: Tensor) -> Tensor:
        self.calls += int((lengths + 1).sum())
        return self.inner.log_prob(marks, lengths)

    def start(self, n: int) -> CountedState:
        state = self.inner.start(n)
        device = next(self.inner.parameters()).device
        return CountedState(state, torch.ones(n, dtype=torch.bool, device=device))

    def next_log_probs(self, state: CountedState) -> Tensor:
        self.calls += int(state.live.sum())
        return self.inner.next_log_probs(state.inner)

    def advance(self, state: CountedState, marks: Tensor) -> CountedState:
        return CountedState(
            self.inner.advance(state.inner, marks), state.live & (marks != self.eos)
        )

    def select_state(self, state: CountedState, index: Tensor) -> CountedState:
        return CountedState(self.inner.select_state(state.inner, index), state.live[index])
