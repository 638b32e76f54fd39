"""The command line's settings and output (its answers to bad input are one table:
tests/experiment/test_cli_messages.py)."""

import json
import os
import subprocess
import sys

import pytest

from nfst.cli import main


def test_config_file_overridden_by_flags(tmp_path, capsys):
    cfg = tmp_path / "nfst.toml"
    cfg.write_text('cache-dir = "%s"\n[stats]\ntask = "cipher"\nlimit = 3\n' % (tmp_path / "c"))
    assert main(["stats", "--config", str(cfg), "--quiet", "--json", "--processes", "1"]) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert stats["task"] == "cipher" and stats["pairs"] == 3
    assert (
        main(
            ["stats", "--config", str(cfg), "--limit", "2", "--quiet", "--json", "--processes", "1"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["pairs"] == 2
    assert (tmp_path / "c").is_dir()


def test_bench_prints_json_last_line(capsys):
    assert main(["bench", "backward", "--lattices", "4", "--quiet"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    result = json.loads(out[-1])
    assert result["lattices"] == 4, out
    assert result["max_abs_err"] < 1e-9, result


@pytest.mark.parametrize("argv", [["options"], ["tasks"]])  # a long output, a short one
def test_a_closed_pipe_ends_the_command_quietly(argv):
    """`nfst options | head -1`: the reader has gone before the first line is written; the
    command stops with no traceback and 141, as one killed by SIGPIPE, whether the pipe is
    found closed as it writes (a long output) or as it exits (a short one, still buffered)."""
    read, write = os.pipe()
    os.close(read)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with os.fdopen(write, "w") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "nfst.cli", *argv],
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            timeout=120,
        )
    assert (done.returncode, done.stderr) == (141, "")
