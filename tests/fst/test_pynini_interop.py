import os
import subprocess
import sys

import pynini
import pytest
from hypothesis import HealthCheck, given, settings

from nfst import (
    InvalidMFSTError,
    MarkedFST,
    NoPathError,
    OutputMarks,
    compile_lattice,
    from_pynini,
    to_pynini,
)
from tests.helpers.brute import path_triples, walk_marks
from tests.helpers.strategies import examples, small_mfsts


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(small_mfsts(grouped=True, wide=True))
def test_round_trip_keeps_paths_and_marks(T):
    """An arc with two symbols on a tape becomes two mark-less Pynini arcs in a row, whose
    symbols ride back onto the marks that follow them."""
    U = from_pynini(to_pynini(T), marks=OutputMarks())
    assert path_triples(U, 4) == path_triples(T, 4)


def utf8(text):
    return pynini.accep(text, token_type="utf8")


def test_default_marks_name_the_pair_and_epsilons_vanish():
    fst = (pynini.cross(utf8("س"), utf8("s")) + pynini.cross(utf8("ه"), utf8(""))).closure()
    T = from_pynini(fst.optimize())
    assert path_triples(T, 4) == [
        ((), (), ()),
        (("س", "ه"), ("s",), ("س:s", "ه:ε")),
        (("س", "ه", "س", "ه"), ("s", "s"), ("س:s", "ه:ε", "س:s", "ه:ε")),
    ]
    assert list(compile_lattice(T, "سه", "s").mark_strings()) == [("س:s", "ه:ε")]


def test_marks_from_a_function_and_symbol_tables():
    table = pynini.SymbolTable()
    table.add_symbol("<epsilon>", 0)
    for s in ("ab", "cd"):
        table.add_symbol(s)
    fst = pynini.Fst()
    fst.add_states(2)
    fst.set_start(0)
    fst.set_final(1)
    fst.add_arc(0, pynini.Arc(1, 2, pynini.Weight.one("tropical"), 1))
    fst.set_input_symbols(table)
    fst.set_output_symbols(table)
    T = from_pynini(fst, marks=lambda a, b: ["sub", a, b])
    assert path_triples(T, 3) == [(("ab",), ("cd",), ("sub", "ab", "cd"))]


def test_symbols_ride_on_the_next_mark():
    """cross aligns s:ش, h:[@sh]; the letters ride on the mark sh."""
    T = from_pynini(pynini.cross(utf8("sh"), utf8("ش[@sh]")), marks=OutputMarks())
    assert [(a.input, a.output, a.marks) for a in T.arcs] == [(("s", "h"), ("ش",), ("sh",))]


def test_bad_grammars():
    with pytest.raises(InvalidMFSTError, match="after the last mark"):
        from_pynini(pynini.cross(utf8("a"), utf8("[@m]b")), marks=OutputMarks())
    with pytest.raises(InvalidMFSTError, match="cycle of arcs without marks"):
        from_pynini(pynini.cross(utf8("a"), utf8("b")).closure(), marks=OutputMarks())
    with pytest.raises(InvalidMFSTError, match="multi-byte"):
        from_pynini(pynini.accep("ش"), token_type="byte")


def hand_written() -> MarkedFST:
    """The grammar of ``grammar()`` written arc by arc."""
    T = MarkedFST("hand")
    T.set_final(0)
    for lat, urdu, mark in (
        ("sh", "ش", "sh"),
        ("s", "س", "s"),
        ("s", "ص", "s2"),
        ("h", "ہ", "h"),
        ("a", "ا", "a"),
    ):
        T.add_arc(0, 0, input=lat, output=urdu, marks=[mark])
    T.add_arc(0, 0, input="a", marks=["a-short"])
    return T


def grammar() -> pynini.Fst:
    rules = [
        ("sh", "ش[@sh]"),
        ("s", "س[@s]"),
        ("s", "ص[@s2]"),
        ("h", "ہ[@h]"),
        ("a", "ا[@a]"),
        ("a", "[@a-short]"),
    ]
    return pynini.string_map(rules, input_token_type="utf8", output_token_type="utf8").closure()


