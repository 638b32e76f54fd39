"""The Pynini-rule transliteration topology: rules fire only in their contexts, and its lattices
match path enumeration on the MFST."""

from pathlib import Path

import pytest

from nfst import compile_lattice
from nfst.fsts.translit import rule_transliteration
from nfst.tasks import get_task, load_task_file
from tests.helpers.brute import generating_paths

URDU = ["ب", "ھ", "ے", "ہ", "ی", "ک", "ا"]


@pytest.fixture(scope="module")
def T():
    return rule_transliteration("bhaek", URDU)


def marks(T, x, y):
    return set(compile_lattice(T, x, ("<ur>",) + tuple(y)).mark_strings())


def test_context_rules_fire_only_in_context(T):
    assert ("script", "b>ب", "ctx:aspirate", "ctx:final_e") in marks(T, "bhe", "بھے")
    assert ("script", "h>ہ", "e>ی") in marks(T, "he", "ہی")
    assert not any("ctx:aspirate" in m for m in marks(T, "he", "ھے"))  # no stop before h
    assert not any("ctx:final_e" in m for m in marks(T, "eb", "ےب"))  # e is not final
    assert ("script", "ctx:final_e", "ins:ب") in marks(T, "e", "ےب")  # e is final in x


@pytest.mark.parametrize("x, y", [("bhe", "بھے"), ("keh", "کہ"), ("ba", "با")])
def test_lattice_matches_path_enumeration(T, x, y):
    y = ("<ur>",) + tuple(y)
    expected = sorted(m for m, _ in generating_paths(T, tuple(x), y))
    assert sorted(compile_lattice(T, x, y).mark_strings()) == expected


def test_tutorial_task_file(tmp_path):
    from tests.helpers.tasks import write_fixture

    root = write_fixture(tmp_path)
    assert load_task_file(Path(__file__).parents[2] / "examples" / "tr_rules.py") == ["tr-rules"]
    task = get_task("tr-rules")
    T = task.mfst(root)
    assert T.name == "tr-rules" and "script" in T.mark_alphabet
    pairs = task.pairs("train", root)
    assert len(pairs) == 5  # the fixture's, deduplicated
    for x, y in pairs:
        assert compile_lattice(T, x, y).num_paths() > 0
