"""The direct compiler (nfst.fst.compile_direct) against the OpenFst path and brute force."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from nfst import (
    CompileOptions,
    LatticeTooLargeError,
    MarkedFST,
    NoPathError,
    UnknownSymbolError,
    compile_lattice,
)
from nfst.fst.compile import compile_lattices, compile_path
from nfst.fst.dataset import cache_key
from nfst.fst.direct_topology import direct_refusal
from nfst.fsts import cipher_mfst, deletion_insertion, substitution_ciphers
from nfst.tasks import get_task
from tests.fst.test_compile import check_against_brute_force
from tests.helpers.strategies import examples

OPENFST = CompileOptions(path="openfst")
FIELDS = ("arc_src", "arc_dst", "arc_mark", "final", "positions", "height")


def assert_same_lattice(direct, openfst, same_sizes: bool = True):
    """Array for array, numbering included, and the sizes before minimization: equal, or (not
    ``same_sizes``) no larger. OpenFst's determinized FST may hold extra copies of a state that
    an arc with several delayed symbols enters (its factoring of string weights makes a state
    per residual), which minimization merges again."""
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(direct, name), getattr(openfst, name), name)
    sizes = (direct.states_before_min, direct.arcs_before_min)
    reference = (openfst.states_before_min, openfst.arcs_before_min)
    assert sizes == reference if same_sizes else all(map(int.__le__, sizes, reference))


@st.composite
def qualifying_mfsts(draw, grouped: bool = False):
    """Random MFSTs with ≤ 4 states whose mark strings are prefix-free at every state; arcs
    that read and write nothing go only to higher states (no cycle of them). With ``grouped``
    an arc may carry more symbols than marks."""
    n = draw(st.integers(1, 4))
    T = MarkedFST("prefix-free")
    for _ in range(n - 1):
        T.add_state()
    for q in draw(st.sets(st.integers(0, n - 1), min_size=1)):
        T.set_final(q)
    strings = [(a,) for a in "mno"] + [(a, b) for a in "mno" for b in "mno"] + [("m", "n", "o")]
    for q in range(n):
        chosen = draw(st.lists(st.sampled_from(strings), min_size=1, max_size=6, unique=True))
        chosen = [s for s in chosen if not any(s[: len(t)] == t and s != t for t in chosen)]
        for marks in chosen:
            inp = draw(st.sampled_from(["", "a", "b"] + (["ab"] if grouped else [])))
            out = draw(st.sampled_from(["", "c", "d"] + (["cd"] if grouped else [])))
            if not grouped:
                inp, out = inp[: len(marks)], out[: max(0, len(marks) - len(inp))]
            dst = draw(st.integers(0, n - 1) if inp or out else st.integers(q, n - 1))
            if not inp and not out and dst == q:
                inp = "a"
            T.add_arc(q, dst, input=inp, output=out, marks=marks)
    return T


def pair_for(data, T):
    """x and y over T's own alphabets (mostly), so that most pairs have a lattice."""
    x = data.draw(st.lists(st.sampled_from(T.input_alphabet or ("a",)), max_size=4))
    y = data.draw(st.lists(st.sampled_from(T.output_alphabet or ("c",)), max_size=3))
    return tuple(x), tuple(y)


def check_both_paths(T, pair, same_sizes: bool = False):
    assert direct_refusal(T) is None and compile_path(T) == "direct"
    note(f"arcs={T.arcs} finals={sorted(T.finals)}")
    check_against_brute_force(T, pair)  # the direct path: compile_lattice's default
    check_same_as_openfst(T, pair, same_sizes)


def check_same_as_openfst(T, pair, same_sizes: bool = False):
    direct, openfst = (
        compile_lattices(T, [pair], options)[0] for options in (CompileOptions(), OPENFST)
    )
    assert type(direct) is type(openfst)
    if isinstance(direct, Exception):
        assert str(direct).split(":")[0] == str(openfst).split(":")[0]
    else:
        assert_same_lattice(direct, openfst, same_sizes)


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(qualifying_mfsts(), st.data())
def test_direct_lattice_is_openfsts_and_brute_forces(T, data):
    check_both_paths(T, pair_for(data, T))


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.too_slow])
@given(qualifying_mfsts(grouped=True), st.data())
def test_marks_carrying_groups_of_symbols(T, data):
    check_both_paths(T, pair_for(data, T))


def test_a_batch_equals_its_pairs_one_by_one():
    """Pairs compiled together (with failing ones among them) give each pair's own result."""
    T = get_task("cipher").mfst()
    good = get_task("cipher").pairs("train")[:6] + [
        (tuple("ab"), tuple("ab")),
        (tuple("ba"), tuple("ba")),
    ]
    batch = good[:3] + [(("a",), ("?",)), (("a", "b"), ())] + good[3:]
    together = compile_lattices(T, batch)
    assert isinstance(together[3], UnknownSymbolError)
    for pair, result in zip(batch, together):
        if pair in good:
            assert_same_lattice(result, compile_lattice(T, *pair, OPENFST))
    alone = compile_lattices(T, [batch[4]])[0]
    assert type(together[4]) is type(alone)


