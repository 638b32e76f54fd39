"""A run knows what it was made from (nfst.experiment.provenance): after an edit of its task
file's alphabet, of a mark's name, or of its data, every command that would use the run's models
with them exits 2 with one line and leaves the run directory byte for byte as it was."""

import hashlib
import json

import pytest

from nfst.cli import main
from nfst.experiment.provenance import MADE_FROM
from nfst.tasks import registry
from tests.helpers.tiny import TINY

TASK = """
from pathlib import Path
from nfst.fst.mfst import Arc, MarkedFST
from nfst.fsts import deletion_insertion
from nfst.tasks import Task, register_task

RENAME = {rename!r}

@register_task
class Typo(Task):
    name = "typo-made-from"
    splits = ("train", "dev", "test")

    def build_mfst(self, data_dir):
        T = deletion_insertion({letters!r}, {letters!r}, name=self.name)
        return MarkedFST.from_arcs(T.num_states, T.finals, [
            Arc(a.src, a.dst, a.input, a.output, tuple(RENAME.get(m, m) for m in a.marks))
            for a in T.arcs], name=self.name)

    def load(self, split, data_dir):
        for line in (Path(data_dir) / f"{{split}}.txt").read_text().splitlines():
            x, y = line.split()
            yield tuple(x), tuple(y)
"""

PAIRS = {
    "train": ["ab ba", "ba ab", "aab aba", "bb ab", "ab abb", "ba bba"],
    "dev": ["ab aa", "bab ab"],
    "test": ["aa ab", "ba bb"],
}


def _write(tmp_path, letters="ab", test=PAIRS["test"], rename=None):
    (tmp_path / "typo.py").write_text(TASK.format(letters=letters, rename=rename or {}))
    for split, lines in (PAIRS | {"test": test}).items():
        (tmp_path / "data" / f"{split}.txt").write_text("\n".join(lines) + "\n")


def _forget_task(monkeypatch):
    """As a new process would: the task file is imported again on its next use."""
    monkeypatch.setattr(registry, "_LOADED_FILES", {})
    monkeypatch.setattr(
        registry,
        "_REGISTRY",
        {k: v for k, v in registry._REGISTRY.items() if k != "typo-made-from"},
    )


def _snapshot(folder):
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished tiny run of a task from a task file with its own data (swa, an n-gram
    scorer), made once; the tests edit the task file and data beside it, never the run."""
    root = tmp_path_factory.mktemp("made-from")
    (root / "data").mkdir()
    _write(root)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _forget_task(monkeypatch)
        monkeypatch.setenv("NFST_TASKS", str(root / "typo.py"))
        options = [
            a for o in (*TINY, "scorer.kind=ngram", "sampler.steps=4") for a in ("--option", o)
        ]
        status = main(
            [
                "run",
                "typo-made-from",
                "--run-dir",
                str(root / "run"),
                "--data-dir",
                str(root / "data"),
                "--samplers",
                "swa",
                "--quiet",
                "--processes",
                "1",
                "--jobs",
                "1",
                *options,
            ]
        )
    assert status == 0
    return root / "run"


@pytest.fixture
def made_run(finished, monkeypatch, capsys):
    """The finished run, its task forgotten as by a new process (the run recorded its task
    file); its task file and data as they were made, again after the test."""
    _forget_task(monkeypatch)
    capsys.readouterr()
    yield finished
    _write(finished.parent)


COMMANDS = {
    "continue": ["run", "--continue", "--option", "sampler.steps=8"],
    "evaluate": ["evaluate"],
    "from": ["run", "--from", "{run}", "--run-dir", "{new}"],
    "train-sampler": ["train-sampler", "--sampler", "swa"],
    "sample": ["sample", "--sampler", "swa", "--x", "a b", "--y", "b a"],
}


def _each_command_refuses(run_dir, monkeypatch, capsys, commands, said):
    before = _snapshot(run_dir)
    assert MADE_FROM in before and "results.json" in before
    for name in commands:
        argv = [a.format(run=run_dir, new=run_dir.parent / "new") for a in COMMANDS[name]]
        if "--from" not in argv:
            argv += ["--run-dir", str(run_dir)]
        _forget_task(monkeypatch)
        status = main([*argv, "--quiet", "--processes", "1"])
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert status == 2, (name, err)
        assert (
            len(lines) == 2
            and lines[0].startswith("nfst: error: ")
            and lines[1].startswith("  hint: ")
        ), (name, err)  # one line, then its hint
        assert said in lines[0] and "new run" in lines[1], (name, err)
        assert _snapshot(run_dir) == before, name  # touched nothing
        assert not (run_dir.parent / "new").exists(), name


def test_a_changed_alphabet_is_refused_by_every_command(made_run, monkeypatch, capsys):
    _write(made_run.parent, letters="abc")
    _each_command_refuses(
        made_run, monkeypatch, capsys, COMMANDS, "was made from another topology than the task file"
    )
    err = (main(["evaluate", "--run-dir", str(made_run), "--quiet"]), capsys.readouterr().err)
    assert "marks added: " in err[1] and "c" in err[1]


def test_a_renamed_mark_of_the_same_size_is_refused(made_run, monkeypatch, capsys):
    """The dangerous edit: the vocabulary keeps its size, so only the fingerprint tells."""
    _write(made_run.parent, rename={"<del>": "<drop>"})
    _each_command_refuses(
        made_run,
        monkeypatch,
        capsys,
        ["continue", "sample"],
        "marks added: <drop>; marks removed: <del>",
    )


def test_changed_data_is_refused_by_every_command_that_reads_it(made_run, monkeypatch, capsys):
    _write(made_run.parent, test=["aa ab", "ba ba"])
    _each_command_refuses(
        made_run,
        monkeypatch,
        capsys,
        ["continue", "evaluate", "from", "train-sampler"],
        "was made from other data: its pairs of test (2 pairs then, 2 now)",
    )


def test_the_record_and_an_unchanged_run(made_run, caplog):
    """What is recorded, and that an edit of the task file's text alone is only noted."""
    record = json.loads((made_run / MADE_FROM).read_text())
    assert record["topology"]["marks"] and record["pairs"]["train"]["count"] == 6
    assert record["task_file"]["path"] == str((made_run.parent / "typo.py").resolve())
    path = made_run.parent / "typo.py"
    path.write_text(path.read_text() + "\n# a comment\n")
    assert main(["evaluate", "--run-dir", str(made_run), "--quiet"]) == 0
    assert "changed since the run was made; its topology and pairs did not" in caplog.text
