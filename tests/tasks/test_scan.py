"""scan: the grammar generator, the length split and the SCAN file reader."""

import os
from pathlib import Path

import pytest

from nfst.fst.dataset import compile_dataset
from nfst.tasks import DataError, get_task
from nfst.tasks.scan import length_split, read_scan_file, scan_commands
from tests.helpers.tasks import grid_size

EXAMPLES = {  # 003 Tables 1 and 5, and Lake & Baroni's examples
    "look right twice after jump left": "I_TURN_LEFT I_JUMP I_TURN_RIGHT I_LOOK I_TURN_RIGHT I_LOOK",
    "look around left twice and jump around right": " ".join(
        ["I_TURN_LEFT I_LOOK"] * 8 + ["I_TURN_RIGHT I_JUMP"] * 4
    ),
    "turn opposite left thrice": " ".join(["I_TURN_LEFT"] * 6),
    "walk opposite right and turn around left": "I_TURN_RIGHT I_TURN_RIGHT I_WALK I_TURN_LEFT I_TURN_LEFT I_TURN_LEFT I_TURN_LEFT",
    "run": "I_RUN",
}


def test_generator_counts_and_examples():
    commands = scan_commands()
    assert len(commands) == len(set(commands)) == 20_910
    meaning = dict(commands)
    for command, actions in EXAMPLES.items():
        assert meaning[tuple(command.split())] == tuple(actions.split())
    train, test = length_split(commands)
    assert (len(train), len(test)) == (16_990, 3_920)
    assert max(len(a) for _, a in train) == 22 and min(len(a) for _, a in test) == 24


def test_splits_are_seeded_disjoint_and_sized():
    task = get_task("scan", train_size=300, dev_size=50, eval_size=40)
    train, dev, test = (task.pairs(s) for s in ("train", "dev", "test"))
    assert (len(train), len(dev), len(test)) == (300, 50, 40)
    assert not set(train) & set(dev)
    assert all(len(y) <= 22 for _, y in train + dev) and all(len(y) > 22 for _, y in test)
    again = get_task("scan", train_size=300, dev_size=50, eval_size=40)
    assert again.pairs("train") == train and again.pairs("dev") == dev
    assert get_task("scan", train_size=300, dev_size=50, seed=1).pairs("train") != train


def test_training_sample_compiles():
    task = get_task("scan", train_size=25)
    T = task.mfst()
    assert T.name == "scan" and len(T.mark_alphabet) == 2 + 13 + 6
    data = compile_dataset(T, task.pairs("train"), progress=False)
    assert len(data.lattices) == 25 and not data.skipped
    for (x, y), L in zip(data.pairs, data.lattices):
        assert (L.states_before_min, L.arcs_before_min) == grid_size(len(x), len(y))


def write_scan_file(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def test_reader_on_fixture_files(tmp_path):
    lines = [f"IN: {c} OUT: {a}" for c, a in EXAMPLES.items()]
    path = write_scan_file(tmp_path / "scan" / "tasks.txt", lines)
    pairs = read_scan_file(path)
    assert pairs[0] == (
        tuple("look right twice after jump left".split()),
        tuple(EXAMPLES["look right twice after jump left"].split()),
    )
    assert set(pairs) <= set(scan_commands())


def test_reader_names_file_and_line_of_a_malformed_line(tmp_path):
    path = write_scan_file(tmp_path / "bad.txt", ["IN: walk OUT: I_WALK", "IN: walk I_WALK"])
    assert read_scan_file(path) == [(("walk",), ("I_WALK",))]  # the bad line is skipped
    with pytest.raises(DataError, match=r"bad.txt:2: expected 'IN: <command> OUT: <actions>'"):
        read_scan_file(path, strict=True)
    with pytest.raises(DataError, match="empty.txt is empty"):
        read_scan_file(write_scan_file(tmp_path / "empty.txt", []))


@pytest.mark.skipif(
    not os.environ.get("NFST_DATA_DIR"),
    reason="published SCAN files: set NFST_DATA_DIR to the shared data folder",
)
def test_generator_reproduces_the_published_files():
    root = Path(os.environ["NFST_DATA_DIR"]) / "scan"
    published = read_scan_file(root / "tasks.txt")
    train = read_scan_file(root / "length_split" / "tasks_train_length.txt")
    test = read_scan_file(root / "length_split" / "tasks_test_length.txt")
    ours_train, ours_test = length_split(scan_commands())
    assert len(published) == len(set(published)) and set(published) == set(scan_commands())
    assert set(train) == set(ours_train) and len(train) == len(ours_train)
    assert set(test) == set(ours_test) and len(test) == len(ours_test)
