"""`nfst reproduce`: each task's run at the preset, in order, then one merged report; a bad
task name is refused before any run starts."""

from pathlib import Path

from nfst.cli import main
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
