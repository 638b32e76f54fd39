"""Runs made from runs: `nfst run --from RUN` trains samplers only, against RUN's scorer, into
a whole run of its own; `nfst run --continue` trains a run's samplers on, from their
checkpoints, to a larger budget, as far as a run given that budget from the start."""

import json
import shutil

import pytest
import torch

import nfst.experiment.sampler_stage
import nfst.experiment.scorer_stage
from nfst.cli import main
from nfst.experiment.branch import branch_config, raise_budget
from nfst.experiment.run import Run
from nfst.runtime import storage
from tests.helpers.tiny import tiny_config

QUIET = ["--quiet", "--processes", "1", "--jobs", "1"]


def _nfst(capsys, *argv):
    status = main([*argv, *QUIET])
    return status, capsys.readouterr().err


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A run of one sampler whose LSTM scorer (and n-gram) is trained, nothing else."""
    tmp = tmp_path_factory.mktemp("scored")
    run = Run(
        tiny_config(samplers=("swp",)), tmp / "a", cache_dir=tmp / "cache", quiet=True, processes=1
    )
    run.scorer()
    return run


def test_from_trains_samplers_only_against_the_runs_scorer(scored, tmp_path, capsys, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("a run made --from another trained a scorer")

    monkeypatch.setattr(nfst.experiment.scorer_stage, "train_scorer", never)
    monkeypatch.setattr(nfst.experiment.scorer_stage, "fit_ngram", never)
    new = tmp_path / "b"
    argv = [
        "run",
        "--from",
        str(scored.dir),
        "--run-dir",
        str(new),
        "--option",
        "sampler.lr=0.01",
        "--option",
        "evaluate.smc_particles=[4]",
        "--option",
        "evaluate.smc_pairs=1",
    ]  # the evaluation's settings may change too (SMC: faster)
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
    status, err = _nfst(
        capsys,
        "run",
        "--from",
        str(scored.dir),
        "--run-dir",
        str(new),
        "--option",
        "scorer.steps=5",
    )
    assert (
        status == 2
        and f"--from {scored.dir} takes its scorer, which --option scorer.steps=5 would change"
        in err
    )
    status, err = _nfst(capsys, "run", "--from", str(tmp_path / "nowhere"), "--run-dir", str(new))
    assert status == 2 and "no run recorded there" in err
    assert not new.exists()


def test_from_says_which_old_defaults_it_keeps(scored, tmp_path, caplog):
    """A run recorded when a default was other than today's (here ``sampler.sleep_patience``,
    as ``sampler.sleep_steps`` was 0 before the default slept): a run made from it keeps the
    recorded value and says so, unless the command sets it; a run recorded with today's
    defaults has nothing to say."""
    old = tmp_path / "old"
    shutil.copytree(scored.dir, old)
    settings = json.loads((old / "config.json").read_text())
    patience = settings["preset"]["sampler"]["sleep_patience"] + 4
    settings["preset"]["sampler"]["sleep_patience"] = patience
    (old / "config.json").write_text(json.dumps(settings))
    said = f"today's defaults differ: --option sampler.sleep_patience={patience} (another"
    with caplog.at_level("INFO", logger="nfst"):
        assert branch_config(old).resolved_preset().sampler.sleep_patience == patience
        assert said in caplog.text
        caplog.clear()
        branch_config(old, ["sampler.sleep_patience=2"])
        branch_config(scored.dir)
        assert "today's defaults differ" not in caplog.text


def test_from_with_another_seed_keeps_the_scorer_and_pairs_and_hashes_its_seeds(scored, tmp_path):
    """`nfst run --from RUN --seed 100 --seeds 5`: fresh training seeds on RUN's scorer and
    pairs, in a directory named after the seed."""
    from nfst.cli import parse_args, request_of
    from nfst.experiment.opening import open_run

    request, _ = request_of(
        parse_args(
            [
                "run",
                "--from",
                str(scored.dir),
                "--seed",
                "100",
                "--seeds",
                "5",
                "--quiet",
                "--processes",
                "1",
                "--device",
                "cpu",
            ]
        )
    )
    run = open_run(request)
    assert run.dir == scored.dir.parent / f"{scored.dir.name}+seed=100"
    assert (run.config.seed, run.config.seeds, run.config.seeding) == (100, 5, "hashed")
    assert run.config.from_run == str(scored.dir.resolve())
    seeds = [run.training_seed(j) for j in range(5)]
    assert seeds[0] == 100 and len(set(seeds)) == 5 and not {0, 1, 2, 101} & set(seeds)
    assert all(run.pairs(s) == scored.pairs(s) for s in ("train", "dev", "test"))
    assert not run.dir.exists()  # nothing written until a stage runs


def test_continue_trains_on_to_the_figures_of_the_larger_budget(finished_run, tmp_path):
    """The finished run's samplers trained 12 steps; continued to 20, each ends where a
    sampler trained 20 steps from the start ends: the same history, the same parameters."""
    run, _ = finished_run
    longer, fresh = tmp_path / "longer", tmp_path / "fresh"
    shutil.copytree(run.dir, longer)
    shutil.copytree(run.dir, fresh, ignore=shutil.ignore_patterns("sampler*", "*.ckpt"))
    for path in (longer, fresh):
        raise_budget(path, ["sampler.steps=20"])
    assert not (longer / "stages" / "sampler-swp.json").exists()  # trained on by the next stage
    assert not (longer / "stages" / "evaluate.json").exists()
    runs = [
        Run.open(path, cache_dir=run.cache_dir, quiet=True, processes=1) for path in (longer, fresh)
    ]
    for each in runs:
        each.train_sampler("swp")
    ours, theirs = (r.done("sampler-swp") for r in runs)
    assert ours["steps"] == 20 and ours["stopped_by"] == theirs["stopped_by"]
    assert ours["history"] == theirs["history"]
    ours, theirs = (storage.load(path / "samplers" / "swp.pt")["state"] for path in (longer, fresh))
    assert all(torch.equal(ours[key], theirs[key]) for key in theirs)


def test_continue_trains_only_the_steps_past_the_checkpoint(finished_run, tmp_path, monkeypatch):
    """`nfst run --continue` from 12 usual steps to 20 (and a patience that lets every sampler
    go on): each sampler's training sees steps 21..28 alone (after its 8 sleep steps and 12
    usual ones), resumed from its checkpoint (a training started over would end with the same
    figures, step 1 on)."""
    run, _ = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run.dir, copy)
    seen, train = {}, nfst.experiment.sampler_stage.train_sampler

    def watched(sampler, *args, callback, **kwargs):
        steps = seen.setdefault(sampler.name, [])
        return train(
            sampler,
            *args,
            **kwargs,
            callback=lambda step, record: (steps.append(step), callback and callback(step, record)),
        )

    class Trained(Exception):
        pass

    def trained(self):
        raise Trained  # the evaluation after training is not this test's

    monkeypatch.setattr(nfst.experiment.sampler_stage, "train_sampler", watched)
    monkeypatch.setattr(Run, "smoothing", trained)
    with pytest.raises(Trained):
        main(
            [
                "run",
                "--run-dir",
                str(copy),
                "--continue",
                "--option",
                "sampler.steps=20",
                "--option",
                "sampler.patience=10",
                "--debug",
                *QUIET,
            ]
        )  # --debug: Trained is raised, not reported
    assert seen == {name: list(range(21, 29)) for name in ("swa", "swp")}


def test_continue_takes_a_larger_budget_only(finished_run, tmp_path, capsys):
    run, _ = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run.dir, copy)
    before = (copy / "config.json").read_text()
    status, err = _nfst(
        capsys, "run", "--run-dir", str(copy), "--continue", "--option", "sampler.lr=0.1"
    )
    assert (
        status == 2
        and "--continue raises the samplers' budget (sampler.steps, "
        "sampler.patience), not --option sampler.lr=0.1"
        in err
    )
    status, err = _nfst(
        capsys, "run", "--run-dir", str(copy), "--continue", "--option", "sampler.steps=6"
    )
    assert status == 2 and "sampler.steps=6 is below the run's 12" in err
    status, err = _nfst(
        capsys,
        "run",
        "--run-dir",
        str(copy),
        "--continue",
        "--option",
        "sampler.steps=20",
        "--seed",
        "1",
    )  # checked before the budget moves
    assert status == 2 and "records a run with --seed 0, not --seed 1" in err
    assert (copy / "config.json").read_text() == before
    assert (copy / "stages" / "evaluate.json").exists()


def test_continue_without_a_larger_budget_or_past_patience_says_so(
    finished_run, tmp_path, capsys, caplog
):
    """`--continue` with no budget, the recorded one on a finished run, or more steps for
    samplers that patience stopped would train nothing: exit 2, the run as it was."""
    run, _ = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run.dir, copy)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    status, err = _nfst(capsys, "run", "--run-dir", str(copy), "--continue")
    assert status == 2 and "--continue trains on to a larger budget, and none is given" in err
    assert "sampler.steps=24" in err  # the hint's example: twice the run's
    status, err = _nfst(
        capsys, "run", "--run-dir", str(copy), "--continue", "--option", "sampler.steps=12"
    )
    assert (
        status == 2
        and "are trained to this budget (sampler.steps=12, sampler.patience=3) already" in err
    )
    stages = sorted((copy / "stages").glob("sampler-*.json"))
    assert len(stages) == 2
    for stage in stages:  # as if patience had stopped each
        record = json.loads(stage.read_text()) | {"stopped_by": "patience"}
        stage.write_text(json.dumps(record))
        before[stage] = stage.read_bytes()
    status, err = _nfst(
        capsys, "run", "--run-dir", str(copy), "--continue", "--option", "sampler.steps=20"
    )
    assert (
        status == 2 and "would train nothing: every sampler" in err and "sampler.patience=6" in err
    )
    assert {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before
    stage = stages[0]
    stage.write_text(json.dumps(json.loads(stage.read_text()) | {"stopped_by": "steps"}))
    raise_budget(copy, ["sampler.steps=20"])  # one sampler goes on: a warning names the other
    assert f"{stages[1].stem.removeprefix('sampler-')} stopped early" in caplog.text
