"""Splitting a lattice's states by the last marks read (nfst.fst.history), against enumeration."""

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nfst import NfstError, compile_lattice
from nfst.fst.history import expand_history, start_history
from tests.helpers.brute import lattice_paths
from tests.helpers.lattices import small_lattices
from tests.helpers.strategies import examples, small_mfsts


def history_of(marks, depth, V):
    h = start_history(depth, V)
    for m in marks:
        h = (h * (V + 1) + m) % (V + 1) ** depth
    return h


def check_expansion(lat, depth):
    split = expand_history(lat, depth)
    new, V = split.lattice, len(lat.mark_vocab)
    assert new.acyclic and all(new.arc_src[i] < new.arc_dst[i] for i in range(new.num_arcs))
    old_paths = sorted(lat.mark_strings())
    new_paths = lattice_paths(new)
    assert sorted(new.marks_of(p) for p in new_paths) == old_paths  # the same strings, once each
    for path in new_paths:
        r, marks = 0, []
        for a in path:  # every state on the path: over the original state, with its history
            assert split.state[new.arc_src[a]] == lat.arc_src[split.arc[a]]
            assert split.history[r] == history_of(marks, depth, V)
            marks.append(int(new.arc_mark[a]))
            r = int(new.arc_dst[a])
        assert split.history[r] == history_of(marks, depth, V)
        assert new.final[r]
    offsets, old_offsets = new.arc_offsets, lat.arc_offsets
    for r in range(new.num_states):  # a split state has its state's out-arcs, in order
        s = split.state[r]
        assert list(split.arc[offsets[r] : offsets[r + 1]]) == list(
            range(old_offsets[s], old_offsets[s + 1])
        )
        assert new.height[r] == lat.height[s] and new.final[r] == lat.final[s]


def test_small_lattices_at_every_depth():
    for lat in small_lattices():
        for depth in (0, 1, 2, 3):
            check_expansion(lat, depth)


@settings(
    max_examples=examples(40),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    small_mfsts(),
    st.lists(st.sampled_from("ab"), max_size=3),
    st.lists(st.sampled_from("cd"), max_size=3),
    st.integers(1, 3),
)
def test_random_lattices(T, x, y, depth):
    try:
        lat = compile_lattice(T, x, y)
    except NfstError:
        assume(False)
    check_expansion(lat, depth)


def test_depth_zero_is_the_lattice_itself():
    lat = small_lattices()[3]
    split = expand_history(lat, 0)
    assert split.lattice.num_states == lat.num_states and list(split.arc) == list(
        range(lat.num_arcs)
    )