def test_finality_separates_states_with_equal_arcs():
    """After ``m`` and after ``n`` the states have the same position and the same arc ``o``,
    but only the first is final: they must stay apart."""
    T = MarkedFST("finality")
    one, two, three = T.add_state(final=True), T.add_state(), T.add_state(final=True)
    T.add_arc(0, one, input="a", marks="m")
    T.add_arc(0, two, input="a", marks="n")
    T.add_arc(one, three, marks="o")
    T.add_arc(two, three, marks="o")
    check_same_as_openfst(T, ("a", ""))
    assert sorted(compile_lattice(T, "a", "").mark_strings()) == [("m",), ("m", "o"), ("n", "o")]


def test_position_separates_states_with_equal_arcs():
    """After ``k`` (at (0, 0)) and after ``p`` (at (1, 1)) the states have the same arcs ``m``,
    ``n`` into one class, but their paths part at once after ``k`` (a then c, or c then a) and
    only after (1, 1) after ``p``: their positions differ, so they must stay apart."""
    T = MarkedFST("positions")
    q = [0] + [T.add_state(final=k == 5) for k in range(1, 6)]
    T.add_arc(0, q[1], marks="k")
    T.add_arc(q[1], q[2], input="a", marks="m")
    T.add_arc(q[1], q[3], output="c", marks="n")
    T.add_arc(q[2], q[5], output="c", marks="o")
    T.add_arc(q[3], q[5], input="a", marks="o")
    T.add_arc(0, q[4], input="a", output="c", marks="p")
    T.add_arc(q[4], q[5], marks="m o")
    T.add_arc(q[4], q[5], marks="n o")
    check_same_as_openfst(T, ("a", "c"))
    lattice = compile_lattice(T, "a", "c")
    after = {
        m: int(
            lattice.arc_dst[
                (lattice.arc_src == 0) & (lattice.arc_mark == lattice.mark_vocab.index(m))
            ][0]
        )
        for m in "kp"
    }
    assert after["k"] != after["p"]
    assert [tuple(lattice.positions[after[m]]) for m in "kp"] == [(0, 0), (1, 1)]


@pytest.mark.parametrize("task", ["cipher", "scan"])
def test_builtin_topologies_qualify(task):
    assert direct_refusal(get_task(task).mfst()) is None


def test_tr_topology_qualifies():
    """tr's MFST is deletion_insertion over the training alphabets (built from data)."""
    T = deletion_insertion("abc", ["<ur>", "ب", "پ"], name="tr")
    assert direct_refusal(T) is None
    assert_same_lattice(
        compile_lattice(T, "ab", ["<ur>", "ب"]), compile_lattice(T, "ab", ["<ur>", "ب"], OPENFST)
    )


def refused(kind: str) -> MarkedFST:
    T = MarkedFST(kind)
    q = T.add_state(final=True)
    T.add_arc(0, q, input="a", marks="m")
    if kind == "unmarked":
        T.add_arc(0, q, input="b")
    elif kind == "equal":
        T.add_arc(0, q, input="b", marks="m")
    elif kind == "prefix":
        T.add_arc(0, q, input="b", marks="m n")
    elif kind == "silent cycle":
        T.add_arc(q, 0, marks="o")
        T.add_arc(0, q, marks="p")
    return T


@pytest.mark.parametrize(
    "kind, reason",
    [
        ("unmarked", "carries no mark"),
        ("equal", "(twice)"),
        ("prefix", "one a prefix of the other"),
        ("silent cycle", "form a cycle"),
    ],
)
def test_refusal_says_why_and_openfst_compiles_instead(kind, reason):
    T = refused(kind)
    assert reason in direct_refusal(T)
    assert compile_path(T) == "openfst"
    for pair in [("a", ""), ("b", "")]:
        results = [
            compile_lattices(T, [pair], options)[0] for options in (CompileOptions(), OPENFST)
        ]
        assert type(results[0]) is type(results[1])
        if not isinstance(results[0], Exception):
            assert_same_lattice(*results)


def test_errors_match_the_openfst_path():
    T = get_task("cipher").mfst()
    one_a = refused("just one arc")
    assert compile_path(one_a) == "direct"
    for options in (CompileOptions(), OPENFST):
        with pytest.raises(UnknownSymbolError, match="input symbols"):
            compile_lattice(T, "a?", "b", options)
        with pytest.raises(NoPathError, match="no generating path"):
            compile_lattice(one_a, "aa", "", options)
        with pytest.raises(LatticeTooLargeError):
            compile_lattice(T, "abcdef", "abcdef", CompileOptions(max_states=50, path=options.path))
    assert compile_path(T, OPENFST) == "openfst"


def small_cipher() -> MarkedFST:
    """The cipher topology over three letters with two ciphers: lattices with many merges."""
    return cipher_mfst(substitution_ciphers("abc", 2, seed=1))


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=4), st.lists(st.sampled_from("abc"), max_size=4))
def test_cipher_lattices(x, y):
    check_both_paths(small_cipher(), (tuple(x), tuple(y)), same_sizes=True)


def test_the_cache_key_leaves_the_path_out():
    """Both paths store the same lattice, so caches written before the direct path stay valid."""
    pair = (("a",), ("b",))
    assert cache_key("T", CompileOptions(), pair) == cache_key("T", OPENFST, pair)
    assert repr(CompileOptions()) == "CompileOptions(max_states=200000, allow_cyclic=False)"
