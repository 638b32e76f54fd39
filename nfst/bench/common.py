"""Shared pieces of the benchmarks: the cipher training lattices, timing, operator counts, JSON
output."""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Callable, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..fst.dataset import compile_dataset
from ..fst.lattice import Lattice
from ..tasks import get_task


def cipher_lattices(
    n: int,
    split: str = "train",
    cache_dir: Optional[str] = None,
    processes: int = 2,
    progress: bool = False,
) -> list[Lattice]:
    """The first ``n`` lattices of the cipher task (synthetic: no data needed)."""
    task = get_task("cipher")
    pairs = task.pairs(split)[:n]
    return compile_dataset(
        task.mfst(), pairs, cache_dir=cache_dir, processes=processes, progress=progress
    ).lattices


def median_seconds(fn: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


class OpCounter(TorchDispatchMode):
    """Counts, while active, the operators that reach the kernels (below autograd, so the
    backward pass's too: autograd carries the mode to its threads): ``ops``, every aten
    operator but views, which move no data (a device-independent count of the kernels a GPU
    would launch, foreach and fused operators counting once); ``syncs``, those of them whose
    result's value or shape the host must wait for on a GPU (``.item()``, ``int()`` or ``bool()``
    of a tensor, ``nonzero``, boolean masks, ``unique``), none of which a CUDA graph can hold."""

    def __init__(self):
        super().__init__()
        self.ops = 0
        self.syncs = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += not func.is_view
        self.syncs += _waits_for_values(func, args)
        return func(*args, **(kwargs or {}))


def _waits_for_values(func, args) -> bool:
    """Whether ``func`` on ``args`` needs tensor values on the host (``OpCounter``)."""
    if func.overloadpacket in _INDEXING:  # only boolean indices do
        return any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] if i is not None
        )
    return any(
        tag in func.tags
        for tag in (torch.Tag.data_dependent_output, torch.Tag.dynamic_output_shape)
    )


_INDEXING = (
    torch.ops.aten.index,
    torch.ops.aten.index_put,
    torch.ops.aten.index_put_,
    torch.ops.aten._index_put_impl_,
)


def emit(result: dict) -> None:
    """Print the machine-readable last line."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
