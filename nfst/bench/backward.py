"""``nfst bench backward``: the batched backward pass against OpenFst on the same lattices.

Compiles cipher training lattices, gives their arcs random log-weights, and times
  * nfst: one level-synchronous ``nfst.dp.backward`` over the whole batch (float64);
  * OpenFst: ``pynini.shortestdistance(reverse=True)`` per lattice in a Python loop (log64).
Agreement is checked against OpenFst's exact float64 values (``nfst.fst.openfst_reference``).
"""

from __future__ import annotations

import time

import numpy as np
import pynini
import torch

from ..dp.batch import LatticeBatch
from ..dp.passes import backward
from ..fst.openfst_reference import reverse_shortest_distance
from ..fst.to_openfst import lattice_to_fst
from .common import cipher_lattices, emit, median_seconds


def bench_backward(
    lattices: int = 256, repeat: int = 10, device: str = "cpu", cache_dir=None, seed: int = 0
) -> dict:
    lats = cipher_lattices(lattices, cache_dir=cache_dir)
    batch = LatticeBatch(lats, device=device)
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(batch.num_arcs, generator=g, dtype=torch.float64).to(device)

    def ours():
        beta = backward(batch, w)
        if batch.device.type == "cuda":
            torch.cuda.synchronize()
        return beta

    nfst_s = median_seconds(ours, repeat)
    beta = ours().cpu().numpy()

    offsets = batch.arc_offsets.tolist()
    weights = [w[offsets[b] : offsets[b + 1]].cpu().numpy() for b in range(len(lats))]
    fsts = [lattice_to_fst(lat, wb) for lat, wb in zip(lats, weights)]
    t = time.perf_counter()
    for fst in fsts:
        pynini.shortestdistance(fst, reverse=True)
    openfst_s = time.perf_counter() - t

    s_off = batch.state_offsets.tolist()
    err = max(
        float(np.abs(beta[s_off[b] : s_off[b + 1]] - reverse_shortest_distance(lat, wb)).max())
        for b, (lat, wb) in enumerate(zip(lats, weights))
    )
    n = len(lats)
    return {
        "bench": "backward",
        "device": str(batch.device),
        "lattices": n,
        "mean_states": float(np.mean([lat.num_states for lat in lats])),
        "mean_arcs": float(np.mean([lat.num_arcs for lat in lats])),
        "levels": batch.max_height + 1,
        "nfst_ms_per_lattice": 1e3 * nfst_s / n,
        "openfst_ms_per_lattice": 1e3 * openfst_s / n,
        "speedup_vs_openfst": openfst_s / nfst_s,
        "max_abs_err": err,
    }


if __name__ == "__main__":
    emit(bench_backward())
