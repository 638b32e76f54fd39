"""Operators that one walk of each sampler dispatches per step (not part of the package).

    python tools/walk_ops.py [static]

The bench step's batch (16 cipher training lattices, k 16, d 256, training mode) walked once
under ``no_grad`` with a record, as ``Sampler.sample`` walks it, on the CPU: the eager walk,
or with ``static`` the walk with static shapes (``nfst.models.samplers.graph``), whose step
is what a GPU captures as one CUDA graph. Counted with a ``TorchDispatchMode``; views
(no kernel) are counted apart. Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from nfst.bench.common import cipher_lattices
from nfst.bench.step import SAMPLER_NAMES
from nfst.dp.batch import LatticeBatch
from nfst.models.samplers import SamplerConfig, Vocabulary, WalkRecord, make_sampler
from nfst.tasks import get_task

VIEWS = {
    "unsqueeze",
    "slice",
    "select",
    "t",
    "permute",
    "view",
    "expand",
    "alias",
    "_unsafe_view",
    "squeeze",
    "transpose",
    "as_strided",
    "unbind",
    "split",
    "detach",
    "scalar_tensor",
    "lift_fresh",
}


class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def record(walkers: int, static: bool) -> WalkRecord:
    """The walk's record (the eager one as at 6c86e50, so that the tool runs there too)."""
    return WalkRecord(walkers, static=True) if static else WalkRecord(walkers)


def main(static: bool) -> dict:
    T = get_task("cipher").mfst()
    lats = cipher_lattices(16)
    batch = LatticeBatch(lats)
    lattice = torch.arange(16).repeat_interleave(16)
    out = {"walk": "static" if static else "eager", "max_height": batch.max_height}
    for name in SAMPLER_NAMES:
        torch.manual_seed(0)
        sampler = make_sampler(name, Vocabulary.of(T), SamplerConfig(d=256)).train()
        with torch.no_grad():
            context = sampler.prepare(batch)
            with Count() as count:
                route, _, _ = sampler._walk(
                    batch,
                    context,
                    lattice,
                    16,
                    torch.Generator().manual_seed(0),
                    batch.max_height,
                    record(len(lattice), static),
                )
        steps = route.states.shape[1]  # every walk here reaches the longest path's STOP
        views = sum(n for op, n in count.ops.items() if op in VIEWS)
        out[name] = {
            "per_step": round((sum(count.ops.values()) - views) / steps, 1),
            "views_per_step": round(views / steps, 1),
        }
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:] == ["static"])))
