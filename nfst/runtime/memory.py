"""The C heap's policy in an ``nfst`` process: freed memory is kept for reuse.

A training step on a CPU allocates and frees the same large buffers at every step (tens of
MB: Algorithm 1's per-state and per-arc rows, the recurrences' rows, the scorer's buckets).
glibc's malloc serves a block over its mmap threshold (128 KiB at first, raised up to 32 MiB as
such blocks are freed) with fresh pages from the kernel and returns them on free, and it gives
back the heap's free top beyond twice that threshold; each of those pages faults and is zeroed
again when next touched, step after step: 15,000–40,000 page faults per d-256 training step of
``nfst bench step``, about 5–10% of the step. :func:`keep_freed_memory` has malloc serve blocks
up to 32 MiB from its heap and keep up to 1 GiB of it free for reuse; ``nfst`` commands call it
once (``nfst.experiment.commands.execute``).
"""

from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3


def keep_freed_memory(mmap_threshold: int = 32 << 20, trim_threshold: int = 1 << 30) -> bool:
    """Have glibc's malloc serve blocks up to ``mmap_threshold`` bytes from its heap (32 MiB is
    glibc's largest) and give the heap's free top back to the system only beyond
    ``trim_threshold`` bytes. Returns whether it took both; False where the C library has no
    ``mallopt`` (not glibc), which then keeps its own policy."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return (
        mallopt(_M_MMAP_THRESHOLD, mmap_threshold) == 1
        and mallopt(_M_TRIM_THRESHOLD, trim_threshold) == 1
    )
