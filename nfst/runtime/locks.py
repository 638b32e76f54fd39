"""A lock held through a file, for processes that share a folder: on one machine, or on the
nodes of a cluster whose shared file system honours locks (NFS does; Lustre mounted with
``flock``)."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (made, with its folder, if missing; never deleted:
    a process that deleted it could let two others lock two different files) for the
    ``with`` block, waiting while another process holds it. The system releases it when
    its holder exits, however it exits. Not reentrant: a process that takes it twice waits
    for itself."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
