import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from nfst import (
    AmbiguousMFSTError,
    CompileOptions,
    CyclicLatticeError,
    InvalidMFSTError,
    LatticeTooLargeError,
    MarkedFST,
    NoPathError,
    UnknownSymbolError,
    compile_lattice,
)
from nfst.fst.compile_to_openfst import CompileEncoding, marks_determine_paths
from tests.helpers.brute import asap_positions, generating_paths, path_marks, walk_marks
from tests.helpers.strategies import examples, small_mfsts

pairs = st.tuples(
    st.lists(st.sampled_from("ab"), max_size=3), st.lists(st.sampled_from("cd"), max_size=3)
)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(small_mfsts(), pairs)
def test_lattice_matches_brute_force(T, pair):
    check_against_brute_force(T, pair)


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(small_mfsts(grouped=True), pairs)
def test_marks_carrying_several_symbols(T, pair):
    """A mark may carry several symbols (e.g. one mark ``a:c`` for a substitution)."""
    check_against_brute_force(T, pair)


def check_against_brute_force(T, pair):
    x, y = (tuple(s) for s in pair)
    note(f"arcs={T.arcs} finals={sorted(T.finals)}")
    if set(x) - set(T.input_alphabet) or set(y) - set(T.output_alphabet):
        with pytest.raises(UnknownSymbolError):
            compile_lattice(T, x, y)
        return
    paths = generating_paths(T, x, y)
    marks = [m for m, _ in paths]
    if not paths:
        with pytest.raises(NoPathError):
            compile_lattice(T, x, y)
        return
    if len(set(marks)) < len(marks):
        with pytest.raises(AmbiguousMFSTError):
            compile_lattice(T, x, y)
        return
    lat = compile_lattice(T, x, y)
    assert sorted(lat.mark_strings()) == sorted(marks)
    assert lat.num_paths() == len(marks)
    for m in marks:
        states = walk_marks(lat, m)
        assert lat.final[states[-1]]
        for t, s in enumerate(states):
            assert tuple(lat.positions[s]) == asap_positions(paths, m[:t])
    # properties (a)-(c): one mark per arc by construction; distinct marks; co-accessible
    offsets = lat.arc_offsets
    for s in range(lat.num_states):
        out = lat.arc_mark[offsets[s] : offsets[s + 1]]
        assert len(set(out.tolist())) == len(out)
        assert lat.final[s] or len(out) > 0
    assert (lat.arc_dst > lat.arc_src).all()


def two_ways_to_mark_m():
    T = MarkedFST()
    T.set_final(T.add_state())
    T.add_arc(0, 1, input="a", marks="m")
    T.add_arc(0, 1, input="b", marks="m")
    return T


@settings(max_examples=examples(300))
@given(small_mfsts())
@example(two_ways_to_mark_m())  # acyclic and ambiguous: rare among the random ones
def test_unambiguity_matches_brute_force(T):
    """Whether T lets two paths share a mark string (then every pair's paths are counted)."""
    marks, cut = path_marks(T, max_marks=6)
    repeated = len(set(marks)) < len(marks)
    if cut:  # a cycle: a repeat found among the short paths must still be reported
        assert not (repeated and CompileEncoding(T).unambiguous)
    else:
        assert CompileEncoding(T).unambiguous == (not repeated)


def test_marks_that_do_not_fix_the_output_are_fine_pair_by_pair():
    T = MarkedFST()
    T.set_final(0)
    T.add_arc(0, 0, input="a", output="c", marks="sub sub")
    T.add_arc(0, 0, input="b", output="d", marks="sub sub")
    assert not CompileEncoding(T).unambiguous  # two paths of T mark "sub sub" ...
    lat = compile_lattice(T, "ab", "cd")  # ... but one path of T_{x,y} marks each string
    assert list(lat.mark_strings()) == [("sub",) * 4]


def test_unambiguity_check_gives_up_on_large_products():
    fst = CompileEncoding(del_ins()).fst
    assert marks_determine_paths(fst)
    assert not marks_determine_paths(fst, max_pairs=1)  # then every pair is counted instead


