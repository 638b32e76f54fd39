"""Sampler and scorer training under torchrun + DistributedDataParallel (gloo on CPU)."""

import re
import subprocess
import sys
from pathlib import Path


def test_ddp_training_keeps_ranks_in_sync_and_resumes_exactly(tmp_path):
    worker = Path(__file__).with_name("ddp_worker.py")
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node=2",
            "--master_port=29517",
            str(worker),
            str(tmp_path),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr[:3000]
    assert sorted(re.findall(r"rank (\d) ok", done.stdout)) == ["0", "1"], done.stdout
