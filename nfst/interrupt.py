"""Graceful interruption of long loops.

Inside ``graceful_interrupts()``, SIGINT and SIGTERM only set a flag; a training loop polls
``interrupt_requested()`` between steps, writes its checkpoint and raises ``Interrupted``, so
the checkpoint always holds a whole step. A second signal interrupts at once.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from .errors import NfstError

_requested = False


class Interrupted(NfstError):
    """Stopped by SIGINT/SIGTERM after writing a checkpoint."""

    hint = "run the same command again to resume from the checkpoint"


def interrupt_requested() -> bool:
    return _requested


@contextmanager
def graceful_interrupts():
    global _requested
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def handler(signum, frame):
        global _requested
        if _requested:
            raise KeyboardInterrupt
        _requested = True

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    _requested = False
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _requested = False
