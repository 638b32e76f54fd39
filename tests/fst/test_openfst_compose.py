from hypothesis import HealthCheck, given, settings

from nfst import MarkedFST, compose_openfst
from tests.helpers.brute import path_triples
from tests.helpers.strategies import examples, small_mfsts


def relabel_input(T: MarkedFST, mapping: dict) -> MarkedFST:
    """T with its input symbols renamed, so that T reads what another MFST writes."""
    U = MarkedFST(T.name)
    for _ in range(T.num_states - 1):
        U.add_state()
    for q in T.finals:
        U.set_final(q)
    for a in T.arcs:
        U.add_arc(a.src, a.dst, [mapping[s] for s in a.input], a.output, a.marks)
    return U


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(small_mfsts(), small_mfsts())
def test_openfst_compose_equals_python(A, B):
    """The same paths (input, output, marks), repeats included, as the Python composition;
    every order of lone moves in the marks must agree, so the filters must match."""
    B = relabel_input(B, {"a": "c", "b": "d"})
    python, openfst = A.compose(B), compose_openfst(A, B)
    assert openfst.start == 0
    assert path_triples(openfst, 6) == path_triples(python, 6)


def test_lone_moves_keep_pythons_order():
    """A deletes (ε output, mark m) while B inserts (ε input, mark n): B's lone move first."""
    A, B = MarkedFST("A"), MarkedFST("B")
    A.set_final(A.add_state())
    A.add_arc(0, 1, input="a", marks="m")
    B.set_final(B.add_state())
    B.add_arc(0, 1, output="c", marks="n")
    expected = [(("a",), ("c",), ("n", "m"))]
    assert path_triples(A.compose(B), 4) == expected
    assert path_triples(compose_openfst(A, B), 4) == expected


def test_bench_compose_reports_both_timings():
    from nfst.bench.compose import bench_compose

    result = bench_compose(letters=30, ciphers=3)
    assert result["arcs"] == [93, 93] and result["openfst_arcs"] == 9 * 30 + 3 + 9
    assert result["python_ms"] > 0 and result["openfst_ms"] > 0 and result["speedup"] > 0
