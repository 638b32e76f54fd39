"""Fitting a mark n-gram scorer by exact maximum likelihood (003:12).

    θ̂ = argmax_θ Σ_{(x, y)} log Σ_{ω ∈ T_{x,y}} p̃_θ(ω)

The inner sum is the backward pass over each history lattice (``nfst.models.ngram``), so the
objective and its gradient are exact: no proposal, no sampling, no gold paths. By default every
step takes all training lattices at once (their history lattices are built once), with Adam.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch
from tqdm.auto import tqdm

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..models.ngram import NgramScorer
from ..runtime.threads import cpu_threads
from .checkpoint import check_finite


@dataclass
class NgramConfig:
    order: int = 1
    """n: each mark is scored given the n − 1 before it (1: a unigram)."""
    steps: int = 60
    """Adam steps of the maximum-likelihood fit."""
    lr: float = 0.1
    """Adam learning rate of the fit."""
    batch_size: Optional[int] = None
    """Lattices per step, cycling through the training set; None: all of them."""


@dataclass
class NgramResult:
    scorer: NgramScorer
    """Frozen."""
    history: list[dict]
    """Per step: step, log_likelihood (mean over the step's pairs of log p̃_θ(x, y), nats)."""


def fit_ngram(train: Sequence[Lattice], config: NgramConfig = NgramConfig(), *,
              device: torch.device | str = "cpu", quiet: bool = False) -> NgramResult:
    """Fit an :class:`NgramScorer` to ``train`` by exact maximum likelihood (module docstring);
    θ starts at 0 (uniform next-mark distributions)."""
    if not train:
        raise ValueError("fit_ngram needs training lattices")
    device = torch.device(device)
    scorer = NgramScorer(len(train[0].mark_vocab), config.order).to(device)
    opt = torch.optim.Adam(scorer.parameters(), lr=config.lr)
    size = len(train) if config.batch_size is None else min(config.batch_size, len(train))
    batches = [LatticeBatch(train[lo:lo + size], device) for lo in range(0, len(train), size)]
    history = []
    for step in tqdm(range(config.steps), desc=f"fit {config.order}-gram", disable=quiet):
        batch = batches[step % len(batches)]
        with cpu_threads(device):
            log_lik = scorer.log_partition(batch).mean()
            check_finite(log_lik, "the n-gram's log-likelihood", step, None)
            opt.zero_grad()
            (-log_lik).backward()
            opt.step()
        history.append({"step": step + 1, "log_likelihood": float(log_lik.detach())})
    return NgramResult(scorer.freeze(), history)
