"""The command line's settings and output (its answers to bad input are one table:
tests/experiment/test_cli_messages.py)."""

import json

from nfst.cli import main


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


def test_bench_prints_json_last_line(capsys):
    assert main(["bench", "backward", "--lattices", "4", "--quiet"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    result = json.loads(out[-1])
    assert result["lattices"] == 4, out
    assert result["max_abs_err"] < 1e-9, result
