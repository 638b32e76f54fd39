"""``nfst bench compile``: lattice compilation on cipher's training and test pairs, in one
process: nfst's direct path and nfst's OpenFst path (``CompileOptions.path``), both
without a cache, against OpenFst's bare compose-determinize-minimize on the same pairs; and on
the training pairs, reading them back from the cache. Each timing is the median of ``repeat``
runs, taken in turns so that a change in the machine's load touches all three alike. Wall and
CPU time are both kept: all three are single-threaded, and on a shared machine the process's
CPU time is the steadier of the two."""

from __future__ import annotations

import statistics
import tempfile
import time

import numpy as np

from ..fst.compile import CompileOptions, compile_lattices, compile_path
from ..fst.dataset import compile_dataset
from ..fst.openfst_reference import openfst_lattice
from ..tasks import get_task
from .common import emit

OPENFST = CompileOptions(path="openfst")


def bench_compile(lattices: int = 256, repeat: int = 3) -> dict:
    task = get_task("cipher")
    T = task.mfst()
    if compile_path(T) != "direct":
        raise RuntimeError("cipher's topology should take the direct path")
    result: dict = {"bench": "compile", "repeat": repeat}
    for options in (CompileOptions(), OPENFST):  # T's tables, built once
        compile_lattices(T, task.pairs("train")[:1], options)
    for split in ("train", "test"):
        pairs = task.pairs(split)[:lattices]
        ways = {
            "direct": lambda pairs=pairs: compile_lattices(T, pairs),
            "openfst": lambda pairs=pairs: compile_lattices(T, pairs, OPENFST),
            "bare": lambda pairs=pairs: [openfst_lattice(T, x, y) for x, y in pairs],
        }
        runs, cpu, made = {k: [] for k in ways}, {k: [] for k in ways}, {}
        for _ in range(repeat):
            for way, compile_all in ways.items():
                made[way], wall, seconds = _timed(compile_all)
                runs[way].append(wall)
                cpu[way].append(seconds)
        direct, openfst = made["direct"], made["openfst"]
        for a, b in zip(direct, openfst):
            if not (
                np.array_equal(a.arc_dst, b.arc_dst) and np.array_equal(a.positions, b.positions)
            ):
                raise RuntimeError("the direct and OpenFst paths gave different lattices")
        n = len(pairs)
        ms = {k: 1e3 * statistics.median(v) / n for k, v in runs.items()}
        result[split] = {
            "lattices": n,
            "mean_states": float(np.mean([lat.num_states for lat in direct])),
            "direct_ms_per_lattice": ms["direct"],
            "openfst_path_ms_per_lattice": ms["openfst"],
            "bare_openfst_ms_per_lattice": ms["bare"],
            "direct_over_bare": [d / b for d, b in zip(runs["direct"], runs["bare"])],
            "direct_over_openfst_path": [d / o for d, o in zip(runs["direct"], runs["openfst"])],
            "cpu_direct_over_bare": [d / b for d, b in zip(cpu["direct"], cpu["bare"])],
        }
        for key in ("direct_over_bare", "direct_over_openfst_path", "cpu_direct_over_bare"):
            result[split][f"median_{key}"] = statistics.median(result[split][key])
    pairs = task.pairs("train")[:lattices]
    with tempfile.TemporaryDirectory() as cache:
        compile_dataset(T, pairs, cache_dir=cache, processes=1, progress=False)
        warm, s, _ = _timed(
            lambda: compile_dataset(T, pairs, cache_dir=cache, processes=1, progress=False)
        )
    if warm.cache_hits != len(pairs):
        raise RuntimeError(f"expected {len(pairs)} cache hits, got {warm.cache_hits}")
    result["train"]["cached_ms_per_lattice"] = 1e3 * s / len(pairs)
    for split in ("train", "test"):
        r = result[split]
        print(
            f"{split}: {r['lattices']} lattices, {r['mean_states']:,.0f} states; ms per "
            f"lattice: direct {r['direct_ms_per_lattice']:.2f}, OpenFst path "
            f"{r['openfst_path_ms_per_lattice']:.2f}, bare OpenFst "
            f"{r['bare_openfst_ms_per_lattice']:.2f}; direct / bare "
            f"{r['median_direct_over_bare']:.3f} (median of "
            f"{', '.join(f'{v:.3f}' for v in r['direct_over_bare'])}); in CPU time "
            f"{r['median_cpu_direct_over_bare']:.3f}"
        )
    return result


def _timed(fn):
    """fn's value, and the wall and CPU seconds it took."""
    t, c = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - t, time.process_time() - c


if __name__ == "__main__":
    emit(bench_compile())
