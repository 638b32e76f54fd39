"""The evaluation that tests/evaluate/test_distributed.py runs in one process and its torchrun
worker (ddp_eval_worker.py) on two ranks."""

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
    sampler = make_sampler(
        "swp", Vocabulary(lattices[0].mark_vocab), SamplerConfig(d=8, dropout=0.0)
    ).eval()
    samplers = evaluate({"swp": sampler}, scorer, lattices, k=4, batch_size=1, seed=3, quiet=True)
    smc = evaluate_smc(
        sampler,
        scorer,
        lattices,
        particles=(2, 4),
        runs=2,
        seed=3,
        lookahead=BetaLookahead.exact(scorer),
    )
    for res in smc["methods"].values():  # timings differ from run to run
        res.pop("seconds")
    smc["lookahead"].pop("abstract_fit_seconds")
    return {"evaluate": samplers, "smc": smc}
