"""Shared pieces of the benchmarks: the cipher training lattices, timing, JSON output."""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Callable, Optional

from ..fst.dataset import compile_dataset
from ..fst.lattice import Lattice
from ..tasks import get_task


def cipher_lattices(n: int, split: str = "train", cache_dir: Optional[str] = None,
                    processes: int = 2, progress: bool = False) -> list[Lattice]:
    """The first ``n`` lattices of the cipher task (synthetic: no data needed)."""
    task = get_task("cipher")
    pairs = task.pairs(split)[:n]
    return compile_dataset(task.mfst(), pairs, cache_dir=cache_dir, processes=processes,
                           progress=progress).lattices


def median_seconds(fn: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def emit(result: dict) -> None:
    """Print the machine-readable last line."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
