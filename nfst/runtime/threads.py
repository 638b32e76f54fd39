"""CPU thread counts, set in one place.

The level loops (backward pass, SWP, sampling, SMC) are many small tensor ops per step, where
OpenMP synchronisation costs more than it saves, and on a busy 2-core machine spinning threads
made a pass 5–50× slower. So those loops run with :func:`loop_threads` intra-op threads (1
unless the user asks for more, e.g. ``nfst --threads N``), inside :func:`cpu_threads`.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

_loop_threads = 1


def set_threads(n: int) -> None:
    """Use ``n`` intra-op threads everywhere on CPU: in torch and in the level loops."""
    global _loop_threads
    if n < 1:
        raise ValueError(f"thread count must be at least 1, got {n}")
    _loop_threads = n
    torch.set_num_threads(n)


def loop_threads() -> int:
    """The intra-op thread count of the level loops."""
    return _loop_threads


@contextmanager
def cpu_threads(device: torch.device):
    """Run a level loop with :func:`loop_threads` intra-op threads when on CPU."""
    n = _loop_threads
    if device.type != "cpu" or torch.get_num_threads() == n:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)
