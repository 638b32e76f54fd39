"""Reading a path off a lattice by its mark string (``nfst.fst.mark_strings.path_arcs``),
against every path of small lattices enumerated by brute force."""

import numpy as np
import pytest

from nfst.fst.compile import compile_lattice
from nfst.fst.mark_strings import path_arcs
from nfst.fsts import deletion_insertion
from tests.helpers.brute import lattice_paths


@pytest.mark.parametrize("x, y", [("ab", "c"), ("ba", "cd"), ("aab", "dc"), ("", "d")])
def test_every_path_is_read_back_from_its_marks(x, y):
    lattice = compile_lattice(deletion_insertion("ab", "cd"), x, y)
    paths = lattice_paths(lattice)
    assert len(paths) == lattice.num_paths() > 1 or (x, y) == ("", "d")
    for path in paths:
        marks = tuple(lattice.mark_vocab[m] for m in lattice.arc_mark[path])
        np.testing.assert_array_equal(path_arcs(lattice, marks), path)


def test_a_mark_not_on_the_states_out_arcs_is_refused_wherever_it_comes():
    """Each path with one mark replaced by any mark of the lattice that none of that state's
    out-arcs carries (another state's, say): no path reads it."""
    lattice = compile_lattice(deletion_insertion("ab", "cd"), "aab", "dc")
    offsets = lattice.arc_offsets
    for path in lattice_paths(lattice)[:20]:
        marks = [lattice.mark_vocab[m] for m in lattice.arc_mark[path]]
        for i in range(len(path)):
            state = 0 if i == 0 else int(lattice.arc_dst[path[i - 1]])
            carried = set(lattice.arc_mark[offsets[state] : offsets[state + 1]].tolist())
            for other in set(range(len(lattice.mark_vocab))) - carried:
                bad = (*marks[:i], lattice.mark_vocab[other], *marks[i + 1 :])
                with pytest.raises(ValueError, match="no path of the lattice"):
                    path_arcs(lattice, bad)


def test_a_mark_string_off_the_lattice_is_refused():
    lattice = compile_lattice(deletion_insertion("ab", "cd"), "ab", "c")
    marks = tuple(lattice.mark_vocab[m] for m in lattice.arc_mark[lattice_paths(lattice)[0]])
    with pytest.raises(ValueError, match="no path of the lattice"):
        path_arcs(lattice, marks + marks[-1:])
    with pytest.raises(ValueError, match="no path of the lattice"):
        path_arcs(lattice, ("no such mark",))
    with pytest.raises(ValueError, match="ends in a non-final state"):
        path_arcs(lattice, marks[:-1])