def del_ins(sigma="ab", delta="cd"):
    T = MarkedFST("del-ins")
    T.set_final(0)
    for a in sigma:
        T.add_arc(0, 0, input=a, marks=["<del>", a])
    for b in delta:
        T.add_arc(0, 0, output=b, marks=["<ins>", b])
    return T


def test_public_api_example():
    T = MarkedFST()
    q = T.add_state(final=True)
    T.add_arc(0, q, input="a", output="", marks=["del", "a"])
    T.add_arc(q, q, input="b", output="c", marks=["sub", "b", "c"])
    lat = compile_lattice(T, x=["a", "b"], y=["c"])
    assert list(lat.mark_strings()) == [("del", "a", "sub", "b", "c")]
    assert (lat.num_states, lat.num_arcs) == (6, 5)
    # the only path is fixed once the first mark is read: everything is aligned "as soon as possible"
    assert lat.positions.tolist() == [[0, 0]] + [[2, 1]] * 5


def test_unknown_symbol_names_the_symbol():
    with pytest.raises(UnknownSymbolError, match=r"\['z'\]"):
        compile_lattice(del_ins(), "az", "c")


def test_no_generating_path():
    T = MarkedFST()
    T.set_final(T.add_state())
    T.add_arc(0, 1, input="a", output="c", marks="m n")
    T.add_arc(0, 1, input="b", output="c", marks="m n")
    with pytest.raises(NoPathError):
        compile_lattice(T, "aa", "c")


def test_ambiguous_mfst():
    T = MarkedFST()
    T.set_final(0)
    T.add_arc(0, 0, input="a", marks="m")
    T.add_arc(0, 0, output="c", marks="m")
    with pytest.raises(AmbiguousMFSTError):
        compile_lattice(T, "a", "c")


def test_epsilon_cycle_is_ambiguous():
    T = del_ins().closure().closure()
    with pytest.raises(AmbiguousMFSTError):
        compile_lattice(T, "a", "c")


def test_cyclic_lattice_raises_unless_allowed():
    T = del_ins()
    T.add_arc(0, 0, marks=["<noop>"])
    with pytest.raises(CyclicLatticeError):
        compile_lattice(T, "a", "c")
    lat = compile_lattice(T, "a", "c", CompileOptions(allow_cyclic=True))
    assert not lat.acyclic
    with pytest.raises(CyclicLatticeError):
        lat.num_paths()


def test_size_limit():
    with pytest.raises(LatticeTooLargeError):
        compile_lattice(del_ins(), "abab", "cdcd", CompileOptions(max_states=20))


def test_symbols_without_marks():
    T = MarkedFST()
    T.set_final(0)
    T.add_arc(0, 0, input="a", output="c")
    with pytest.raises(InvalidMFSTError, match="2 symbols but no marks"):
        compile_lattice(T, "a", "c")


def test_residual_output_is_contracted():
    """After mark m the two paths have emitted different symbols, so determinization delays
    them; the last mark then owes two symbols, which OpenFst factors into an ε-input chain."""
    T = MarkedFST()
    f, p, q = T.add_state(final=True), T.add_state(), T.add_state()
    T.add_arc(0, p, input="a", marks="m")
    T.add_arc(p, f, output="c", marks="n")
    T.add_arc(0, q, output="c", marks="m")
    T.add_arc(q, f, input="a", marks="o")
    lat = compile_lattice(T, "a", "c")
    assert sorted(lat.mark_strings()) == [("m", "n"), ("m", "o")]
    assert lat.num_states == 3 and lat.final.tolist() == [False, False, True]
    assert lat.positions.tolist() == [[0, 0], [0, 0], [1, 1]]


def test_compiling_leaves_no_file_open_at_exit():
    """The file that collects OpenFst's messages is closed when the process ends (Python's
    development mode reports an unclosed file as a ResourceWarning)."""
    import subprocess
    import sys

    script = (
        "from nfst import MarkedFST, compile_lattice\n"
        "T = MarkedFST(); q = T.add_state(final=True)\n"
        "T.add_arc(0, q, input='a', output='b', marks=['sub', 'a', 'b'])\n"
        "compile_lattice(T, x=['a'], y=['b'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "ResourceWarning" not in done.stderr, done.stderr
