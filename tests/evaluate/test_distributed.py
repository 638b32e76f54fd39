"""Evaluation and SMC evaluation under torchrun share the work between ranks and give the
results of one process exactly (each minibatch and SMC run draws from its own generator)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.evaluation import evaluate_both


def test_two_ranks_give_the_results_of_one_process(tmp_path):
    worker = Path(__file__).with_name("ddp_eval_worker.py")
    root = Path(__file__).parents[2]
    out = tmp_path / "result.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node=2",
            "--master_port=29518",
            str(worker),
            str(out),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(out.read_text()) == json.loads(json.dumps(evaluate_both()))
