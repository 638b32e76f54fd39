"""End-to-end: a tiny `nfst run`, stage skipping, config protection, and crash safety."""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from nfst.cli import main
from nfst.errors import NfstError, RunConfigError
from nfst.experiment import sampler_stage
from nfst.experiment.presets import PRESETS
from nfst.experiment.run import Run
from nfst.runtime import storage
from nfst.runtime.distributed import stream_seed
from nfst.train.checkpoint import training_words
from nfst.train.sampler import train_sampler
from nfst.train.sleep import TripleFeed
from nfst.train.triples import draw_triples
from tests.helpers.tiny import FINISHED, TINY, tiny_config, tiny_options


def test_a_teacher_is_trained_first_and_its_paths_train_the_others(tmp_path):
    run = Run(
        tiny_config(samplers=("swa",), overrides=tuple(TINY) + ("sampler.teacher=swp",)),
        tmp_path / "run",
        cache_dir=tmp_path / "cache",
        quiet=True,
        processes=1,
    )
    run.train_samplers()
    assert (tmp_path / "run" / "samplers" / "swp.pt").exists()
    history = run.done("sampler-swa")["history"]
    assert all(1.0 <= h["ess"] <= 16 for h in history[1:])


def without_wall_times(stage: dict) -> dict:
    """A sampler's stage file without its wall times (the whole training's, the sleep's)."""
    sleep = {k: v for k, v in (stage.get("sleep") or {}).items() if k != "sleep_seconds"}
    return {k: v for k, v in stage.items() if k != "seconds"} | {"sleep": sleep}


def test_the_default_sleeps_and_sleep_steps_0_gives_the_usual_training(finished_run, tmp_path):
    """Every preset but paper sleeps by default (``sampler.sleep_steps=auto``, confirmed:
    docs/results/confirm-protocol.md); ``--option sampler.sleep_steps=0`` on the same run
    trains the usual way: no triples drawn, no sleep phase. (The usual training itself is
    what the rest of the suite checks: TINY sets ``sampler.sleep_steps=0``.)"""
    assert {n: p.sampler.sleep_steps for n, p in PRESETS.items()} == {
        "paper": 0,
        "small": "auto",
        "large": "auto",
        "tiny": "auto",
    }
    run, _ = finished_run  # the default
    assert run.done("sampler-swp")["sleep"]["setting"] == "auto"
    assert (run.dir / "triples").exists()
    config = dataclasses.replace(
        run.config, samplers=("swp",), overrides=(*run.config.overrides, "sampler.sleep_steps=0")
    )
    usual_run = Run(config, tmp_path / "usual", cache_dir=run.cache_dir, quiet=True, processes=1)
    usual_run.train_samplers()
    usual = usual_run.done("sampler-swp")
    assert "sleep" not in usual and not (tmp_path / "usual" / "triples").exists()
    assert all("phase" not in h for h in usual["history"]) and usual["steps"] <= 12


def test_a_failed_draw_of_triples_says_how_to_train_without_the_sleep_phase(
    finished_run, tmp_path, monkeypatch
):
    """The presets sleep by default, so an error drawing the triples (here: the scorer has no
    step interface) adds the way out to its hint, and leaves no triples behind."""

    def no_steps(*args, **kwargs):
        raise NfstError("the scorer has no step interface", "draw from an LSTM")

    monkeypatch.setattr(sampler_stage, "TripleStream", no_steps)
    run, _ = finished_run
    config = dataclasses.replace(run.config, samplers=("swa",))
    fresh = Run(config, tmp_path / "run", cache_dir=run.cache_dir, quiet=True, processes=1)
    with pytest.raises(NfstError) as raised:
        fresh.train_samplers()
    assert str(raised.value).startswith("the scorer has no step interface")
    assert raised.value.hint == (
        "draw from an LSTM; or train without the sleep phase: --option sampler.sleep_steps=0"
    )
    assert not (tmp_path / "run" / "triples").exists()


