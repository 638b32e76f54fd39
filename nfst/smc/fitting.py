"""Fitting the learned lookahead c_φ (000 §3.3) by regression on the particles of a fixed
proposal: ``LearnedLookahead.regression_loss`` on complete paths drawn by importance sampling.
"""

from __future__ import annotations

from typing import Sequence

import torch
from tqdm.auto import tqdm

from ..dp.batch import LatticeBatch
from ..fst.dataset import minibatch
from ..fst.lattice import Lattice
from ..models.samplers.base import Sampler
from ..models.scorer import Scorer
from ..runtime.threads import cpu_threads
from .engine import SMCConfig, smc
from .lookahead import LearnedLookahead


def fit_lookahead(
    lookahead: LearnedLookahead,
    sampler: Sampler,
    scorer: Scorer,
    lattices: Sequence[Lattice],
    steps: int = 200,
    batch_size: int = 16,
    particles: int = 16,
    lr: float = 1e-2,
    seed: int = 0,
    device: str | torch.device = "cpu",
    quiet: bool = True,
) -> list[float]:
    """Regress c_φ on the log-weight-to-go of complete paths drawn from ``sampler`` by
    importance sampling (``LearnedLookahead.regression_loss``); returns the loss per step."""
    opt = torch.optim.Adam(lookahead.parameters(), lr=lr)
    generator = torch.Generator(device=device).manual_seed(seed)
    config = SMCConfig(particles=particles, resample_threshold=0.0)
    history = []
    for step in tqdm(range(steps), desc="fit lookahead", disable=quiet):
        batch = LatticeBatch(minibatch(lattices, batch_size, seed, step), device)
        with cpu_threads(batch.device):
            with torch.no_grad():
                r = smc(batch, sampler, scorer, None, config, generator)
            loss = lookahead.regression_loss(batch, r.arcs, r.step_log_p, r.step_log_q)
            opt.zero_grad()
            loss.backward()
            opt.step()
        history.append(float(loss.detach()))
    return history
