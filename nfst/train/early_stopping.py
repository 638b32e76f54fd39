"""Early stopping on a validation value, keeping the parameters of its best step."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class EarlyStopping:
    """Stop after ``patience`` validations without an improvement larger than ``min_delta``,
    keeping the parameters of the last such improvement (lower validation values are
    better)."""

    patience: int
    best_params: dict
    min_delta: float = 0.0
    best: float = math.inf
    best_step: int = 0
    since_best: int = 0
    stopped: bool = False

    def update(self, step: int, value: float, module: torch.nn.Module, count: bool = True) -> bool:
        """Take the validation ``value`` of ``step``; whether it improved. ``count``: False
        keeps a better value's parameters without counting towards the patience."""
        if value < self.best - self.min_delta:
            self.best, self.best_step, self.since_best = value, step, 0
            self.best_params = copy_params(module)
            return True
        if count:
            self.since_best += 1
            self.stopped = self.since_best >= self.patience
        return False

    def state(self) -> dict:
        return {
            "best": self.best,
            "best_step": self.best_step,
            "since_best": self.since_best,
            "best_params": self.best_params,
        }

    def restore(self, state: dict) -> None:
        """The state of a checkpoint; whether to stop is decided again with this patience, so
        that training stopped by a smaller one goes on (``nfst.train.checkpoint.BUDGET``)."""
        self.best, self.best_step, self.since_best, self.best_params = (
            state[key] for key in ("best", "best_step", "since_best", "best_params")
        )
        self.stopped = self.since_best >= max(self.patience, 1)  # as update() decides


def copy_params(module: torch.nn.Module) -> dict:
    """A detached copy of the module's state dict (its parameters at this step)."""
    return {key: v.detach().clone() for key, v in module.state_dict().items()}
