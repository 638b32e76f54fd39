import json

import pytest

from nfst.cli import main


def test_bad_task_is_one_line_and_a_hint(capsys):
    assert main(["stats", "nope", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nfst: error: no task named 'nope'")
    assert "hint:" in err and "Traceback" not in err


def test_config_file_overridden_by_flags(tmp_path, capsys):
    cfg = tmp_path / "nfst.toml"
    cfg.write_text('cache-dir = "%s"\n[stats]\ntask = "cipher"\nlimit = 3\n' % (tmp_path / "c"))
    assert main(["stats", "--config", str(cfg), "--quiet", "--json", "--processes", "1"]) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert stats["task"] == "cipher" and stats["pairs"] == 3
    assert main(["stats", "--config", str(cfg), "--limit", "2", "--quiet", "--json",
                 "--processes", "1"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["pairs"] == 2
    assert (tmp_path / "c").is_dir()


def test_unknown_config_key(tmp_path, capsys):
    cfg = tmp_path / "nfst.toml"
    cfg.write_text("[stats]\nbogus = 1\n")
    assert main(["stats", "--config", str(cfg)]) == 2
    assert "unknown settings" in capsys.readouterr().err


def test_bench_prints_json_last_line(capsys):
    assert main(["bench", "backward", "--lattices", "4", "--quiet"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    result = json.loads(out[-1])
    assert result["lattices"] == 4, out
    assert result["max_abs_err"] < 1e-9, result


# -- bad input, every subcommand: one line, a hint, exit status 2, no traceback ----------------
SMALL = ["--set", "train_size=4", "--set", "eval_size=4", "--quiet", "--processes", "1"]
"""Task settings that keep a run's compile step to a few pairs."""


def make_run_dir(tmp_path, corrupt=()):
    """A claimed cipher run directory with no stage done, and garbage in the given model files."""
    from nfst.experiment.config import RunConfig
    from nfst.experiment.run import Run
    out = tmp_path / "run"
    Run(RunConfig(task="cipher", preset="small", seed=0, samplers=("swa",),
                  task_settings={"train_size": 4, "eval_size": 4}), out, quiet=True,
        cache_dir=tmp_path / "cache").run_dir.claim()  # as a stage does before it writes
    for name in corrupt:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(b"not a checkpoint")
    return out


def bad_toml(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[stats\ntask = 'cipher'\n")
    return path


BAD_INPUT = {
    # case: (argv given tmp_path, what the error line says[, what the hint says])
    "report: missing run dir": (lambda t: ["report", str(t / "missing")], "missing"),
    "sample: run dir without the sampler": (
        lambda t: ["sample", "cipher", "--run-dir", str(t / "new"), "--sampler", "swa", "--x", "a b",
                   "--y", "c d", *SMALL], "no trained swa sampler"),
    "train-sampler: wrong sampler": (
        lambda t: ["train-sampler", "cipher", "--sampler", "nope", "--run-dir", str(t / "r"), *SMALL],
        "train-sampler: argument --sampler: invalid choice: 'nope'"),
    "run: wrong sampler in the list": (
        lambda t: ["run", "cipher", "--samplers", "swa,nope", "--run-dir", str(t / "r"), *SMALL],
        "unknown samplers"),
    "run: wrong bootstrap sampler": (
        lambda t: ["run", "cipher", "--option", "scorer.bootstrap_sampler=nope", "--run-dir",
                   str(t / "r"), *SMALL], "unknown samplers"),
    "run: wrong scorer proposal": (
        lambda t: ["run", "cipher", "--option", "scorer.proposal=gold", "--run-dir",
                   str(t / "r"), *SMALL], "unknown scorer proposal 'gold'"),
    "stats: bad TOML": (lambda t: ["stats", "--config", str(bad_toml(t))], "cannot read config"),
    "evaluate: bad TOML": (lambda t: ["evaluate", "cipher", "--config", str(bad_toml(t))],
                           "cannot read config"),
    "run: --option of no setting": (
        lambda t: ["run", "cipher", "--option", "sampler.nope=1", "--run-dir", str(t / "r"), *SMALL],
        "no setting 'sampler.nope'"),
    "smc: --option without =": (
        lambda t: ["smc", "cipher", "--option", "sampler.steps", "--run-dir", str(t / "r"), *SMALL],
        "expected KEY=VALUE"),
    "train-scorer: --option of the wrong type": (
        lambda t: ["train-scorer", "cipher", "--option", "scorer.hidden=big", "--run-dir",
                   str(t / "r"), *SMALL], "expected a positive int"),
    "stats: unknown device": (lambda t: ["stats", "cipher", "--device", "tpu", "--limit", "1"], "tpu"),
    "compile: absent GPU": (lambda t: ["compile", "cipher", "--device", "cuda:7", "--limit", "1"], "cuda:7"),
    "compile: --set without =": (lambda t: ["compile", "cipher", "--set", "train_size"], "KEY=VALUE"),
    "stats: unknown task setting": (lambda t: ["stats", "cipher", "--set", "bogus=1"], "bogus"),
    "compile: unknown split": (lambda t: ["compile", "cipher", "--split", "nope", "--limit", "1"], "nope"),
    "sample: empty x": (
        lambda t: ["sample", "cipher", "--run-dir", str(t / "r"), "--x", "", "--y", "a b", *SMALL],
        "empty"),
    "sample: empty y": (
        lambda t: ["sample", "cipher", "--run-dir", str(t / "r"), "--x", "a b", "--y", " ", *SMALL],
        "empty"),
    "sample: symbols outside the alphabet": (
        lambda t: ["sample", "cipher", "--run-dir", str(t / "r"), "--x", "a 7", "--y", "b c", *SMALL],
        "'7'", "cipher reads x over a b c"),
    "sample: corrupt sampler checkpoint": (
        lambda t: ["sample", "--run-dir", str(make_run_dir(t, ["samplers/swa.pt", "scorer.pt"])),
                   "--sampler", "swa", "--x", "a b", "--y", "c d", "cipher", *SMALL],
        "integrity check"),
    "train-scorer: corrupt scorer": (
        lambda t: ["train-scorer", "cipher", "--run-dir", str(make_run_dir(t, ["scorer.pt"])), *SMALL],
        "integrity check"),
    "bench: unknown benchmark": (lambda t: ["bench", "nope"], "bench: argument name: invalid choice"),
    "sample: missing --x": (lambda t: ["sample", "cipher", "--y", "a"], "required: --x"),
    "tasks: unknown flag": (lambda t: ["tasks", "--bogus"], "--bogus"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_one_line_and_a_hint(case, tmp_path, capsys, monkeypatch):
    """In-process, so each case costs milliseconds: exit status 2, stderr exactly
    ``nfst: error: …`` and ``  hint: …``, no traceback, not reported as an internal error."""
    monkeypatch.chdir(tmp_path)  # default caches and run folders land in tmp_path
    argv, says, *hint = BAD_INPUT[case]
    try:
        status = main(argv(tmp_path))
    except SystemExit as exc:  # argparse must not exit on its own
        status = f"SystemExit({exc.code})"
    err = capsys.readouterr().err
    lines = err.rstrip("\n").split("\n")
    assert status == 2, (status, err)
    assert len(lines) == 2 and lines[0].startswith("nfst: error: "), err
    assert lines[1].startswith("  hint: ") and len(lines[1]) > len("  hint: ") + 5, err
    assert says in lines[0] and all(h in lines[1] for h in hint), err
    assert "Traceback" not in err and "internal error" not in err
