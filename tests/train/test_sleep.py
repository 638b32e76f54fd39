"""The sleep phase's feed of compiled triples (nfst.train.sleep.TripleFeed): chunks compiled
through the dataset compiler's processes and on-disk cache, shared by every feed of the same
triples."""

import numpy as np

from nfst.fst.compile import compile_lattice
from nfst.fst.mark_strings import path_arcs
from nfst.train.sleep import TripleFeed
from nfst.train.triples import draw_triples
from tests.train.test_triples import pairs_topology, unigram


def test_shared_compiled_triples_are_the_lattices_compiled_one_by_one(tmp_path, monkeypatch):
    """A feed compiling chunks in 2 processes into a cache gives, item for item, the lattice
    and ω's arcs of compiling each triple alone; a second feed of the same triples reads them
    all from the cache (compiling nothing), in another chunking."""
    T = pairs_topology()
    scorer = unigram(T, {"d": 0.2, "i": 0.2, "s": 0.35, "EOS": 0.25})
    triples = draw_triples(scorer, T, 30, seed=2).triples
    with TripleFeed(T, triples, cache_dir=tmp_path, processes=2, chunk=8) as feed:
        lattices, arcs = feed.take(0, 30)
    want = [(compile_lattice(T, x, y), marks) for x, y, marks in triples]
    want = [(lat, path_arcs(lat, marks)) for lat, marks in want if lat.num_arcs]
    assert len(lattices) == len(want) and feed.skipped == 30 - len(want)
    for lattice, path, (one, one_path) in zip(lattices, arcs, want):
        assert (lattice.x, lattice.y) == (one.x, one.y)
        for key, value in one.to_state().items():
            assert np.array_equal(np.asarray(lattice.to_state()[key]), np.asarray(value)), key
        assert np.array_equal(path, one_path)

    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr("nfst.fst.dataset.compile_lattices", no_compiling)
    with TripleFeed(T, triples, cache_dir=tmp_path, chunk=5) as again:
        assert [lat.x for lat in again.take(0, 30)[0]] == [lat.x for lat in lattices]
