"""A lock held through a file (``nfst.runtime.locks``): another process waits for it."""

import subprocess
import sys
import time

from nfst.runtime.locks import file_lock

TAKE = """import sys
from nfst.runtime.locks import file_lock
print("waiting", flush=True)
with file_lock(sys.argv[1]):
    print("taken", flush=True)
"""


def test_another_process_waits_until_the_lock_is_released(tmp_path):
    path = tmp_path / "locks" / "a.lock"  # its folder is made
    with file_lock(path):
        other = subprocess.Popen(
            [sys.executable, "-c", TAKE, str(path)],
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert other.stdout.readline() == "waiting\n"
        time.sleep(0.5)
        assert other.poll() is None  # still waiting
    out, err = other.communicate(timeout=60)
    assert other.returncode == 0 and out == "taken\n", err
    assert path.exists()  # never deleted
