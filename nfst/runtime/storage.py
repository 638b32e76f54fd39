"""Checksummed, atomically written files for caches and checkpoints (and atomic writes of any
file: :func:`write_atomically`).

Layout: an 8-byte magic tag, the SHA-256 of the payload, then the payload (a pickle). A reader
that finds a wrong tag or digest raises CorruptCacheError instead of trusting the bytes; a
writer writes a temporary file in the same directory and renames it, so a crash never leaves a
half-written file under the final name.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import secrets
from pathlib import Path
from typing import Any

from ..errors import CorruptCacheError

MAGIC = b"NFST\x00v1\n"


def save(path: str | os.PathLike, obj: Any, *, durable: bool = False) -> None:
    """Write ``obj``; ``durable`` also flushes it to disk (for checkpoints, not caches)."""
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    write_atomically(path, MAGIC + hashlib.sha256(payload).digest() + payload, durable=durable)


def write_atomically(path: str | os.PathLike, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, renamed over
    it: a reader sees all of it or none, and a crash never leaves a half-written file under
    the final name. ``durable`` also flushes it to disk first. Its permissions are the
    umask's, as for a file written with ``open()``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # os.open with mode 0o666 lets the umask set the permissions, as for any file written with
    # open() (0644 under umask 022); tempfile.mkstemp would make every file 0600
    tmp = path.parent / f"{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path: str | os.PathLike) -> Any:
    """Read a file written by ``save``; raises CorruptCacheError if it fails its check."""
    data = Path(path).read_bytes()
    head, digest, payload = (
        data[: len(MAGIC)],
        data[len(MAGIC) : len(MAGIC) + 32],
        data[len(MAGIC) + 32 :],
    )
    if head != MAGIC and not MAGIC.startswith(head):  # a short file is a truncated one
        raise CorruptCacheError(
            f"{path}: not a file nfst wrote (no NFST header: written by "
            f"something else, torch.save say, or overwritten)"
        )
    if head != MAGIC or hashlib.sha256(payload).digest() != digest:
        raise CorruptCacheError(f"{path}: failed its integrity check (truncated or overwritten)")
    try:
        return pickle.loads(payload)
    except Exception as exc:  # a matching digest over an unreadable pickle: wrong version
        raise CorruptCacheError(f"{path}: unreadable ({exc})") from exc
