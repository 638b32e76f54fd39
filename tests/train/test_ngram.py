"""Fitting the mark n-gram scorer by exact maximum likelihood (nfst.train.ngram), and the LSTM
scorer trained on its posterior's paths (nfst.train.scorer), on a tiny cipher task."""

import pytest

from nfst import compile_lattice
from nfst.dp.batch import LatticeBatch
from nfst.evaluate.log_z import estimate_log_z
from nfst.tasks import get_task
from nfst.train.ngram import NgramConfig, fit_ngram
from nfst.train.scorer import ScorerConfig, train_scorer
from tests.helpers.lattices import del_ins_lattices


@pytest.fixture(scope="module")
def tiny_cipher():
    """2 ciphers over 4 letters, 48 training and 24 test pairs (x of 6–8 letters, so that the
    two ciphers can be told apart), and the test structure."""
    task = get_task("cipher", alphabet_size=4, num_ciphers=2, train_size=48, eval_size=24,
                    mean_len=5.0, test_min_len=6, test_mean_len=8.0)
    T = task.mfst()
    lattices = {split: [compile_lattice(T, x, y) for x, y in task.pairs(split)]
                for split in ("train", "test")}
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
    config = ScorerConfig(hidden=32, layers=1, dropout=0.0, steps=150, batch_size=16, K=8,
                          lr=1e-2, label_smoothing=0.0, proposal="ngram")
    result = train_scorer(train, config, symbols="abcd", ngram=ngram, quiet=True)
    assert result.history[-1]["iwae"] > result.history[0]["iwae"] + 5
    log_z = estimate_log_z({"n-gram": ngram.posterior()}, result.scorer, test, 64,
                           structure=structure)
    # 0.92 with the n-gram's paths; the trigram's own posterior has 0.85
    assert log_z["generating_cipher"] > 0.75, log_z["generating_cipher"]
