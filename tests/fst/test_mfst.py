import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nfst import InvalidMFSTError, MarkedFST, compile_lattice
from tests.helpers.brute import generating_paths
from tests.helpers.strategies import examples


def edit(name, sigma, delta, tag, delete=True):
    T = MarkedFST(name)
    T.set_final(0)
    for a in sigma:
        for b in delta:
            T.add_arc(0, 0, input=a, output=b, marks=[tag, f"{tag}:{a}", f"{tag}:{b}"])
        if delete:
            T.add_arc(0, 0, input=a, marks=[tag + "-del", f"{tag}:{a}"])
    for b in delta:
        T.add_arc(0, 0, output=b, marks=[tag + "-ins", f"{tag}:{b}"])
    return T


def marks_of(T, x, y):
    return sorted(m for m, _ in generating_paths(T, tuple(x), tuple(y), max_arcs=30))


words = st.lists(st.sampled_from("ab"), max_size=2)


@settings(max_examples=examples(40))
@given(words, st.lists(st.sampled_from("cd"), max_size=2))
def test_compose_concatenates_marks(x, y):
    """The (x, y) paths of T1∘T2 correspond one to one with pairs of a T1 path x→z and a T2
    path z→y: projecting a composed mark string on each MFST's marks gives the pair's marks.
    T2 cannot delete, so |z| ≤ |y| and the enumeration is finite."""
    T1, T2 = edit("A", "ab", "pq", "s"), edit("B", "pq", "cd", "t", delete=False)
    expected = []
    for z in ["", "p", "q", "pp", "pq", "qp", "qq"]:
        for m1 in marks_of(T1, x, z):
            expected += [(m1, m2) for m2 in marks_of(T2, z, y)]
    composed = marks_of(T1.compose(T2), x, y)
    project = lambda m, tag: tuple(s for s in m if s.startswith(tag))  # noqa: E731
    assert sorted((project(m, "s"), project(m, "t")) for m in composed) == sorted(expected)


def test_union_concat_closure():
    A = MarkedFST("A")
    A.set_final(A.add_state())
    A.add_arc(0, 1, input="a", marks="ma")
    B = MarkedFST("B")
    B.set_final(B.add_state())
    B.add_arc(0, 1, input="b", marks="mb")
    assert marks_of(A.union(B), "a", "") == [("ma",)]
    assert marks_of(A.union(B), "b", "") == [("mb",)]
    assert marks_of(A.concat(B), "ab", "") == [("ma", "mb")]
    assert marks_of(A.concat(B), "ba", "") == []
    star = A.union(B).closure()
    assert marks_of(star, "", "") == [()]
    assert marks_of(star, "aba", "") == [("ma", "mb", "ma")]
    lat = compile_lattice(star, "abb", "")
    assert list(lat.mark_strings()) == [("ma", "mb", "mb")]


def test_bad_states_and_symbols():
    T = MarkedFST()
    with pytest.raises(InvalidMFSTError, match="no state 3"):
        T.add_arc(0, 3, input="a", marks="m")
    with pytest.raises(InvalidMFSTError, match="non-empty strings"):
        T.add_arc(0, 0, input=["a", ""], marks="m")
    T.add_arc(0, 0, input="ab", output="c", marks="m n")
    with pytest.raises(InvalidMFSTError, match="one symbol per tape"):
        T.compose(T)


def test_fingerprint_and_derived_cache():
    T = MarkedFST()
    T.set_final(0)
    T.add_arc(0, 0, input="a", marks="m")
    fp = T.fingerprint()
    calls = []
    T.derived("k", lambda t: calls.append(1) or len(calls))
    assert T.derived("k", lambda t: 99) == 1
    T.add_arc(0, 0, input="b", marks="n")
    assert T.fingerprint() != fp
    assert T.derived("k", lambda t: 99) == 99


def test_mfst_to_networkx():
    T = edit("A", "ab", "p", "s")
    graph = T.to_networkx()
    assert graph.nodes[0] == {"start": True, "final": True}
    arcs = sorted((q, r, d["input"], d["output"], d["marks"]) for q, r, d in graph.edges(data=True))
    assert arcs == sorted((a.src, a.dst, a.input, a.output, a.marks) for a in T.arcs)
