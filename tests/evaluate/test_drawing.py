"""Drawing the samples an evaluation scores: both models in eval mode for the draw."""

import torch

from nfst.dp.batch import LatticeBatch
from nfst.evaluate.drawing import draw
from nfst.evaluate.samplers import summarize_distinct
from nfst.models.samplers import SamplerConfig, make_sampler
from nfst.models.scorer import LSTMScorer
from tests.helpers.lattices import del_ins_lattices
from tests.helpers.samplers import vocabulary_of


def test_draw_runs_both_models_in_eval_mode_and_restores_their_modes():
    """With dropout on in training mode, a sampler or scorer left in training mode would give
    log q or log p̃ that no recomputation in eval mode reproduces."""
    lats = del_ins_lattices()
    torch.manual_seed(0)
    vocab = len(lats[0].mark_vocab)
    sampler = make_sampler("swa", vocabulary_of(lats), SamplerConfig(d=8, dropout=0.5)).double()
    scorer = LSTMScorer(vocab, hidden=8, layers=2, dropout=0.5).double()
    for sampler_mode, scorer_mode in ((True, False), (False, True)):
        sampler.train(sampler_mode)
        scorer.train(scorer_mode)
        samples = draw(sampler, scorer, lats, 4, batch_size=2, seed=1)
        assert (sampler.training, scorer.training) == (sampler_mode, scorer_mode)
        sampler.eval()
        scorer.eval()
        batch = LatticeBatch(lats)
        with torch.no_grad():
            for b, s in enumerate(samples):
                arcs = torch.where(s.arcs >= 0, s.arcs + batch.arc_offsets[b], s.arcs)
                log_q = sampler.score(LatticeBatch([lats[b]]), s.arcs[None])[0]
                marks = torch.where(arcs >= 0, batch.arc_mark[arcs.clamp(min=0)], arcs)
                torch.testing.assert_close(s.log_q, log_q, rtol=0, atol=1e-10)
                torch.testing.assert_close(
                    s.log_p, scorer.log_prob(marks, s.lengths), rtol=0, atol=1e-10
                )
    # the distinct-paths summary too: the same figures whatever mode the models were in
    expected = summarize_distinct(sampler, scorer, lats, 4, batch_size=2, seed=1)
    sampler.train()
    scorer.train()
    assert summarize_distinct(sampler, scorer, lats, 4, batch_size=2, seed=1) == expected
    assert sampler.training and scorer.training
