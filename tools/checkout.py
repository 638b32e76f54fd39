"""The commit a tool's output records."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def head_commit() -> str:
    """The checkout's HEAD as a short hash; where git cannot tell (a copy without its history,
    as on the device machine), $COMMIT, else "unknown"."""
    found = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return found.stdout.strip() or os.environ.get("COMMIT", "unknown")
