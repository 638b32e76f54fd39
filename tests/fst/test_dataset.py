import logging

import numpy as np
import pytest

from nfst.errors import NfstError
from nfst.fst.dataset import compile_dataset
from nfst.fsts import deletion_insertion

PAIRS = [("ab", "c"), ("a", "dc"), ("az", "c"), ("", "d"), ("ba", "cd")]


def same(a, b):
    return all(
        np.array_equal(getattr(a, f), getattr(b, f))
        for f in ("arc_src", "arc_dst", "arc_mark", "final", "positions", "height")
    )


@pytest.mark.parametrize("processes", [1, 2])
def test_skips_bad_pairs_and_names_the_symbols_the_mfst_lacks(caplog, processes):
    """The warning names every missing symbol by tape (also when the errors come back from
    worker processes); where no pair compiles, require_lattices raises the same reasons."""
    T = deletion_insertion("ab", "cd")
    pairs = PAIRS + [("zy", "c"), ("a", "ce"), ("b", "c")]
    with caplog.at_level(logging.WARNING, logger="nfst"):
        data = compile_dataset(T, pairs, progress=False, processes=processes)
    assert len(data.lattices) == 5 and len(data.skipped) == 3
    assert data.skipped[0][0] == (("a", "z"), ("c",))
    reasons = (
        "2 with input symbols ['y', 'z'] not in the MFST's input alphabet; 1 with output "
        "symbols ['e'] not in the MFST's output alphabet"
    )
    assert f"del-ins: skipped 3 of 8 pairs: {reasons}" in caplog.text
    assert data.require_lattices("here") is data
    with pytest.raises(
        NfstError,
        match=r"^here: no pair compiled, all 2 skipped: 2 with input "
        r"symbols \['y', 'z'\]",
    ):
        compile_dataset(T, [pairs[2], pairs[5]], progress=False).require_lattices("here")


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


def test_cached_and_compiled_lattices_come_back_in_the_pairs_order(tmp_path):
    """Half the pairs cached, read here; the rest compiled by two processes: every lattice
    in its pair's place, as a cold compile gives them; then all of them read here (nothing
    left to compile)."""
    T = deletion_insertion("ab", "cd")
    pairs = PAIRS + [("b", "c"), ("ab", "cd"), ("a", ""), ("bb", "dd")]
    cold = compile_dataset(T, pairs, progress=False)
    compile_dataset(T, pairs[::2], cache_dir=tmp_path, progress=False)
    mixed = compile_dataset(T, pairs, cache_dir=tmp_path, processes=2, progress=False)
    assert mixed.cache_hits == 4 and mixed.pairs == cold.pairs  # ("az", "c") skipped
    assert all(same(a, b) for a, b in zip(cold.lattices, mixed.lattices))
    warm = compile_dataset(T, cold.pairs, cache_dir=tmp_path, processes=2, progress=False)
    assert warm.cache_hits == 8 and all(same(a, b) for a, b in zip(cold.lattices, warm.lattices))


def test_cache_key_depends_on_the_mfst(tmp_path):
    compile_dataset(deletion_insertion("ab", "cd"), PAIRS, cache_dir=tmp_path, progress=False)
    other = compile_dataset(
        deletion_insertion("ab", "cd", delete="<d>"), PAIRS, cache_dir=tmp_path, progress=False
    )
    assert other.cache_hits == 0
