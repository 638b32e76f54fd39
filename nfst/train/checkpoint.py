"""Resumable training state: checkpoints written with ``nfst.runtime.storage``, RNG states, and
the divergence check that points at the last checkpoint.

A checkpoint holds parameters, optimiser, RNG states (dropout, sampling) and the step; with
the deterministic minibatch schedule of ``nfst.fst.dataset.minibatch``, a resumed run ends exactly
where an uninterrupted run with the same seed would.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable, Optional

import torch

from ..errors import NfstError, TrainingDivergedError
from ..runtime import storage
from ..runtime.distributed import from_every_rank, rank_and_world


def rng_state(generator: torch.Generator) -> dict:
    state = {"torch": torch.get_rng_state(), "generator": generator.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict, generator: torch.Generator) -> None:
    torch.set_rng_state(state["torch"])
    generator.set_state(state["generator"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def check_finite(
    value: torch.Tensor, what: str, step: int, checkpoint: Optional[str | os.PathLike]
) -> None:
    if not bool(torch.isfinite(value)):
        where = f"; the last checkpoint is {checkpoint}" if checkpoint else ""
        raise TrainingDivergedError(f"{what} is {float(value.detach())} at step {step}{where}")


BUDGET = ("steps", "patience")
"""A trainer's budget: the config fields with which a finished training resumes to train on
(more steps, more patience; ``nfst run --continue`` raises a run's samplers' budget)."""

RESUMABLE_CHANGES = BUDGET + ("checkpoint_every",)
"""Config fields that may differ between a checkpoint and the run resuming it."""


def config_key(config) -> dict:
    return {k: v for k, v in dataclasses.asdict(config).items() if k not in RESUMABLE_CHANGES}


def training_words(path: str | os.PathLike) -> str:
    """What a stage about to train with the checkpoint ``path`` says it does: ``training``,
    or ``resuming from step N`` where the checkpoint holds N steps."""
    if not Path(path).exists():
        return "training"
    return f"resuming from step {storage.load(path)['step']} (its checkpoint)"


CHECKPOINT_KEYS = ("config", "step", "rng", "history")
"""What every checkpoint holds, besides its trainer's state."""
_FRESH_START = "delete it to train from the start"


def load_checkpoint(path: Optional[str | os.PathLike], config) -> Optional[dict]:
    """The checkpoint at ``path`` if there is one; it must come from the same config (up to
    RESUMABLE_CHANGES: a finished run can be resumed with a larger budget). A file that is no
    checkpoint, or one written by an nfst with other settings, is refused with a hint."""
    if path is None or not Path(path).exists():
        return None
    state = storage.load(path)  # CorruptCacheError if truncated or overwritten
    if not isinstance(state, dict) or not all(key in state for key in CHECKPOINT_KEYS):
        raise NfstError(f"{path} is not a training checkpoint", _FRESH_START)
    key = config_key(config)
    missing = _missing_settings(state["config"], key)
    if missing and not _missing_settings(key, state["config"]):
        raise NfstError(
            f"checkpoint {path} was written by an older nfst, without the "
            f"settings {', '.join(missing)}",
            f"{_FRESH_START}, or finish the run with the nfst that wrote it",
        )
    if state["config"] != key:
        raise NfstError(
            f"checkpoint {path} was written with another configuration",
            "delete it, or pass the configuration it was trained with",
        )
    return state


def _missing_settings(old: dict, new: dict, prefix: str = "") -> list[str]:
    """The dotted names of the settings in ``new`` that ``old`` lacks."""
    missing = [prefix + k for k in new if k not in old]
    return missing + [
        name
        for k, v in new.items()
        if isinstance(v, dict) and isinstance(old.get(k), dict)
        for name in _missing_settings(old[k], v, f"{prefix}{k}.")
    ]


def restore_state(
    path: Optional[str | os.PathLike],
    state: dict,
    restore: Callable[[dict], None],
    generator: torch.Generator,
) -> None:
    """``restore(state)`` (the trainer's parameters, optimisers...) and this rank's RNG
    state, or NfstError naming the checkpoint if they do not fit (other sizes, or a
    checkpoint of another trainer)."""
    try:
        restore(state)
    except (KeyError, RuntimeError, ValueError) as exc:
        why = " ".join(line.strip() for line in str(exc).strip().splitlines()[:2])
        raise NfstError(
            f"checkpoint {path} does not fit this model: {why or type(exc).__name__}", _FRESH_START
        ) from exc
    restore_rng(state, generator)


def save_checkpoint(
    path: Optional[str | os.PathLike], config, step: int, state: dict, generator: torch.Generator
) -> None:
    """Write ``state`` with the config, the step and every rank's RNG state to ``path`` (no-op
    for None). Rank 0 writes; under torchrun every rank returns once it is written (a
    collective: all ranks call it)."""
    if path is None:
        return
    rank, world = rank_and_world()
    rngs = from_every_rank(rng_state(generator), world)
    if rank == 0:
        storage.save(
            path, {"config": config_key(config), "step": step, "rng": rngs, **state}, durable=True
        )
    if world > 1:
        torch.distributed.barrier()


def restore_rng(state: dict, generator: torch.Generator) -> None:
    """This rank's RNG state from a checkpoint (one per rank; a single one in checkpoints from
    before). Resumed on another number of processes, a run goes on but is not bit-identical."""
    rngs = state["rng"] if isinstance(state["rng"], list) else [state["rng"]]
    set_rng_state(rngs[rank_and_world()[0] % len(rngs)], generator)
