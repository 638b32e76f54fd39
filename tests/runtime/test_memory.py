"""Freed memory kept for reuse (``nfst.runtime.memory``): large blocks freed and allocated
again fault no fresh pages, where glibc's default policy faults every page again."""

import subprocess
import sys

import pytest

from nfst.runtime.memory import keep_freed_memory

# Rounds of twelve blocks of 4, 8 and 12 MiB in turn, each round's freed at once (as a
# training step's): the page faults of the rounds after the heap has grown to the largest (the
# fourth to the sixth). glibc's default policy raises its thresholds as blocks are freed and
# still gives back the heap's free top, and most pages fault again in every round.
ROUNDS = """
import resource, sys, torch
from nfst.runtime.memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for r in range(6):
    if r == 3:
        before = faults()
    blocks = [torch.ones((r % 3 + 1) << 20) for _ in range(12)]
    del blocks
print(faults() - before)
"""


def faults(policy: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", ROUNDS, policy], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_kept_memory_is_reused_without_page_faults():
    if not keep_freed_memory():
        pytest.skip("the C library is not glibc")
    pages = 12 * (4 << 20) // 4096  # of the smallest round
    assert faults("default") > pages
    assert faults("keep") < pages // 20
