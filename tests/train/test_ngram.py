"""Fitting the mark n-gram scorer by exact maximum likelihood (nfst.train.ngram), and the LSTM
scorer trained on its posterior's paths (nfst.train.scorer), on a tiny cipher task."""

import pytest
import torch

from nfst import compile_lattice
from nfst.dp.batch import LatticeBatch
from nfst.evaluate.log_z import estimate_log_z
from nfst.fst.history import expand_history
from nfst.models.ngram import NgramScorer
from nfst.tasks import get_task
from nfst.train.loop import train_loop
from nfst.train.ngram import NgramConfig, _NgramTrainer, fit_ngram
from nfst.train.scorer import ScorerConfig, train_scorer
from tests.helpers.lattices import del_ins_lattices


@pytest.fixture(scope="module")
def tiny_cipher():
    """2 ciphers over 4 letters, 48 training and 24 test pairs (x of 6–8 letters, so that the
    two ciphers can be told apart), and the test structure."""
    task = get_task(
        "cipher",
        alphabet_size=4,
        num_ciphers=2,
        train_size=48,
        eval_size=24,
        mean_len=5.0,
        test_min_len=6,
        test_mean_len=8.0,
    )
    T = task.mfst()
    lattices = {
        split: [compile_lattice(T, x, y) for x, y in task.pairs(split)]
        for split in ("train", "test")
    }
    return lattices["train"], lattices["test"], task.structure("test")


def test_the_log_likelihood_rises_from_step_0():
    lats = del_ins_lattices()
    result = fit_ngram(lats, NgramConfig(order=2, steps=30, lr=0.1), quiet=True)
    curve = [h["log_likelihood"] for h in result.history]
    assert curve[-1] > curve[0] + 0.5
    final = float(result.scorer.log_partition(LatticeBatch(lats)).mean())
    assert final >= curve[-1] - 1e-9  # the last recorded value is before the last step
    assert not any(p.requires_grad for p in result.scorer.parameters())


def test_the_ngram_posterior_finds_the_generating_cipher(tiny_cipher):
    train, test, structure = tiny_cipher
    ngram = fit_ngram(train, NgramConfig(order=1, steps=40), quiet=True).scorer
    post = ngram.arc_posteriors(LatticeBatch(test))
    batch = LatticeBatch(test)
    shares = []
    for b, lat in enumerate(test):  # posterior mass of the arcs that name the right cipher
        arcs = range(int(batch.arc_offsets[b]), int(batch.arc_offsets[b + 1]))
        mass = {m: 0.0 for m in ("cipher_0", "cipher_1")}
        for a in arcs:
            name = lat.mark_vocab[int(batch.arc_mark[a])]
            if name in mass:
                mass[name] += float(post[a])
        right = [m for m in mass if structure.agrees(lat, (m,))][0]
        shares.append(mass[right] / sum(mass.values()))
    assert sum(shares) / len(shares) > 0.8, shares


def test_the_lstm_trained_on_ngram_paths_learns_the_ciphers(tiny_cipher):
    train, test, structure = tiny_cipher
    ngram = fit_ngram(train, NgramConfig(order=3, steps=40), quiet=True).scorer
    config = ScorerConfig(
        hidden=32,
        layers=1,
        dropout=0.0,
        steps=150,
        batch_size=16,
        K=8,
        lr=1e-2,
        label_smoothing=0.0,
        proposal="ngram",
    )
    result = train_scorer(train, config, ngram=ngram, quiet=True)
    assert result.history[-1]["iwae"] > result.history[0]["iwae"] + 5
    log_z = estimate_log_z(
        {"n-gram": ngram.posterior()}, result.scorer, test, 64, structure=structure
    )
    # 0.92 with the n-gram's paths; the trigram's own posterior has 0.85
    assert log_z["generating_cipher"] > 0.75, log_z["generating_cipher"]


def test_the_fitted_ngram_stores_observed_histories_and_scores_as_the_dense_one():
    """fit_ngram keeps a row of θ only for the histories of the training lattices; a dense θ
    (every (V + 1)^(n − 1) history) fitted by the same steps gives the same values on the test
    pairs (whose histories include unseen ones, uniform in both) and the same scores."""
    lats, order = del_ins_lattices(), 3
    train, test = lats[1:], lats  # the test pairs reach histories the training pairs do not
    config = NgramConfig(order=order, steps=15)
    sparse = fit_ngram(train, config, quiet=True).scorer
    dense = NgramScorer(sparse.vocab_size, order)
    train_loop(_NgramTrainer(train, config, dense, torch.device("cpu")), quiet=True)
    V = sparse.vocab_size
    assert len(sparse.histories) < (V + 1) ** (order - 1)
    assert sparse.logits.numel() == len(sparse.histories) * (V + 1)
    assert torch.equal(sparse.logits, dense.logits[sparse.histories])
    batch = LatticeBatch(test)
    seen = set(sparse.histories.tolist())
    unseen = {int(h) for lat in test for h in expand_history(lat, order - 1).history} - seen
    assert unseen, "the test pairs should reach histories the training pairs do not"
    assert torch.allclose(
        sparse.log_partition(batch), dense.log_partition(batch), rtol=0, atol=1e-12
    )
    paths = dense.posterior().sample(batch, 8, torch.Generator().manual_seed(0))
    assert torch.allclose(sparse.score_paths(paths), dense.score_paths(paths), rtol=0, atol=1e-12)


def test_a_dense_table_too_large_is_refused():
    with pytest.raises(ValueError, match="for_lattices"):
        NgramScorer(1000, 3)
