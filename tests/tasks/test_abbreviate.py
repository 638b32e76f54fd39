"""Task.abbreviate: each task's paths in 003 Tables 4–6's notation, checked on the marks of
real lattices: the notation reads back to the marks it abbreviates, and 003's own examples
come out as printed."""

import pytest

from nfst.fst.dataset import compile_dataset
from nfst.tasks import get_task
from nfst.tasks.base import Task, steps
from nfst.tasks.scan import WORDS
from tests.helpers.tasks import write_fixture


def every_path(task, pairs, data_dir=None) -> list[tuple[str, ...]]:
    lattices = compile_dataset(task.mfst(data_dir), pairs, progress=False).lattices
    return [marks for lattice in lattices for marks in lattice.mark_strings()]


def test_tr_reads_back_on_every_path(tmp_path):
    task = get_task("tr")
    root = write_fixture(tmp_path)
    paths = every_path(task, task.pairs("dev", root)[:1], root)  # dil: 20 paths
    assert len(paths) == 20
    for marks in paths:
        text = task.abbreviate(marks)
        back = [
            m
            for step in text.split(", ")
            for m in step.replace("delete ", "<del> ").replace("insert ", "<ins> ").split(" ")
        ]
        assert tuple(back) == marks
    first = ("<ins>", "<ur>", "<del>", "c", "<ins>", "چ", "<del>", "h")
    assert task.abbreviate(first) == "insert <ur>, delete c, insert چ, delete h"  # as 003 Table 4


def test_scan_leaves_out_the_moves():
    task = get_task("scan")
    pair = (("jump", "twice"), ("I_JUMP", "I_JUMP"))
    paths = every_path(task, [pair])
    assert len(paths) == 6  # every interleaving of 2 words and 2 actions
    for marks in paths:
        text = task.abbreviate(marks).split(" ")
        assert tuple(m for s in text for m in ("<del>" if s in WORDS else "<ins>", s)) == marks
    assert (
        task.abbreviate(("<del>", "look", "<ins>", "I_TURN_LEFT", "<del>", "around"))
        == "look I_TURN_LEFT around"
    )  # as 003 Table 5 begins


def test_cipher_as_003_table_6():
    task = get_task("cipher", train_size=20, eval_size=4)
    true = task.true_marks("train")
    assert len(true) == 20
    for marks in true:  # generating paths: in their lattices
        text = task.abbreviate(marks)
        cipher = next(m for m in marks if m.startswith("cipher_"))
        assert f"cipher{cipher.removeprefix('cipher_')}:" in text
        moves = text.replace(":", ",").split(", ")
        assert len(moves) == marks.count("replace") + marks.count("insert") + 1
    marks = (
        "insert",
        "q",
        "cipher_2",
        "replace",
        "d",
        "f",
        "copy",
        "f",
        "insert",
        "j",
        "replace",
        "d",
        "f",
        "delete",
        "f",
    )
    assert task.abbreviate(marks) == "insert q, cipher2: d→f, insert j, d→f→ε"


def test_the_default_is_the_marks_and_steps_must_cut_evenly():
    assert Task().abbreviate(("a", "b")) == "a b"
    with pytest.raises(ValueError, match="not steps of 2"):
        steps(("<del>", "a", "<ins>"), 2)
