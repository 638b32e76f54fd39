"""tr: the Dakshina lexicon loader, on fixture files and (when NFST_DATA_DIR is set) real data."""

import logging
import os
from math import comb

import pytest

from nfst.fst.dataset import compile_dataset
from nfst.tasks import DataError, get_task
from tests.helpers.tasks import TRAIN, grid_size, write_fixture


def test_fixture_pairs_and_mfst(tmp_path):
    root = write_fixture(tmp_path)
    task = get_task("tr")
    pairs = task.pairs("train", root)
    assert len(pairs) == 5  # deduplicated, file order
    assert pairs[0] == (tuple("salaam"), ("<ur>", "س", "ل", "ا", "م"))
    T = task.mfst(root)
    assert T.name == "tr" and T.num_states == 1
    marks = {" ".join(a.marks) for a in T.arcs}
    assert {"<del> s", "<ins> <ur>", "<ins> س"} <= marks and len(marks) == len(T.arcs)
    data = compile_dataset(T, pairs, progress=False)
    assert len(data.lattices) == 5 and not data.skipped
    for (x, y), L in zip(pairs, data.lattices):
        assert L.num_paths() == comb(len(x) + len(y), len(x))  # every interleaving, once
        assert (L.states_before_min, L.arcs_before_min) == grid_size(len(x), len(y))


def test_dev_pairs_with_unseen_letters_are_skipped_and_logged(tmp_path, caplog):
    root = write_fixture(tmp_path)
    task = get_task("tr")
    with caplog.at_level(logging.WARNING, logger="nfst"):
        data = compile_dataset(task.mfst(root), task.pairs("dev", root), progress=False)
    assert len(data.lattices) == 2 and len(data.skipped) == 1
    assert "skipped" in caplog.text and "input symbols ['h', 'z']" in caplog.text


def test_training_subset_is_a_seeded_setting(tmp_path):
    root = write_fixture(tmp_path)
    a = get_task("tr", train_size=3).pairs("train", root)
    assert a == get_task("tr", train_size=3).pairs("train", root) and len(a) == 3
    assert a != get_task("tr", train_size=3, seed=5).pairs("train", root)


def test_missing_data_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("NFST_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="ur.translit.sampled.train.tsv") as err:
        get_task("tr").pairs("train")
    assert "NFST_DATA_DIR" in str(err.value)
    root = write_fixture(tmp_path)
    with pytest.raises(DataError, match="no test split here.*test.tsv is absent"):
        get_task("tr").pairs("test", root)
    monkeypatch.setenv("NFST_DATA_DIR", str(root))  # the environment variable is read
    assert len(get_task("tr").pairs("dev")) == 3


@pytest.mark.parametrize(
    "line, problem",
    [
        ("کتاب\tkitab", "expected 3 tab-separated fields"),
        ("کتاب\tkitab\tmany", "count 'many' is not a whole number"),
        ("کتاب\tki tab\t1", "no whitespace"),
        ("\tkitab\t1", "non-empty"),
    ],
)
def test_malformed_lines_are_skipped_or_name_file_and_line_when_strict(
    tmp_path, line, problem, caplog
):
    root = write_fixture(tmp_path, train=TRAIN[:2] + [line])
    with caplog.at_level("WARNING"):
        assert len(get_task("tr").pairs("train", root)) == 2
    assert "train.tsv: skipped 1 of 3 lines as malformed (line 3; the first: " in caplog.text
    assert problem in caplog.text
    with pytest.raises(DataError, match=rf"train.tsv:3: .*{problem}") as err:
        get_task("tr", strict=True).pairs("train", root)
    assert "strict" in err.value.hint


def test_empty_file(tmp_path):
    root = write_fixture(tmp_path)
    (root / "dakshina-ur" / "ur.translit.sampled.dev.tsv").write_text("")
    with pytest.raises(DataError, match="dev.tsv is empty"):
        get_task("tr").pairs("dev", root)


@pytest.mark.skipif(
    not os.environ.get("NFST_DATA_DIR"),
    reason="real Dakshina data: set NFST_DATA_DIR to the shared data folder",
)
def test_real_data():
    task = get_task("tr")
    train = task.pairs("train")
    assert len(train) == task.settings.train_size
    assert all(y[0] == "<ur>" and len(y) > 1 and x for x, y in train)
    T = task.mfst()
    assert set(T.input_alphabet) == set("abcdefghijklmnopqrstuvwxyz")
    data = compile_dataset(T, task.subset(train, 30, "test"), progress=False)
    assert len(data.lattices) == 30 and not data.skipped
    dev = task.pairs("dev")
    assert len(dev) == task.settings.eval_size
