"""Devices: resolving a device name, and joining a torchrun process group."""

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
        raise NfstError(f"--device {name}: not a device name",
                        "use cpu, cuda, cuda:N or auto")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise NfstError(f"--device {name}: no CUDA device is available", "use --device cpu")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise NfstError(f"--device {name}: there are {torch.cuda.device_count()} CUDA devices",
                        "use cuda:N with N below that, or cuda")
    return device
