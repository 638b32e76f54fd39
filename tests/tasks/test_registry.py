"""The task abstraction: registry, task files, settings, data directories, subsets."""

import os
import re
from pathlib import Path

import pytest

from nfst.fst.dataset import compile_dataset
from nfst.tasks import (
    DataError,
    MalformedLine,
    Task,
    TaskError,
    data_file,
    file_of_task,
    get_task,
    load_task_file,
    read_records,
    register_task,
    resolve_data_dir,
    task_names,
)
from tests.helpers.tasks import USER_TASK

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tasks.md"


def test_builtin_tasks_are_registered():
    assert {"cipher", "scan", "tr"} <= set(task_names())


def test_unknown_task_split_and_setting_are_clear_errors():
    with pytest.raises(TaskError, match="no task named 'nope'.*cipher"):
        get_task("nope")
    with pytest.raises(TaskError, match="no split 'nope'"):
        get_task("cipher").pairs("nope")
    with pytest.raises(TaskError, match="train_size"):
        get_task("cipher", trian_size=3)
    assert get_task("cipher", train_size=7).settings.train_size == 7


def test_settings_are_checked_against_their_fields():
    """Each setting has its field's type; int settings are sizes (at least 1) unless the field
    says otherwise (seed, min_len: at least 0); an int is a fine float."""
    for bad, expected in [
        ({"train_size": "abc"}, "None or a positive int, got 'abc'"),
        ({"eval_size": 0}, "None or a positive int, got 0"),
        ({"num_ciphers": True}, "a positive int, got True"),
        ({"seed": -1}, "an int of at least 0, got -1"),
        ({"p_delete": "x"}, "a float in [0, 1], got 'x'"),
        ({"p_insert": 1.5}, "a float in [0, 1], got 1.5"),
        ({"mean_len": float("nan")}, "a float of at least 0, got nan"),
        ({"strict": 1}, "a bool, got 1"),
    ]:
        with pytest.raises(TaskError, match=re.escape(f"{next(iter(bad))}: expected {expected}")):
            get_task("cipher", **bad)
    with pytest.raises(TaskError, match=r"num_ciphers must be 1\.\.1000, got 1001"):
        get_task("cipher", num_ciphers=1001)  # its MFST would take long to build
    settings = get_task("cipher", train_size=None, min_len=0, p_delete=1).settings
    assert (settings.train_size, settings.min_len, settings.p_delete) == (None, 0, 1.0)
    assert isinstance(settings.p_delete, float)


def test_load_task_file_registers_its_tasks_once(tmp_path):
    path = tmp_path / "mirror.py"
    path.write_text(USER_TASK.format(name="mirror-file"))
    assert load_task_file(path) == ["mirror-file"]
    assert load_task_file(path) == ["mirror-file"]  # a second load is a no-op
    task = get_task("mirror-file")
    assert task.pairs("train") == [(("a", "b"), ("b", "a")), (("b",), ("b",))]  # deduplicated
    data = compile_dataset(task.mfst(), task.pairs("train"), progress=False)
    assert len(data.lattices) == 2 and not data.skipped


def test_the_file_a_task_came_from(tmp_path):
    path = tmp_path / "mirror.py"
    path.write_text(USER_TASK.format(name="mirror-from"))
    load_task_file(path)
    assert file_of_task("mirror-from") == path.resolve()
    assert file_of_task("cipher") is None  # built in


def test_task_files_from_the_environment(tmp_path, monkeypatch):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(USER_TASK.format(name="mirror-env-a"))
    b.write_text(USER_TASK.format(name="mirror-env-b"))
    monkeypatch.setenv("NFST_TASKS", f"{a}{os.pathsep}{b}")
    assert {"mirror-env-a", "mirror-env-b"} <= set(task_names())
    monkeypatch.setenv("NFST_TASKS", str(tmp_path / "missing.py"))
    with pytest.raises(TaskError, match="missing.py does not exist"):
        get_task("cipher")


