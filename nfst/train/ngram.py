"""Fitting a mark n-gram scorer by exact maximum likelihood (003:12).

    θ̂ = argmax_θ Σ_{(x, y)} log Σ_{ω ∈ T_{x,y}} p̃_θ(ω)

The inner sum is the backward pass over each history lattice (``nfst.models.ngram``), so the
objective and its gradient are exact: no proposal, no sampling, no gold paths. By default every
step takes all training lattices at once (their history lattices are built once), with Adam.
The loop and its checkpoints: ``nfst.train.loop``; under torchrun every rank fits the whole
objective (it is deterministic), so all reach the same θ.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..models.ngram import NgramScorer
from .loop import LoopConfig, Trainer, check_config, train_loop


@dataclass
class NgramConfig(LoopConfig):
    """``fit_ngram``'s settings, beside those every trainer shares
    (:class:`~nfst.train.loop.LoopConfig`; some with other defaults here)."""

    order: int = 1
    """n: each mark is scored given the n − 1 before it (1: a unigram)."""
    steps: int = 60
    """Adam steps of the maximum-likelihood fit."""
    lr: float = field(default=0.1, metadata={"range": "(0, inf)"})
    """Adam learning rate of the fit."""
    batch_size: Optional[int] = None
    """Lattices per step, cycling through the training set; None: all of them."""
    grad_clip: Optional[float] = field(default=None, metadata={"range": "(0, inf)"})
    """Clip the fit's gradient norm to this; None (the n-gram's default): no clipping."""


@dataclass
class NgramResult:
    scorer: NgramScorer
    """Frozen."""
    history: list[dict]
    """Per step: step, log_likelihood (mean over the step's pairs of log p̃_θ(x, y), nats)."""


class _NegLogLikelihood(torch.nn.Module):
    def __init__(self, scorer: NgramScorer):
        super().__init__()
        self.scorer = scorer

    def forward(self, batch: LatticeBatch, generator: torch.Generator):
        """((−mean log p̃_θ(x, y),), mean log p̃_θ(x, y)) over the batch's pairs."""
        log_lik = self.scorer.log_partition(batch).mean()
        return (-log_lik,), log_lik


class _NgramTrainer(Trainer):
    """``fit_ngram``'s part of the loop: fixed batches, built once."""

    distributed = False

    def __init__(
        self,
        train: Sequence[Lattice],
        config: NgramConfig,
        scorer: NgramScorer,
        device: torch.device,
    ):
        super().__init__(f"fit {config.order}-gram", config, train, 0, device)
        opt = torch.optim.Adam(scorer.parameters(), lr=config.lr)
        self.loss = _NegLogLikelihood(scorer)
        self.loss_names = ("the n-gram's negative log-likelihood",)
        self.optimizers = {"the n-gram": opt}
        self.saved = {"scorer": scorer, "opt": opt}
        size = len(train) if config.batch_size is None else min(config.batch_size, len(train))
        self.batches = [
            LatticeBatch(train[lo : lo + size], device) for lo in range(0, len(train), size)
        ]

    def batch(self, step: int) -> LatticeBatch:
        return self.batches[step % len(self.batches)]

    def record(self, step, losses, log_lik, norms) -> dict:
        return {"log_likelihood": float(log_lik.detach())}


def fit_ngram(
    train: Sequence[Lattice],
    config: NgramConfig = NgramConfig(),
    *,
    device: torch.device | str = "cpu",
    quiet: bool = False,
    checkpoint: Optional[str | os.PathLike] = None,
    callback: Optional[Callable[[int, dict], None]] = None,
) -> NgramResult:
    """Fit an :class:`NgramScorer` to ``train`` by exact maximum likelihood (module docstring);
    θ starts at 0 (uniform next-mark distributions), with a row for each of the H histories
    that occur in ``train`` (:meth:`NgramScorer.for_lattices`: H (V + 1) entries, not
    (V + 1)^n). ``checkpoint``: a file to checkpoint to and resume from; ``callback(step,
    record)`` is called after every step."""
    if not train:
        raise ValueError("fit_ngram needs training lattices")
    check_config(config)
    device = torch.device(device)
    scorer = NgramScorer.for_lattices(train, config.order).to(device)
    trainer = _NgramTrainer(train, config, scorer, device)
    history = train_loop(trainer, checkpoint=checkpoint, quiet=quiet, callback=callback)
    return NgramResult(scorer.freeze(), history)
