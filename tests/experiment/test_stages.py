"""The stage-by-stage route: `nfst train-scorer --new` starts a run with the task, its data
directory and the samplers to compare; every later command on the run directory takes them
from the record (no TASK, no --data-dir, from another working directory), trains only the
samplers it is named, and `nfst evaluate` compares exactly the trained samplers named."""

import json
import subprocess
import sys

import pytest

from nfst.cli import main
from nfst.experiment.config import RunConfig
from nfst.experiment.run import Run
from tests.helpers.tasks import USER_TASK
from tests.helpers.tiny import TINY

LETTERS = {"a": "ا", "b": "ب", "k": "ک", "d": "د"}
TR_FILE = "dakshina-ur/ur.translit.sampled.{}.tsv"


def _tr_data(folder):
    """A Dakshina-like data directory of words over four letters: 16 train, 4 dev, 4 test."""
    words = [a + b + c for a in LETTERS for b in LETTERS for c in LETTERS][:24]
    for split, part in (("train", words[:16]), ("dev", words[16:20]), ("test", words[20:])):
        path = folder / TR_FILE.format(split)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{''.join(LETTERS[c] for c in w)}\t{w}\t1\n" for w in part))
    return folder


def _nfst(capsys, *argv):
    status = main([*argv, "--quiet", "--processes", "1"])
    out, err = capsys.readouterr()
    return status, out, err


def _trained(run_dir) -> set[str]:
    return {p.stem for p in (run_dir / "samplers").glob("*.pt")}


