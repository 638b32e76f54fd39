"""Benchmarks: each compares against a reference in the same run and returns a dict that the CLI
prints as one JSON object on its last line (``nfst bench NAME``)."""

from __future__ import annotations

import importlib
import inspect
from typing import Optional

BENCHMARKS: dict[str, tuple[str, str, str]] = {  # name: (what, module, function)
    "backward": (
        "batched backward pass vs OpenFst shortestdistance",
        "nfst.bench.backward",
        "bench_backward",
    ),
    "compile": ("lattice compilation, cold and cached", "nfst.bench.compile", "bench_compile"),
    "compose": (
        "composing two 10^4-arc topologies, Python vs OpenFst",
        "nfst.bench.compose",
        "bench_compose",
    ),
    "step": ("one training step of each sampler", "nfst.bench.step", "bench_step"),
    "smc": ("particle smoothing over cipher test lattices", "nfst.bench.smc", "bench_smc"),
    "abstract": (
        "abstract particles and distinct samples vs beam and SMC on cipher",
        "nfst.bench.abstract",
        "bench_abstract",
    ),
    "estimates": (
        "log Z and exclusive KL estimates vs exact values under a WFST scorer",
        "nfst.bench.estimates",
        "bench_estimates",
    ),
    "rdp": (
        "randomized DP and randomized SWP vs exact on cipher test lattices",
        "nfst.bench.rdp",
        "bench_rdp",
    ),
}


def run_benchmark(name: str, **options) -> dict:
    """Run benchmark ``name`` with the ``options`` it accepts (None: its default); prints and
    returns its result."""
    from .common import emit

    _, module, func = BENCHMARKS[name]
    fn = getattr(importlib.import_module(module), func)
    accepted = inspect.signature(fn).parameters
    result = fn(**{k: v for k, v in options.items() if v is not None and k in accepted})
    emit(result)
    return result


def bench_command(o, name: str, lattices: Optional[int]) -> None:
    """``nfst bench NAME``, given what the command line asks (a
    :class:`~nfst.experiment.opening.RunRequest`) and its own flags."""
    run_benchmark(
        name, lattices=lattices, device=o.device, run_dir=o.run_dir, cache_dir=o.cache_dir
    )
