"""Evaluation and SMC evaluation under torchrun share the work between ranks and give the
results of one process exactly (each minibatch and SMC run draws from its own generator)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from nfst.evaluate.samplers import evaluate
from nfst.evaluate.smc import evaluate_smc
from nfst.models.samplers import SamplerConfig, Vocabulary, make_sampler
from nfst.smc.lookahead import BetaLookahead
from tests.helpers.lattices import small_batch
from tests.helpers.scorers import random_scorer


def evaluate_both() -> dict:
    """Sampler evaluation (one pair per minibatch: 4 minibatches) and SMC evaluation."""
    lattices = small_batch().lattices
    vocab = len(lattices[0].mark_vocab)
    scorer = random_scorer(vocab, seed=0, scale=0.5, normalised=True)
    torch.manual_seed(0)
    sampler = make_sampler("swp", Vocabulary(lattices[0].mark_vocab),
                           SamplerConfig(d=8, dropout=0.0)).eval()
    samplers = evaluate({"swp": sampler}, scorer, lattices, k=4, batch_size=1, seed=3, quiet=True)
    smc = evaluate_smc(sampler, scorer, lattices, particles=(2, 4), runs=2, seed=3,
                       lookahead=BetaLookahead.exact(scorer))
    for res in smc["methods"].values():  # timings differ from run to run
        res.pop("seconds")
    smc["lookahead"].pop("abstract_fit_seconds")
    return {"evaluate": samplers, "smc": smc}


def test_two_ranks_give_the_results_of_one_process(tmp_path):
    worker = Path(__file__).with_name("ddp_eval_worker.py")
    root = Path(__file__).parents[2]
    out = tmp_path / "result.json"
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           "--master_port=29518", str(worker), str(out)], cwd=root,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(out.read_text()) == json.loads(json.dumps(evaluate_both()))
