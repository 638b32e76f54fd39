"""Processes that share a run directory: `nfst train-sampler` processes started at once (a
cluster's array jobs) record every sampler and train the same figures as one after another."""

import json
import os
import shutil
import subprocess
import sys
import threading
import time

import torch

import nfst.experiment.sampler_stage
from nfst.cli import main
from nfst.experiment.run import Run
from tests.helpers.tiny import FINISHED, tiny_config, tiny_options


def _train_sampler(run_dir, cache, sampler):
    """`nfst train-sampler --new` of the finished_run fixture's settings, in a process."""
    argv = [
        sys.executable,
        "-m",
        "nfst.cli",
        "train-sampler",
        "cipher",
        "--sampler",
        sampler,
        "--run-dir",
        str(run_dir),
        "--new",
        "--cache-dir",
        str(cache),
        "--quiet",
        "--processes",
        "1",
        *tiny_options(settings=FINISHED),
    ]
    return subprocess.Popen(
        argv,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_train_sampler_processes_at_once_give_the_figures_of_one_run(
    finished_run, tmp_path, capsys
):
    """Both start on an empty directory: one fits the n-gram (the scorer) while the other
    waits for it, each records its sampler beside the other's, and `nfst evaluate` then gives
    the partial KLs of the whole run to the last digit."""
    run, _ = finished_run
    shared = tmp_path / "shared"
    processes = [_train_sampler(shared, run.cache_dir, name) for name in ("swa", "swp")]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    recorded = json.loads((shared / "config.json").read_text())["run"]["samplers"]
    assert sorted(recorded) == ["swa", "swp"]
    assert main(["evaluate", "--run-dir", str(shared), "--quiet", "--processes", "1"]) == 0
    capsys.readouterr()
    ours = json.loads((shared / "stages" / "evaluate.json").read_text())["samplers"]
    theirs = run.done("evaluate")["samplers"]
    for name in ("swa", "swp"):
        assert ours[name]["per_pair_partial_kl"] == theirs[name]["per_pair_partial_kl"]
        assert ours[name]["partial_kl"] == theirs[name]["partial_kl"]


def test_samplers_joined_at_once_are_all_recorded(tmp_path):
    """Two commands open a run recording swa; each adds a sampler, then records the run:
    the second reads the record again and keeps the first one's."""
    Run(tiny_config(samplers=("swa",)), tmp_path / "run", quiet=True).run_dir.claim()
    opened = [
        Run(tiny_config(samplers=("swa", name)), tmp_path / "run", quiet=True)
        for name in ("swp", "sws")
    ]
    for run, name in zip(opened, ("swp", "sws")):
        run.run_dir.join(name)
    for run in opened:
        run.run_dir.claim()
    recorded = json.loads((tmp_path / "run" / "config.json").read_text())["run"]["samplers"]
    assert recorded == ["swa", "swp", "sws"]


def test_two_openings_of_a_run_training_one_sampler_take_turns(finished_run, tmp_path, monkeypatch):
    """Two openings of a run with its scorer and no sampler trained (two threads, each its own
    file handle on the run's lock, as two processes would have) ask for swp at once: one
    trains it while the other waits at the run's lock, then loads it."""
    run, _ = finished_run
    shared = tmp_path / "run"
    shutil.copytree(run.dir, shared, ignore=shutil.ignore_patterns("sampler*", "*.ckpt"))
    trained, train = [], nfst.experiment.sampler_stage.train_sampler

    def slow(*args, **kwargs):
        trained.append(threading.current_thread().name)
        time.sleep(0.5)  # the other arrives meanwhile
        return train(*args, **kwargs)

    monkeypatch.setattr(nfst.experiment.sampler_stage, "train_sampler", slow)
    opened = [Run.open(shared, cache_dir=run.cache_dir, quiet=True, processes=1) for _ in range(2)]
    start, samplers = threading.Barrier(2), {}

    def ask(each):
        start.wait()
        samplers[threading.current_thread().name] = each.train_sampler("swp").state_dict()

    threads = [threading.Thread(target=ask, args=(each,)) for each in opened]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(trained) == 1 and len(samplers) == 2
    ours, theirs = samplers.values()
    assert all(torch.equal(ours[key], theirs[key]) for key in theirs)


def test_a_stage_clock_sums_the_commands_that_worked_on_the_stage(tmp_path):
    """A command interrupted in a stage leaves its seconds in the stage's clock, rewritten
    while it runs; the command that finishes the stage adds its own, and the clock goes."""
    from nfst.experiment.rundir import RunDir

    run_dir = RunDir(tmp_path / "run", {"run": {"samplers": [], "seeds": 1}})
    clock = tmp_path / "run" / "stages" / "samplers.clock"
    try:
        with run_dir.clock("samplers", every=0.05):
            time.sleep(0.3)
            running = json.loads(clock.read_text())  # written while the stage runs
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    first = json.loads(clock.read_text())
    assert 0 < running["seconds"] <= first["seconds"] and first["commands"] == 1
    assert first["seconds"] >= 0.3
    with run_dir.clock("samplers", every=0.05) as spent:
        time.sleep(0.2)
        run_dir.finish("samplers", spent())
    done = run_dir.done("samplers")
    assert done["commands"] == 2 and done["seconds"] >= first["seconds"] + 0.2
    assert not clock.exists()


def test_a_resumed_sampler_stage_counts_the_seconds_spent_before(finished_run, tmp_path):
    """The sampler stage's record (and results.json's wall_seconds) adds what the clock of an
    interrupted command recorded."""
    run, _ = finished_run
    shared = tmp_path / "run"
    shutil.copytree(run.dir, shared, ignore=shutil.ignore_patterns("sampler*", "*.ckpt"))
    (shared / "stages" / "samplers.clock").write_text(json.dumps({"seconds": 1e4, "commands": 1}))
    opened = Run.open(shared, cache_dir=run.cache_dir, quiet=True, processes=1)
    opened.train_samplers()
    done = opened.done("samplers")
    assert done["commands"] == 2 and 1e4 < done["seconds"] < 1e4 + 600
    assert not (shared / "stages" / "samplers.clock").exists()
