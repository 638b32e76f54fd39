"""Infrastructure every layer may use: atomic checksummed files (``storage``), interrupt
handling (``interrupt``), thread counts (``threads``), devices (``devices``), and sharing work
between torchrun ranks (``distributed``)."""

from .devices import resolve_device
from .distributed import rank_and_world, shared_map
from .threads import cpu_threads, set_threads

__all__ = ["cpu_threads", "rank_and_world", "resolve_device", "set_threads", "shared_map"]
