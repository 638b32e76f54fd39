"""``nfst bench compile``: lattice compilation cold (empty cache) and warm (cached), in one
process, on cipher training pairs, against OpenFst's bare compose-determinize-minimize on the
same pairs."""

from __future__ import annotations

import tempfile
import time

import numpy as np

from ..fst.dataset import compile_dataset
from ..fst.openfst_reference import openfst_lattice
from ..tasks import get_task
from .common import emit


def bench_compile(lattices: int = 256) -> dict:
    task = get_task("cipher")
    T, pairs = task.mfst(), task.pairs("train")[:lattices]
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        cold = compile_dataset(T, pairs, cache_dir=cache, processes=1, progress=False)
        cold_s = time.perf_counter() - t
        t = time.perf_counter()
        warm = compile_dataset(T, pairs, cache_dir=cache, processes=1, progress=False)
        warm_s = time.perf_counter() - t
    t = time.perf_counter()
    for x, y in pairs:
        openfst_lattice(T, x, y)
    openfst_s = time.perf_counter() - t
    n = len(pairs)
    if warm.cache_hits != len(cold.lattices):
        raise RuntimeError(f"expected {len(cold.lattices)} cache hits, got {warm.cache_hits}")
    return {
        "bench": "compile", "lattices": n,
        "mean_states": float(np.mean([lat.num_states for lat in cold.lattices])),
        "ms_per_lattice": 1e3 * cold_s / n,
        "cached_ms_per_lattice": 1e3 * warm_s / n,
        "openfst_ms_per_lattice": 1e3 * openfst_s / n,
        "speedup_vs_openfst": openfst_s / cold_s,
    }


if __name__ == "__main__":
    emit(bench_compile())