def test_bad_task_files(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(TaskError, match="broken.py failed to import.*boom"):
        load_task_file(broken)
    clash = tmp_path / "clash.py"
    clash.write_text(USER_TASK.format(name="cipher"))
    with pytest.raises(TaskError, match="'cipher' is taken"):
        load_task_file(clash)
    with pytest.raises(TaskError, match="non-empty class attribute `name`"):
        register_task(type("Nameless", (Task,), {}))


def test_the_worked_example_in_the_docs_runs(tmp_path):
    code = re.search(r"```python\n(# my_task\.py\n.*?)```", DOCS.read_text(), re.S).group(1)
    path = tmp_path / "my_task.py"
    path.write_text(code)
    (name,) = load_task_file(path)
    task = get_task(name)
    pairs = task.pairs("train")
    data = compile_dataset(task.mfst(), pairs, progress=False)
    assert pairs and len(data.lattices) == len(pairs)


def test_data_dir_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("NFST_DATA_DIR", raising=False)
    assert resolve_data_dir() is None
    monkeypatch.setenv("NFST_DATA_DIR", str(tmp_path / "env"))
    assert resolve_data_dir() == tmp_path / "env"
    assert resolve_data_dir(tmp_path) == tmp_path  # an explicit argument wins
    with pytest.raises(DataError, match=r"reads some/file.txt.*none is set") as err:
        data_file("demo", "some/file.txt", None)
    assert "NFST_DATA_DIR" in str(err.value)
    with pytest.raises(DataError, match=r"some/file.txt does not exist"):
        data_file("demo", "some/file.txt", tmp_path)


def parse_number(line: str) -> int:
    if not line.strip().isdigit():
        raise MalformedLine(f"not a number: {line!r}")
    return int(line)


def test_read_records_skips_malformed_lines_with_a_count_or_fails_when_strict(tmp_path, caplog):
    """Malformed and non-UTF-8 lines are skipped; one warning gives how many, the first five
    line numbers and the first problem. ``strict`` stops at the first, naming file and line,
    with a hint that fits the problem (not the data-directory hint of a missing file)."""
    path = tmp_path / "numbers.txt"
    lines = [b"1", b"x", b"2", b"caf\xe9", b"3", b"", b"y", b"z", b"w", b"v", b"4"]
    path.write_bytes(b"\n".join(lines) + b"\n")
    with caplog.at_level("WARNING"):
        assert read_records(path, parse_number) == [1, 2, 3, 4]
    (warning,) = [r.getMessage() for r in caplog.records]
    assert (
        "numbers.txt: skipped 6 of 10 lines as malformed (lines 2, 4, 7, 8, 9, ...; "
        "the first: not a number: 'x')"
        in warning
        and "strict" in warning
    )
    with pytest.raises(DataError, match=r"numbers.txt:2: not a number: 'x'") as err:
        read_records(path, parse_number, strict=True)
    assert "strict" in err.value.hint and "data_dir" not in err.value.hint
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"1\n2\ncaf\xe9\n")
    with pytest.raises(DataError, match=r"latin1.txt:3: not UTF-8") as err:
        read_records(latin1, parse_number, strict=True)
    assert "UTF-8" in err.value.hint
    caplog.clear()
    assert read_records(tmp_path / "numbers.txt", parse_number, strict=False)[-1] == 4
    assert "skipped 6" in caplog.text


def test_read_records_rejects_empty_and_all_malformed_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(DataError, match="empty.txt is empty") as err:
        read_records(empty, parse_number)
    assert "data_dir" not in err.value.hint
    words = tmp_path / "words.txt"
    words.write_text("a\nb\n")
    with pytest.raises(
        DataError,
        match=r"words.txt: every line is malformed \(line 1: not a "
        r"number",
    ) as err:
        read_records(words, parse_number)
    assert "format" in err.value.hint


def test_subsets_are_seeded_and_nested():
    task = get_task("cipher")
    items = list(range(100))
    small, large = task.subset(items, 10, "s"), task.subset(items, 30, "s")
    assert small == large[:10] and len(set(large)) == 30
    assert small == get_task("cipher").subset(items, 10, "s")
    assert small != get_task("cipher", seed=1).subset(items, 10, "s")
    assert task.subset(items, None, "s") == items == task.subset(items, 500, "s")