def test_samplers_trained_in_parallel_match_those_trained_one_after_another(
    finished_run, tmp_path, capfd
):
    """The sampler stage in two worker processes reproduces the sequential stage exactly:
    the same parameters and the same training history (wall times aside); quiet, the workers
    say nothing either."""
    run, _ = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run.dir, copy, ignore=shutil.ignore_patterns("sampler*", "*.ckpt"))
    parallel = Run.open(copy, cache_dir=run.cache_dir, quiet=True, processes=1, jobs=2)
    parallel.train_samplers()
    assert parallel.done("samplers")["jobs"] == 2
    assert capfd.readouterr().out == ""
    for name in run.config.samplers:
        ours, theirs = (r.done(f"sampler-{name}") for r in (parallel, run))
        assert without_wall_times(ours) == without_wall_times(theirs)
        ours, theirs = (
            storage.load(d / "samplers" / f"{name}.pt")["state"] for d in (copy, run.dir)
        )
        assert all(torch.equal(ours[key], theirs[key]) for key in theirs)


def test_stage_commands_and_a_full_run_share_one_directory(tmp_path):
    """What `nfst train-scorer` records (the default samplers) or `nfst train-sampler` records
    (one sampler) does not lock the directory against `nfst run` with other samplers; other
    settings still do."""
    Run(tiny_config(samplers=("swp",)), tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()  # claimed by the first stage that writes, not here
    Run(tiny_config(samplers=("swp",)), tmp_path / "run", quiet=True).run_dir.claim()
    Run(tiny_config(), tmp_path / "run", quiet=True).run_dir.claim()  # as a stage does
    recorded = json.loads((tmp_path / "run" / "config.json").read_text())
    assert recorded["run"]["samplers"] == ["swa", "swp"]
    with pytest.raises(RunConfigError):
        Run(tiny_config(samplers=("swp",), seed=1), tmp_path / "run", quiet=True)


def test_run_writes_everything_and_skips_finished_stages(finished_run, tmp_path):
    """A whole run with the n-gram as scorer (a WFST): the estimates a run reports are checked
    against the exact values it reports beside them."""
    run, report = finished_run
    config, out = run.config, run.dir
    results = json.loads((out / "results.json").read_text())
    assert set(results["samplers"]) == {"swa", "swp"}
    assert not (out / "scorer.pt").exists()  # the n-gram is the scorer
    evaluation = json.loads((out / "stages" / "evaluate.json").read_text())
    log_z, exact = evaluation["log_z"], evaluation["exact_log_z"]["per_pair"]
    for value, se, truth in zip(log_z["per_pair"], log_z["per_pair_se"], exact):
        assert value <= truth + 3 * se + 1e-9  # a lower bound, as stated
    scorer = results["scorer"]
    assert scorer["kind"] == "ngram" and scorer["test_log_z_is_lower_bound"]
    assert scorer["test_log_z_exact"] == pytest.approx(sum(exact) / len(exact))
    # the trigram is the scorer: the exact log Z is its test log-likelihood
    assert scorer["ngram_test_log_likelihood"] == pytest.approx(scorer["test_log_z_exact"])
    assert set(results["samplers"]) == set(run.config.samplers)
    for name, metrics in results["samplers"].items():
        assert metrics["partial_kl"] > 0 and metrics["ess"] >= 1.0
        # from the untrained sampler on: the sleep phase to its cap (8), then 12 usual steps
        assert metrics["curve"]["step"] == [0, 4, 8, 12, 16, 20]
        # the untrained sampler evaluated is the one training started from
        from nfst.train.sampler_trainer import validate

        early_stopping = stream_seed(run.training_seed(0), "early_stopping")
        assert validate(
            run.untrained_sampler(name),
            run.scorer(),
            run.lattices("dev"),
            4,
            16,
            early_stopping,
            run.device,
        ) == pytest.approx(metrics["curve"]["val_partial_kl"][0])
        assert metrics["untrained_partial_kl"] != metrics["partial_kl"]
        assert (
            metrics["exclusive_kl_lower_bound"]
            <= metrics["exclusive_kl"] + 3 * metrics["exclusive_kl_lower_bound_se"]
        )
        assert metrics["exclusive_kl"] + 3 * metrics["exclusive_kl_se"] >= 0
        assert metrics["inclusive_kl"] + 3 * metrics["inclusive_kl_se"] >= 0
        assert metrics["training"]["mean_ess"] >= 1.0
        # patience counts in the usual training: three validations at 12, 16, 20 without
        # improvement stop it by patience at the cap
        best_step = metrics["best_step"]
        assert metrics["stopped_by"] == ("patience" if best_step <= 8 else "steps")
        assert metrics["steps"] == run.done(f"sampler-{name}")["history"][-1]["step"] == 20
        assert (metrics["sleep"]["steps"], metrics["sleep"]["stopped_by"]) == (8, "cap")
        assert best_step in metrics["curve"]["step"]
        # proposals in the task's notation (Task.abbreviate), e.g. "cipher2: d→f, insert j"
        assert re.match(r"(insert [a-z], )*cipher\d: ", metrics["most_probable"]["proposal"])
    assert set(results["wall_seconds"]) == {"compile", "scorer", "samplers", "evaluate", "smc"}
    assert all(seconds > 0 for seconds in results["wall_seconds"].values())
    assert len(log_z["per_pair"]) == 4 and results["log_z"]["samples"] == 8
    smc = run.done("smc")  # the evaluation sizes of TINY's evaluate.* options
    assert (evaluation["k"], smc["M"], smc["pairs"], smc["lookahead"]["fit_steps"]) == (
        4,
        [4, 8],
        2,
        5,
    )
    text = report.read_text()
    assert "Partial KL" in text and "untrained → trained" in text and "Ordering" in text
    assert "exclusive KL lower bound" in text and "Pareto k̂" in text and "exact log Z" in text
    assert "### cipher: test pair 0 (003 Table 6)" in text
    recorded = json.loads((out / "config.json").read_text())
    assert recorded["preset"]["sampler"]["steps"] == 12 and recorded["task_settings"]["seed"] == 0

    copy = tmp_path / "run"  # the run is shared (finished_run): run a copy again
    shutil.copytree(out, copy)
    stamp = (copy / "stages" / "evaluate.json").stat().st_mtime_ns
    t = time.time()
    Run(config, copy, cache_dir=run.cache_dir, quiet=True).run()
    assert time.time() - t < 10  # nothing retrained
    assert (copy / "stages" / "evaluate.json").stat().st_mtime_ns == stamp

    with pytest.raises(RunConfigError):
        Run(tiny_config(), out, cache_dir=run.cache_dir, quiet=True)


def test_corrupt_model_file_is_reported(tmp_path, capsys):
    run = Run(
        tiny_config(), tmp_path / "run", cache_dir=tmp_path / "cache", quiet=True, processes=1
    )
    run.scorer()
    path = tmp_path / "run" / "scorer.pt"
    path.write_bytes(path.read_bytes()[:-3])
    assert main(["train-scorer", "cipher", "--run-dir", str(path.parent), "--quiet"]) == 2
    assert "integrity" in capsys.readouterr().err


def _cli(out, cache):
    """`nfst train-sampler --new` of swa with the settings of the finished_run fixture."""
    return [
        sys.executable,
        "-m",
        "nfst.cli",
        "train-sampler",
        "cipher",
        "--sampler",
        "swa",
        "--run-dir",
        str(out),
        "--new",
        "--cache-dir",
        str(cache),
        "--quiet",
        "--processes",
        "1",
    ] + tiny_options(settings=FINISHED)


def test_sigkill_then_resume_matches_uninterrupted(finished_run, tmp_path):
    """Killed part-way, then run again: the sampler of the finished run, which trained
    uninterrupted with the same settings."""
    run, _ = finished_run
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    victim = subprocess.Popen(
        _cli(tmp_path / "b", run.cache_dir),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ckpt = tmp_path / "b" / "checkpoints" / "swa.ckpt"
    deadline = time.time() + 120
    while time.time() < deadline:  # kill once the sampler has checkpointed part-way
        if ckpt.exists() and 0 < storage.load(ckpt)["step"] < 12:
            break
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert not (tmp_path / "b" / "samplers" / "swa.pt").exists(), "killed too late"
    subprocess.run(_cli(tmp_path / "b", run.cache_dir), check=True, env=env, capture_output=True)
    a = storage.load(run.dir / "samplers" / "swa.pt")["state"]
    b = storage.load(tmp_path / "b" / "samplers" / "swa.pt")["state"]
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    ha = json.loads((run.dir / "stages" / "sampler-swa.json").read_text())
    hb = json.loads((tmp_path / "b" / "stages" / "sampler-swa.json").read_text())
    assert ha["best_dev_partial_kl"] == hb["best_dev_partial_kl"]
    assert ha["history"] == hb["history"]


def test_sigterm_checkpoints_a_whole_step_and_says_so(finished_run, tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        _cli(tmp_path / "c", finished_run[0].cache_dir),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ckpt = tmp_path / "c" / "checkpoints" / "swa.ckpt"
    deadline = time.time() + 120
    while time.time() < deadline and not (ckpt.exists() and storage.load(ckpt)["step"] >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted after step" in err and "hint: run the same command again" in err
    step = int(err.split("interrupted after step ")[1].split(";")[0])
    assert storage.load(ckpt)["step"] == step < 12


def test_ctrl_c_in_the_scorer_stage_exits_130(tmp_path, capsys):
    """A training loop stopped by SIGINT exits 130, as the other stages do (it exited 2, the
    status of bad input). The signal comes from a thread once the scorer has checkpointed."""
    ckpt = tmp_path / "run" / "checkpoints" / "scorer.ckpt"

    def interrupt():
        deadline = time.time() + 120
        while not ckpt.exists() and time.time() < deadline:
            time.sleep(0.05)
        if ckpt.exists():  # else the test fails below, unsignalled
            os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    status = main(
        [
            "train-scorer",
            "cipher",
            "--new",
            "--run-dir",
            str(tmp_path / "run"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--quiet",
            "--processes",
            "1",
            *tiny_options("scorer.steps=100000", "scorer.checkpoint_every=1"),
        ]
    )
    thread.join()
    err = capsys.readouterr().err
    assert status == 130, err
    assert "interrupted after step" in err and not (tmp_path / "run" / "scorer.pt").exists()
    step = int(err.split("interrupted after step ")[1].split(";")[0])
    assert training_words(ckpt) == f"resuming from step {step} (its checkpoint)"  # not "training"


@pytest.mark.parametrize("whom, signum", [("group", signal.SIGINT), ("parent", signal.SIGTERM)])
def test_a_signal_in_the_parallel_sampler_stage_stops_it_at_once_and_starts_no_queued_sampler(
    whom, signum, finished_run, tmp_path
):
    """SIGINT to the process group (as Ctrl-C sends it), or SIGTERM to the parent alone (as
    ``kill PID`` sends it; its workers pass it on), while two workers train: 128 +
    the signal's number at once (before, a parent signalled alone waited for the samplers to
    train to their end), and the third sampler, queued, never starts. The lattices come from
    the cache of ``finished_run``."""
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nfst.cli",
            "run",
            "cipher",
            "--run-dir",
            str(run_dir),
            "--cache-dir",
            str(finished_run[0].cache_dir),
            "--quiet",
            "--processes",
            "1",
            "--jobs",
            "2",
            "--samplers",
            "swa,swp,nolookahead",
            *tiny_options("scorer.kind=ngram", "sampler.steps=100000", "sampler.patience=100000"),
        ],
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    started = [run_dir / "checkpoints" / f"{n}.ckpt" for n in ("swa", "swp", "nolookahead")]
    deadline = time.time() + 120
    while sum(c.exists() for c in started) < 2 and time.time() < deadline:
        time.sleep(0.05)
    if whom == "group":
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=60)
    finally:  # it kept training: stop it and its workers
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signum, err
    assert "interrupted" in err
    assert sum(c.exists() for c in started) == 2 and not (run_dir / "samplers").exists()


def test_the_compile_stage_records_which_pairs_it_skipped_and_why(
    finished_run, tmp_path, monkeypatch
):
    """The report says so (it was a console warning only): a test pair with a symbol the
    cipher's alphabets lack is skipped, counted and explained."""
    done = finished_run[0]
    run = Run(done.config, tmp_path / "run", cache_dir=done.cache_dir, quiet=True, processes=1)
    pairs = run.pairs
    monkeypatch.setattr(
        run, "pairs", lambda split: pairs(split) + [(("Q",), ("a",))] * (split == "test")
    )
    record = run.stage_compile()
    assert record["test"]["skipped"] == 1 and record["test"]["pairs"] == len(pairs("test"))
    assert "['Q'] not in the MFST's input alphabet" in record["test"]["skipped_why"]
    assert "skipped_why" not in record["train"]


def test_triples_are_drawn_as_the_sleep_phase_needs_them(finished_run, tmp_path, monkeypatch):
    """A sleep phase that ``auto`` ends after a few steps draws the blocks of triples it used
    (here of 16 triples, a step's: the tiny n-gram keeps 1 string in 100), not the cap's 3,200, every
    sampler reading them; they hold the first triples of the seed's one stream, as a single
    draw gives them."""
    monkeypatch.setattr(sampler_stage, "TRIPLE_BLOCK", 16)
    run, _ = finished_run
    sleepy = (*TINY, "scorer.kind=ngram", "sampler.sleep_steps=auto", "sampler.sleep_cap=200")
    config = tiny_config(overrides=(*sleepy, "sampler.sleep_patience=1"))
    sleeping = Run(config, tmp_path / "run", cache_dir=run.cache_dir, quiet=True, processes=1)
    sleeping.train_samplers()
    assert sleeping.preset.sampler.triples_needed() == 3200  # 200 steps of 16
    used = max(sleeping.done(f"sampler-{n}")["sleep"]["steps"] for n in ("swa", "swp")) * 16
    blocks = used // 16
    folder = tmp_path / "run" / "triples" / "seed-0"
    assert {p.name for p in folder.iterdir()} == {f"block-{k}.pt" for k in range(blocks)}
    assert 2 <= blocks < 200
    summary = sleeping.done("triples-0")
    assert summary["triples"] == 16 * blocks
    drawn = draw_triples(
        sleeping.scorer(),
        sleeping.T,
        16 * blocks,
        seed=stream_seed(sleeping.training_seed(0), "triples"),
        max_length=sleeping.preset.sampler.sleep_max_length,
    )
    read = [t for k in range(blocks) for t in storage.load(folder / f"block-{k}.pt")["triples"]]
    assert read == drawn.triples
    assert {k: summary[k] for k in drawn.summary()} == drawn.summary()
    # and training read them in order: SWA trained again on the one draw's list, the same
    swa = train_sampler(
        sleeping.untrained_sampler("swa").train(),
        sleeping.scorer(),
        sleeping.lattices("train"),
        sleeping.lattices("dev"),
        sleeping.preset.sampler,
        seed=sleeping.training_seed(0),
        quiet=True,
        triples=TripleFeed(sleeping.T, drawn.triples),
    )
    assert swa.history == sleeping.done("sampler-swa")["history"]


def test_a_sleep_shorter_than_a_block_draws_what_it_needs_and_a_longer_one_draws_on(
    finished_run, tmp_path, monkeypatch
):
    """Blocks of 24 triples, a fixed sleep of 2 steps of 16: block 1 holds the 8 the run
    needs, not 24. Asked for 3 steps' triples (a larger budget), block 1 is drawn on to 24:
    the two blocks hold the first 48 triples of one draw."""
    monkeypatch.setattr(sampler_stage, "TRIPLE_BLOCK", 24)
    run, _ = finished_run
    sleepy = (*TINY, "scorer.kind=ngram", "sampler.sleep_steps=2")
    config = tiny_config(samplers=("swa",), overrides=sleepy)
    sleeping = Run(config, tmp_path / "run", cache_dir=run.cache_dir, quiet=True, processes=1)
    sleeping.train_samplers()
    folder = tmp_path / "run" / "triples" / "seed-0"
    assert [len(storage.load(folder / f"block-{k}.pt")["triples"]) for k in (0, 1)] == [24, 8]
    assert not (folder / "block-2.pt").exists()
    longer = dataclasses.replace(sleeping.preset.sampler, sleep_steps=3)
    sleeping.preset = dataclasses.replace(sleeping.preset, sampler=longer)
    read = sleeping._triple_block(0, 0) + sleeping._triple_block(0, 1)
    drawn = draw_triples(
        sleeping.scorer(),
        sleeping.T,
        48,
        seed=stream_seed(sleeping.training_seed(0), "triples"),
        max_length=longer.sleep_max_length,
    )
    assert read == drawn.triples
    assert sleeping.done("triples-0")["triples"] == 48
