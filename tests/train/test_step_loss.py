"""The loss of a step (nfst.train.step_loss.StepLoss) on a minibatch that holds triples."""

import math

import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers import SamplerConfig
from nfst.train.sampler import SamplerTrainConfig
from nfst.train.sleep import TripleFeed, sleep_batch
from nfst.train.step_loss import StepLoss
from nfst.train.triples import draw_triples
from tests.helpers.samplers import new_sampler
from tests.train.test_triples import toy_pairs, unigram


def test_a_wake_sleep_batch_weighs_every_pair_alike():
    """The loss of a batch of 2 triples and 3 usual pairs is the mean over its 5 pairs:
    (Σ −log q(ω) of the triples + 3 · the usual loss of the 3 pairs, a mean over them) / 5."""
    T, lats = toy_pairs()
    scorer = unigram(T, {"d": 0.25, "i": 0.15, "s": 0.35, "EOS": 0.25})
    torch.manual_seed(0)
    sampler = new_sampler("swa", lats).double()
    config = SamplerTrainConfig(sampler=SamplerConfig(d=8, dropout=0.0), batch_size=5, k=4)
    loss = StepLoss(sampler, scorer, config)
    triples = [t for t in draw_triples(scorer, T, 20, seed=0).triples if t[2]][:2]
    with TripleFeed(T, triples) as feed:
        batch = sleep_batch(feed, 0, 2, lats, slice(None), torch.device("cpu"))
    (both,), _ = loss(batch, torch.Generator().manual_seed(1))
    sleep = -sampler.score(batch.sleep, batch.arcs).sum()
    (wake,), _ = loss(LatticeBatch(lats, "cpu"), torch.Generator().manual_seed(1))
    expected = (sleep + 3 * wake).detach() / 5
    assert math.isclose(float(both.detach()), float(expected), rel_tol=1e-9)