def test_stage_by_stage_without_task_or_data_dir_trains_only_what_is_named(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.delenv("NFST_DATA_DIR", raising=False)
    data, run_dir, cache = _tr_data(tmp_path / "data"), tmp_path / "run", tmp_path / "cache"
    (tmp_path / "start").mkdir()
    monkeypatch.chdir(tmp_path / "start")
    status, _, err = _nfst(
        capsys,
        "train-scorer",
        "tr",
        "--data-dir",
        str(data),
        "--run-dir",
        str(run_dir),
        "--cache-dir",
        str(cache),
        "--new",
        "--samplers",
        "swa,swp",
        *(a for o in TINY for a in ("--option", o)),
    )
    assert status == 0, err
    assert json.loads((run_dir / "where.json").read_text()) == {
        "data_dir": str(data.resolve()),
        "cache_dir": str(cache.resolve()),
        "task_file": None,
    }
    assert json.loads((run_dir / "config.json").read_text())["run"]["samplers"] == ["swa", "swp"]
    assert not (run_dir / "samplers").exists()

    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # relative paths would now point nowhere
    run = ("--run-dir", str(run_dir))
    assert _nfst(capsys, "train-sampler", *run, "--sampler", "swa")[0] == 0
    assert _trained(run_dir) == {"swa"}
    status, _, err = _nfst(capsys, "evaluate", *run)  # swp is not trained: refused, not trained
    assert status == 2 and f"{run_dir}: not trained yet: swp" in err
    assert _trained(run_dir) == {"swa"} and not (run_dir / "stages" / "evaluate.json").exists()

    assert _nfst(capsys, "train-sampler", *run, "--sampler", "swp")[0] == 0
    status, out, err = _nfst(capsys, "evaluate", *run)
    assert status == 0, err
    evaluation = json.loads((run_dir / "stages" / "evaluate.json").read_text())
    assert list(evaluation["samplers"]) == ["swa", "swp"]
    assert "swa" in out and "swp" in out

    # a sampler the run does not list joins it when trained, and is then evaluated
    assert _nfst(capsys, "train-sampler", *run, "--sampler", "sws")[0] == 0
    recorded = json.loads((run_dir / "config.json").read_text())["run"]
    assert recorded["samplers"] == ["swa", "swp", "sws"]
    status, _, err = _nfst(capsys, "evaluate", *run, "--samplers", "sws,swa")
    assert status == 0, err
    evaluation = json.loads((run_dir / "stages" / "evaluate.json").read_text())
    assert list(evaluation["samplers"]) == ["sws", "swa"]

    status, out, err = _nfst(capsys, "smc", *run)  # the samplers evaluate was given last
    assert status == 0, err
    assert json.loads((run_dir / "stages" / "smc.json").read_text())["sampler"] in ("sws", "swa")
    assert main(["report", str(run_dir), "--out", str(tmp_path / "report")]) == 0
    assert "Partial KL" in (tmp_path / "report" / "report.md").read_text()
    assert _nfst(capsys, "run", *run)[0] == 0  # the whole pipeline: nothing left to do

    # trained already, so only recorded: the samplers the next stages compare
    assert _nfst(capsys, "train-sampler", *run, "--sampler", "swp")[0] == 0
    assert json.loads((run_dir / "config.json").read_text())["run"]["samplers"] == [
        "sws",
        "swa",
        "swp",
    ]
    assert _nfst(capsys, "train-scorer", *run, "--samplers", "swp")[0] == 0
    assert json.loads((run_dir / "config.json").read_text())["run"]["samplers"] == ["swp"]

    assert _trained(run_dir) == {"swa", "swp", "sws"}  # only what was named
    assert not list((tmp_path / "elsewhere").iterdir())  # the recorded cache was used


def _recorded_tr_run(tmp_path, monkeypatch):
    """A run directory that records a tr run (samplers swa) with nothing done, and its data."""
    monkeypatch.delenv("NFST_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    data, run_dir = _tr_data(tmp_path / "data"), tmp_path / "run"
    Run(RunConfig(task="tr", samplers=("swa",)), run_dir, data_dir=data).run_dir.claim()
    return data, run_dir


@pytest.mark.parametrize(
    "given, error",
    [
        ((), "not trained yet: swa"),
        (("tr",), "not trained yet: swa"),
        (("cipher",), "records a run of the task tr, not cipher"),
        (("--option", "sampler.steps=99"), "records a run with sampler.steps=200, not --option"),
    ],
)
def test_a_stage_command_checks_what_it_is_given_against_the_record(
    given, error, tmp_path, monkeypatch, capsys
):
    _, run_dir = _recorded_tr_run(tmp_path, monkeypatch)
    status, _, err = _nfst(capsys, "evaluate", *given, "--run-dir", str(run_dir))
    assert status == 2 and error in err, err


def test_a_data_directory_given_replaces_the_recorded_one(tmp_path, monkeypatch, capsys):
    """The same files may move: --data-dir given to a stage command is used (and recorded by
    the next stage that writes)."""
    data, run_dir = _recorded_tr_run(tmp_path, monkeypatch)
    moved = data.rename(tmp_path / "moved")
    status, _, err = _nfst(capsys, "evaluate", "--run-dir", str(run_dir))
    assert status == 2 and f"{data}/{TR_FILE.format('train')} does not exist" in err, err
    status, _, err = _nfst(capsys, "evaluate", "--run-dir", str(run_dir), "--data-dir", str(moved))
    assert status == 2 and "not trained yet: swa" in err, err


def test_a_run_records_its_task_file(tmp_path, monkeypatch):
    """A run of a task from a task file records the file (where.json): a later process opens
    the run without NFST_TASKS."""
    task_file = tmp_path / "mirror.py"
    task_file.write_text(USER_TASK.format(name="mirror-recorded"))
    monkeypatch.setenv("NFST_TASKS", str(task_file))
    Run(RunConfig(task="mirror-recorded", samplers=("swa",)), tmp_path / "run").run_dir.claim()
    assert json.loads((tmp_path / "run" / "where.json").read_text())["task_file"] == str(
        task_file.resolve()
    )
    monkeypatch.delenv("NFST_TASKS")
    code = f"import nfst; print(nfst.open_run({str(tmp_path / 'run')!r}, quiet=True).task.name)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "mirror-recorded", done.stderr
    task_file.rename(tmp_path / "moved.py")  # the error names where it was, and the remedy
    done = subprocess.run(
        [sys.executable, "-m", "nfst.cli", "evaluate", "--run-dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
    )
    assert (
        done.returncode == 2
        and f"records its task mirror-recorded as defined in "
        f"{task_file.resolve()}, which is not there now"
        in done.stderr
        and "NFST_TASKS=NEW/PATH.py" in done.stderr
    ), done.stderr
