"""`nfst reproduce`: each task's run at the preset, in order, then one merged report; a bad
task name is refused before any run starts."""

import json
from pathlib import Path

from nfst.cli import main
from nfst.experiment.config import RunConfig
from nfst.experiment.run import Run


def test_reproduce_runs_each_task_then_merges_them(tmp_path, monkeypatch, capsys):
    ran, merged = [], []
    monkeypatch.setattr(
        Run,
        "run",
        lambda run: ran.append((run.config.task, run.dir, run.jobs)) or run.dir / "report",
    )
    monkeypatch.setattr(
        "nfst.experiment.report.write_report",
        lambda dirs, out: merged.append((list(dirs), Path(out))) or Path(out),
    )
    argv = [
        "reproduce",
        "--tasks",
        "cipher",
        "--preset",
        "large",
        "--seed",
        "3",
        "--runs-dir",
        str(tmp_path),
        "--jobs",
        "2",
        "--quiet",
    ]
    assert main(argv) == 0
    assert ran == [("cipher", tmp_path / "cipher-large-3", 2)]
    assert merged == [([tmp_path / "cipher-large-3"], tmp_path / "reproduce-large-3")]
    assert capsys.readouterr().out.splitlines()[-1] == f"report: {tmp_path}/reproduce-large-3"

    ran.clear()
    assert main(["reproduce", "--tasks", "cipher,ciphr", "--runs-dir", str(tmp_path)]) == 2
    assert ran == []  # nothing ran: the unknown name is found first


def test_reproduce_resumes_a_run_recorded_before_training_seeds_were_hashed(tmp_path, monkeypatch):
    """A run directory recorded with seed + j (no `seeding` in its config.json) is resumed with
    its own training seeds, not refused as a run of other settings."""
    ran = []
    monkeypatch.setattr(Run, "run", lambda run: ran.append(run.config.seeding) or run.dir)
    monkeypatch.setattr("nfst.experiment.report.write_report", lambda dirs, out: Path(out))
    run_dir = tmp_path / "cipher-small-0"
    Run(RunConfig(task="cipher", samplers=("swa",)), run_dir).run_dir.claim()
    record = json.loads((run_dir / "config.json").read_text())
    del record["run"]["seeding"]  # as nfst recorded it before
    (run_dir / "config.json").write_text(json.dumps(record))
    argv = ["reproduce", "--tasks", "cipher", "--runs-dir", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    assert ran == ["consecutive"]
