import logging

import numpy as np

from nfst.fst.dataset import compile_dataset
from nfst.fsts import deletion_insertion

PAIRS = [("ab", "c"), ("a", "dc"), ("az", "c"), ("", "d"), ("ba", "cd")]


def same(a, b):
    return all(np.array_equal(getattr(a, f), getattr(b, f))
               for f in ("arc_src", "arc_dst", "arc_mark", "final", "positions", "height"))


def test_skips_bad_pairs_and_reports_them(caplog):
    T = deletion_insertion("ab", "cd")
    with caplog.at_level(logging.WARNING, logger="nfst"):
        data = compile_dataset(T, PAIRS, progress=False)
    assert len(data.lattices) == 4 and len(data.skipped) == 1
    assert data.skipped[0][0] == (("a", "z"), ("c",))
    assert "skipped 1 of 5" in caplog.text and "UnknownSymbolError" in caplog.text


def test_cache_hits_parallel_and_corrupt_entries_rebuilt(tmp_path, caplog):
    T = deletion_insertion("ab", "cd")
    cold = compile_dataset(T, PAIRS, cache_dir=tmp_path, processes=2, progress=False)
    assert cold.cache_hits == 0
    warm = compile_dataset(T, PAIRS, cache_dir=tmp_path, progress=False)
    assert warm.cache_hits == 4
    assert all(same(a, b) for a, b in zip(cold.lattices, warm.lattices))
    entry = sorted(tmp_path.rglob("*.lat"))[0]
    entry.write_bytes(entry.read_bytes()[:-5])
    with caplog.at_level(logging.WARNING, logger="nfst"):
        again = compile_dataset(T, PAIRS, cache_dir=tmp_path, progress=False)
    assert again.cache_hits == 3 and "rebuilding" in caplog.text
    assert all(same(a, b) for a, b in zip(cold.lattices, again.lattices))


def test_cache_key_depends_on_the_mfst(tmp_path):
    compile_dataset(deletion_insertion("ab", "cd"), PAIRS, cache_dir=tmp_path, progress=False)
    other = compile_dataset(deletion_insertion("ab", "cd", delete="<d>"), PAIRS,
                            cache_dir=tmp_path, progress=False)
    assert other.cache_hits == 0
