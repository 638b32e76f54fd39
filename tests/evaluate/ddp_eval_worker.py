"""Run by tests/evaluate/test_distributed.py under torchrun: evaluation on 2 CPU ranks."""

import json
import sys
from pathlib import Path

import torch.distributed as dist

from tests.helpers.evaluation import evaluate_both

dist.init_process_group("gloo")
result = evaluate_both()
if dist.get_rank() == 0:
    Path(sys.argv[1]).write_text(json.dumps(result))
dist.destroy_process_group()
