"""Devices: resolving a device name, placing worker processes on GPUs, and joining a torchrun
process group."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from ..errors import NfstError


def init_distributed(device: str) -> str:
    """Join the torchrun process group (NCCL on GPUs, gloo on CPUs); one GPU per process."""
    cuda = device.startswith("cuda")
    if cuda:
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo")
    return device


def resolve_device(name: str) -> torch.device:
    """``auto`` is the GPU when one is present, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise NfstError(f"--device {name}: not a device name", "use cpu, cuda, cuda:N or auto")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise NfstError(f"--device {name}: no CUDA device is available", "use --device cpu")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise NfstError(
            f"--device {name}: there are {torch.cuda.device_count()} CUDA devices",
            "use cuda:N with N below that, or cuda",
        )
    return device


def worker_device(device: str, worker: int, gpus: int) -> str:
    """The device of the ``worker``-th (from 0) of a command's worker processes (``--jobs``),
    on ``device``, the command's, with ``gpus`` GPUs present: on ``cuda`` without an index
    (``--device cuda``, or ``auto`` where there is a GPU) worker i takes cuda:(i mod gpus), so
    that the workers spread over the GPUs; a device named with its index (``cuda:1``) and the
    CPU are every worker's."""
    if device == "cuda" and gpus > 0:
        return f"cuda:{worker % gpus}"
    return device
