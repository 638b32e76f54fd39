"""Runs made from runs: `nfst run --from RUN` trains samplers only, against RUN's scorer, into
a whole run of its own."""

import json

import pytest

import nfst.experiment.run
from nfst.cli import main
from nfst.experiment.run import Run
from tests.experiment.tiny import tiny_config

QUIET = ["--quiet", "--processes", "1", "--jobs", "1"]


def _nfst(capsys, *argv):
    status = main([*argv, *QUIET])
    return status, capsys.readouterr().err


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A run of one sampler whose LSTM scorer (and n-gram) is trained, nothing else."""
    tmp = tmp_path_factory.mktemp("scored")
    run = Run(tiny_config(samplers=("swp",)), tmp / "a", cache_dir=tmp / "cache", quiet=True,
              processes=1)
    run.scorer()
    return run


def test_from_trains_samplers_only_against_the_runs_scorer(scored, tmp_path, capsys,
                                                           monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("a run made --from another trained a scorer")
    monkeypatch.setattr(nfst.experiment.run, "train_scorer", never)
    monkeypatch.setattr(nfst.experiment.run, "fit_ngram", never)
    new = tmp_path / "b"
    argv = ["run", "--from", str(scored.dir), "--run-dir", str(new), "--option",
            "sampler.lr=0.01", "--option", "evaluate.smc_particles=[4]", "--option",
            "evaluate.smc_pairs=1"]  # the evaluation's settings may change too (SMC: faster)
    status, err = _nfst(capsys, *argv)
    assert status == 0, err
    for model in ("scorer.pt", "ngram.pt", "stages/scorer.json"):
        assert (new / model).read_bytes() == (scored.dir / model).read_bytes()
    results = json.loads((new / "results.json").read_text())
    assert results["config"]["run"]["from_run"] == str(scored.dir.resolve())
    assert results["config"]["run"]["overrides"][-3:] == argv[6::2]  # after the run's
    assert results["config"]["preset"]["sampler"]["lr"] == 0.01
    assert list(results["samplers"]) == ["swp"] and (new / "report" / "report.md").exists()
    assert _nfst(capsys, *argv) == (0, "")  # the same command again: the same run, finished


def test_from_refuses_to_change_the_scorer_and_creates_nothing(scored, tmp_path, capsys):
    new = tmp_path / "b"
    status, err = _nfst(capsys, "run", "--from", str(scored.dir), "--run-dir", str(new),
                        "--option", "scorer.steps=5")
    assert status == 2 and f"--from {scored.dir} takes its scorer, which --option " \
        "scorer.steps=5 would change" in err
    status, err = _nfst(capsys, "run", "--from", str(tmp_path / "nowhere"), "--run-dir",
                        str(new))
    assert status == 2 and "no run recorded there" in err
    assert not new.exists()
