"""Samplers and scorers as files (nfst.models.files): a model saved and loaded samples and
scores exactly as before; a file that is damaged, of another kind, or of the older layout
without a vocabulary is refused with a clear error."""

import pytest
import torch

import nfst
from nfst import CorruptCacheError, NfstError
from nfst.dp.batch import LatticeBatch
from nfst.models import LSTMScorer, NgramScorer, Vocabulary, make_sampler
from nfst.models.samplers import SamplerConfig
from nfst.runtime import storage
from tests.helpers.lattices import small_lattices, vocabulary_of
from tests.helpers.samplers import SAMPLER_NAMES, dropout_sampler
from tests.helpers.scorers import random_bigram, random_scorer

LATTICES = small_lattices()[:3]  # del/ins lattices, one mark vocabulary


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_a_saved_sampler_samples_the_same_paths(name, tmp_path):
    sampler = dropout_sampler(name, LATTICES).eval()  # float64, weights away from their init
    nfst.save_sampler(sampler, tmp_path / "q.pt")
    loaded = nfst.load_sampler(tmp_path / "q.pt")
    assert type(loaded) is type(sampler) and loaded.vocabulary == sampler.vocabulary
    assert loaded.config == sampler.config and not loaded.training
    batch = LatticeBatch(LATTICES)
    drawn = [q.sample(batch, 6, torch.Generator().manual_seed(3)) for q in (sampler, loaded)]
    assert torch.equal(drawn[0].arcs, drawn[1].arcs)
    assert torch.equal(drawn[0].log_q, drawn[1].log_q)


def test_saved_scorers_score_the_same(tmp_path):
    V = len(LATTICES[0].mark_vocab)
    torch.manual_seed(0)
    ngram = NgramScorer.for_lattices(LATTICES[1:], order=3)  # a row per observed history
    with torch.no_grad():
        ngram.logits.normal_()
    scorers = {
        "lstm": LSTMScorer(V, hidden=8, layers=2, dropout=0.1).double(),
        "ngram": ngram,
        "dense-ngram": random_bigram(LATTICES),
        "arc-factored": random_scorer(V, seed=2),
    }
    paths = make_sampler("swp", vocabulary_of(LATTICES), SamplerConfig(d=4)).sample(
        LatticeBatch(LATTICES), 5, torch.Generator().manual_seed(0)
    )
    for kind, scorer in scorers.items():
        nfst.save_scorer(scorer.freeze(), tmp_path / f"{kind}.pt")
        loaded = nfst.load_scorer(tmp_path / f"{kind}.pt")
        assert type(loaded) is type(scorer), kind
        assert torch.equal(loaded.score_paths(paths), scorer.score_paths(paths)), kind
    assert len(nfst.load_scorer(tmp_path / "ngram.pt").histories) == len(ngram.histories)


def test_damaged_foreign_and_old_files_are_refused_clearly(tmp_path):
    sampler = dropout_sampler("swp", LATTICES)
    path = tmp_path / "swp.pt"
    nfst.save_sampler(sampler, path)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(CorruptCacheError, match="integrity"):
        nfst.load_sampler(path)
    torch.save(sampler.state_dict(), path)
    with pytest.raises(CorruptCacheError, match="not a file nfst wrote"):
        nfst.load_sampler(path)
    storage.save(path, {"state": sampler.state_dict()})  # nfst run's layout before
    with pytest.raises(NfstError, match="older nfst") as caught:
        nfst.load_sampler(path)
    assert "Run.open" in caught.value.hint
    nfst.save_scorer(random_scorer(sampler.vocab_size, seed=0), path)
    with pytest.raises(NfstError, match="a scorer file, not a sampler file"):
        nfst.load_sampler(path)


def test_a_sampler_that_reads_x_and_y_needs_their_symbols():
    marks = Vocabulary(LATTICES[0].mark_vocab)  # no symbols
    for name in ("swa", "sws", "swp-sws"):
        with pytest.raises(ValueError, match="reads x and y"):
            make_sampler(name, marks, SamplerConfig(d=4))
    make_sampler("swp", marks, SamplerConfig(d=4))  # reads neither
    with pytest.raises(TypeError, match="Vocabulary"):
        make_sampler("swp", len(marks.marks), SamplerConfig(d=4))


def test_the_vocabulary_of_an_mfst_lists_its_marks_then_input_and_output_symbols():
    from tests.helpers.lattices import CIPHER

    vocabulary = Vocabulary.of(CIPHER)
    assert vocabulary.marks == CIPHER.mark_alphabet
    assert vocabulary.symbols == CIPHER.input_alphabet + CIPHER.output_alphabet
    sampler = make_sampler("swa", vocabulary, SamplerConfig(d=4))
    with pytest.raises(ValueError, match="another task"):
        sampler.check_batch(LatticeBatch(LATTICES))  # del/ins marks, not the cipher's
