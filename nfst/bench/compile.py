"""``nfst bench compile``: lattice compilation on cipher's training and test pairs, in one
process: nfst's direct path and nfst's OpenFst path (``CompileOptions.path``), both
without a cache, against OpenFst's bare compose-determinize-minimize on the same pairs; and on
the training pairs, reading them back from the cache. Each timing is the median of ``repeat``
runs, taken in turns so that a change in the machine's load touches all three alike."""

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


def bench_compile(lattices: int = 256, repeat: int = 3) -> dict:
    task = get_task("cipher")
    T = task.mfst()
    if compile_path(T) != "direct":
        raise RuntimeError("cipher's topology should take the direct path")
    result: dict = {"bench": "compile", "repeat": repeat}
    for options in (CompileOptions(), CompileOptions(path="openfst")):  # T's tables, built once
        compile_lattices(T, task.pairs("train")[:1], options)
    for split in ("train", "test"):
        pairs = task.pairs(split)[:lattices]
        runs = {"direct": [], "openfst": [], "bare": []}
        for _ in range(repeat):
            direct, s = _timed(lambda pairs=pairs: compile_lattices(T, pairs))
            runs["direct"].append(s)
            openfst, s = _timed(
                lambda pairs=pairs: compile_lattices(T, pairs, CompileOptions(path="openfst"))
            )
            runs["openfst"].append(s)
            bare = _timed(lambda pairs=pairs: [openfst_lattice(T, x, y) for x, y in pairs])
            runs["bare"].append(bare[1])
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
        }
        for key in ("direct_over_bare", "direct_over_openfst_path"):
            result[split][f"median_{key}"] = statistics.median(result[split][key])
    pairs = task.pairs("train")[:lattices]
    with tempfile.TemporaryDirectory() as cache:
        compile_dataset(T, pairs, cache_dir=cache, processes=1, progress=False)
        warm, s = _timed(
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
            f"{', '.join(f'{v:.3f}' for v in r['direct_over_bare'])})"
        )
    return result


def _timed(fn):
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t


if __name__ == "__main__":
    emit(bench_compile())
