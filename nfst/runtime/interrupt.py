"""Graceful interruption of long work.

Inside ``graceful_interrupts()`` (every CLI command runs in it), SIGINT and SIGTERM stop the
program at the next point where nothing is lost:

* inside ``checkpointed()`` (a training loop), a signal only sets a flag; the loop polls
  ``interrupt_requested()`` between steps, writes its checkpoint and raises ``Interrupted``,
  so the checkpoint always holds a whole step. A second signal interrupts at once;
* anywhere else a signal raises ``KeyboardInterrupt`` at once: pipeline stages, models and
  cache entries are written atomically when they finish, so unfinished work leaves nothing
  behind and running the command again redoes just that.

Either way the command exits with :func:`exit_status`, 128 + the signal's number (the shell's
convention: 130 for SIGINT, 143 for SIGTERM), whichever stage it was in.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from ..errors import Interrupted

_requested = False
_checkpointed_depth = 0
_received = signal.SIGINT
"""The last signal handled (a KeyboardInterrupt raised otherwise counts as SIGINT)."""


def interrupt_requested() -> bool:
    return _requested


def exit_status() -> int:
    """128 + the number of the last signal that interrupted the program (SIGINT: 130,
    SIGTERM: 143): the exit status of a command it stopped."""
    return 128 + _received


def _handler(signum, frame):
    global _requested, _received
    _received = signal.Signals(signum)
    if _checkpointed_depth and not _requested:
        _requested = True
        return
    raise KeyboardInterrupt


@contextmanager
def graceful_interrupts():
    global _requested, _received
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    old = {s: signal.signal(s, _handler) for s in (signal.SIGINT, signal.SIGTERM)}
    _requested, _received = False, signal.SIGINT
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _requested = False


@contextmanager
def checkpointed():
    """A loop that polls ``interrupt_requested()`` and checkpoints before it stops. A signal
    that came after its last poll stops the program as it leaves the loop."""
    global _checkpointed_depth
    _checkpointed_depth += 1
    try:
        yield
    finally:
        _checkpointed_depth -= 1
    if _requested and not _checkpointed_depth:
        raise Interrupted("interrupted after the last checkpoint was written")