@pytest.mark.parametrize(
    "x, y", [("shah", "شاہ"), ("sahsa", "سہس"), ("shash", "شاش"), ("sh", "سہ"), ("asa", "اصا")]
)
def test_pynini_grammar_lattices_equal_hand_written(x, y):
    T = from_pynini(grammar().optimize(), marks=OutputMarks())
    built, hand = compile_lattice(T, x, y), compile_lattice(hand_written(), x, y)
    assert sorted(built.mark_strings()) == sorted(hand.mark_strings())
    assert (built.num_states, built.num_arcs) == (hand.num_states, hand.num_arcs)
    assert positions_along_paths(built) == positions_along_paths(hand)


def positions_along_paths(lat):
    return sorted((m, lat.positions[walk_marks(lat, m)].tolist()) for m in lat.mark_strings())


def test_unnamed_label():
    fst = pynini.Fst()
    fst.add_states(2)
    fst.set_start(0)
    fst.set_final(1)
    fst.add_arc(0, pynini.Arc(5, 5, pynini.Weight.one("tropical"), 1))
    table = pynini.SymbolTable()
    table.add_symbol("<epsilon>", 0)
    with pytest.raises(InvalidMFSTError, match="label 5 has no symbol"):
        from_pynini(fst, token_type=table)


def context_grammar() -> pynini.Fst:
    """a is written ہ at the end of a word (an optional cdrewrite rule marked final), else ا."""
    final = utf8("ہ[@final]")
    sigma_star = pynini.union(utf8("a"), utf8("b"), final).closure().optimize()
    rule = pynini.cdrewrite(pynini.cross(utf8("a"), final), "", "[EOS]", sigma_star, mode="opt")
    moves = pynini.union(
        pynini.cross(utf8("a"), utf8("ا[@a]")), pynini.cross(utf8("b"), utf8("ب[@b]")), final
    )
    return (pynini.union(utf8("a"), utf8("b")).closure() @ rule @ moves.closure()).optimize()


def context_hand_written() -> MarkedFST:
    T = MarkedFST("hand")
    T.set_final(0)
    end = T.add_state(final=True)
    T.add_arc(0, 0, input="a", output="ا", marks=["a"])
    T.add_arc(0, 0, input="b", output="ب", marks=["b"])
    T.add_arc(0, end, input="a", output="ہ", marks=["final"])
    return T


@pytest.mark.parametrize(
    "x, y", [("aba", "ابہ"), ("aba", "ابا"), ("aa", "اا"), ("a", "ہ"), ("ab", "اب"), ("ab", "ہب")]
)
def test_cdrewrite_grammar_lattices_equal_hand_written(x, y):
    T = from_pynini(context_grammar(), marks=OutputMarks())
    built, hand = (summary(U, x, y) for U in (T, context_hand_written()))
    assert built == hand


def summary(T, x, y):
    """Mark strings, size and positions along every path of T_{x,y}; None without a path."""
    try:
        lat = compile_lattice(T, x, y)
    except NoPathError:  # ("ab", "ہب"): the rule fires only at the end
        return None
    return sorted(lat.mark_strings()), lat.num_states, lat.num_arcs, positions_along_paths(lat)


def test_arc_order_does_not_depend_on_the_string_hash_seed():
    """Mark-less paths ride onto the next marks in a fixed order, so the MFST, its fingerprint
    and with it the lattice cache key are the same in every process."""
    script = (
        "from nfst import OutputMarks, from_pynini, to_pynini;"
        "from nfst.fsts import deletion_insertion;"
        "T = to_pynini(deletion_insertion('abcdef', 'uvwxyz'));"
        "print(from_pynini(T, marks=OutputMarks()).fingerprint())"
    )
    prints = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(prints) == 1, prints
