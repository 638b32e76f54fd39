"""The sampler stage's wiring around its worker processes (``nfst run --jobs N``): each worker
computes with the parent's thread count, and a teacher is trained once, in the parent, before
the workers that learn from it start; they exit when the run is killed. (That workers
reproduce the sequential stage exactly is tests/experiment/test_run.py's.)"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import nfst.experiment.jobs
from nfst.errors import Interrupted, NfstError
from nfst.experiment.jobs import train_in_workers
from nfst.experiment.run import Run
from nfst.runtime.interrupt import (
    checkpointed,
    exit_status,
    graceful_interrupts,
    interrupt_requested,
)
from nfst.runtime.threads import loop_threads, set_threads
from tests.helpers.tiny import TINY, tiny_config


class ThreadsSeen:
    """Stands in for a Run in a worker process: training a sampler writes down the worker's
    thread counts (torch's and the level loops'), its process and the device it was opened on
    to ``NAME-SEED.json``, then waits (up to a minute) for another process to do the same, so
    that two jobs run in two workers rather than one after the other in whichever started
    first. It computes nothing, so it may stand on GPUs the host lacks."""

    def __init__(self, run_dir, device="cpu"):
        self.dir, self.data_dir, self.cache_dir = Path(run_dir), None, None
        self.device, self.quiet = torch.device(device), True

    @classmethod
    def open(cls, run_dir, device, **where):
        return cls(run_dir, device)

    def train_sampler(self, name: str, seed: int, callback=None) -> None:
        seen = {
            "torch": torch.get_num_threads(),
            "loops": loop_threads(),
            "process": os.getpid(),
            "device": str(self.device),
        }
        (self.dir / f"{name}-{seed}.json").write_text(json.dumps(seen))
        (self.dir / f"process-{os.getpid()}").touch()
        deadline = time.time() + 60
        while len(list(self.dir.glob("process-*"))) < 2 and time.time() < deadline:
            time.sleep(0.05)


class QuickAndSlow(ThreadsSeen):
    """A sampler "quick" that trains at once and one "slow" that trains until a signal stops
    it, as a training loop does (a checkpointed loop polling for it); each leaves a file when
    it starts, which holds its worker's process id."""

    def train_sampler(self, name: str, seed: int, callback=None) -> None:
        (self.dir / f"started-{name}").write_text(str(os.getpid()))
        if name == "slow":
            with checkpointed():
                while not interrupt_requested():
                    time.sleep(0.05)


def _train_quick_and_slow(run_dir: str) -> int:
    """The sampler stage on QuickAndSlow's two samplers in two workers, as a command runs it:
    its exit status."""
    with graceful_interrupts():
        try:
            train_in_workers(QuickAndSlow(run_dir), [("quick", 0), ("slow", 0)], 2)
        except (KeyboardInterrupt, Interrupted):
            return exit_status()
        except NfstError:
            return 2
    return 0


def _start_quick_and_slow(run_dir: Path) -> tuple[subprocess.Popen, dict[str, int]]:
    """``_train_quick_and_slow`` in a process group of its own, once quick's worker has gone
    back to waiting for work while slow's trains: (the process, each sampler's worker)."""
    code = (
        "import sys; from tests.experiment.test_jobs import _train_quick_and_slow as t; "
        f"sys.exit(t({str(run_dir)!r}))"
    )
    root = Path(__file__).parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=root,
        env=dict(os.environ, PYTHONPATH=str(root)),
        start_new_session=True,
    )
    started = {n: run_dir / f"started-{n}" for n in ("quick", "slow")}
    deadline = time.time() + 120
    while not all(p.exists() and p.read_text() for p in started.values()):
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(1.0)  # quick's worker back to waiting for work
    return proc, {n: int(p.read_text()) for n, p in started.items()}


@pytest.mark.parametrize("signalled", ["group", "waiting worker"])
def test_a_run_stops_whatever_the_signal_reaches(tmp_path, signalled):
    """While one worker trains and the other waits for work: SIGTERM to the whole process group
    (as `timeout` or a job scheduler sends it; Ctrl-C's SIGINT likewise) stops the stage with
    143 within seconds, and SIGKILL to the waiting worker stops it with an error (status 2:
    a worker was lost). The waiting worker used to die of the group's SIGTERM holding the lock of
    the pool's task queue; the training one, once stopped, waited for that lock forever, and
    the parent for it."""
    proc, workers = _start_quick_and_slow(tmp_path)
    try:
        if signalled == "group":
            os.killpg(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        else:
            os.kill(workers["quick"], signal.SIGKILL)
            assert proc.wait(timeout=60) == 2
            assert gone(workers["slow"])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_worker_computes_with_the_parents_thread_count(tmp_path, monkeypatch):
    """3 threads in the parent: not the default of a fresh process (1 or the cores). On
    ``cuda`` with two GPUs (as the parent counts them), each worker process takes one of its
    own."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    set_threads(3)
    try:
        train_in_workers(ThreadsSeen(tmp_path, "cuda"), [("swa", 0), ("swp", 1)], 2)
    finally:
        set_threads(1)
    seen = [json.loads((tmp_path / f"{name}.json").read_text()) for name in ("swa-0", "swp-1")]
    assert all((s["torch"], s["loops"]) == (3, 3) for s in seen)
    devices = {s["process"]: s["device"] for s in seen}
    assert sorted(devices.values()) == ["cuda:0", "cuda:1"]  # two workers, a GPU each


def test_the_teacher_is_trained_before_the_workers_start(tmp_path, monkeypatch):
    """With a teacher (swp) and two training seeds, the parent trains swp for each seed, and
    only then do the workers start, on the other samplers alone: a worker finds the teacher
    trained and loads it, rather than every worker training it again on the same files."""
    config = tiny_config(
        samplers=("swa", "sws"), seeds=2, overrides=tuple(TINY) + ("sampler.teacher=swp",)
    )
    run = Run(config, tmp_path / "run", quiet=True, jobs=2)
    trained, workers = [], []

    def train_sampler(self, name, seed=0, callback=None):
        if (name, seed) not in trained:
            trained.append((name, seed))

    def train_in_workers(run, todo, jobs):
        workers.append((list(trained), sorted(todo)))
        trained.extend(todo)

    monkeypatch.setattr(Run, "is_trained", lambda self, name, seed=0: (name, seed) in trained)
    monkeypatch.setattr(Run, "train_sampler", train_sampler)
    monkeypatch.setattr(nfst.experiment.jobs, "train_in_workers", train_in_workers)
    run.train_samplers()
    assert workers == [([("swp", 0), ("swp", 1)], [("swa", 0), ("swa", 1), ("sws", 0), ("sws", 1)])]


class _Recorded:
    """A run with some training times recorded (stage files of seed 0)."""

    def __init__(self, seconds: dict):
        self.seconds = seconds

    def trainings(self):
        return [(name, s) for s in range(2) for name in ("swa", "swp", "swp-prefix", "sws")]

    def done(self, stage: str):
        name = stage.removeprefix("sampler-")
        return {"seconds": self.seconds[name]} if name in self.seconds else None


def test_the_longest_trainings_start_first():
    from nfst.experiment.jobs import longest_first

    todo = [("swa", 1), ("swp", 1), ("swp-prefix", 1), ("sws", 1)]
    # nothing recorded: by step cost, swp-prefix's the dearest, then SWA's
    assert [n for n, _ in longest_first(_Recorded({}), todo)][:2] == ["swp-prefix", "swa"]
    # seed 0's recorded times decide: SWS took longest there
    recorded = _Recorded({"swa": 50.0, "swp": 10.0, "swp-prefix": 60.0, "sws": 90.0})
    assert [n for n, _ in longest_first(recorded, todo)] == ["sws", "swp-prefix", "swa", "swp"]


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody has reaped yet."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def descendants(pid: int) -> set[int]:
    """The processes below ``pid`` (read from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError):
            continue
    below, todo = set(), [pid]
    while todo:
        p = todo.pop()
        children = {c for c, parent in parents.items() if parent == p}
        below |= children
        todo += children
    return below


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads processes from /proc (Linux)")
def test_the_workers_exit_when_the_run_is_killed(finished_run, tmp_path):
    """SIGKILL (nothing cleaned up) to `nfst run --jobs 2` while both workers train (on the
    finished run's scorer): every process below it (the workers, multiprocessing's resource
    tracker) exits within seconds; the workers waited for work forever."""
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nfst.cli",
            "run",
            "--from",
            str(finished_run[0].dir),
            "--run-dir",
            str(run_dir),
            "--quiet",
            "--processes",
            "1",
            "--jobs",
            "2",
            "--option",
            "sampler.steps=100000",
            "--option",
            "sampler.patience=100000",
        ],
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = [run_dir / "checkpoints" / f"{n}.ckpt" for n in ("swa", "swp")]
    below: set[int] = set()
    try:
        deadline = time.time() + 120
        while not all(c.exists() for c in started) and time.time() < deadline:
            time.sleep(0.05)
        below = descendants(proc.pid)
        assert all(c.exists() for c in started) and len(below) >= 2, below
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.time() + 15
        while not all(map(gone, below)) and time.time() < deadline:
            time.sleep(0.1)
        assert all(map(gone, below)), [p for p in below if not gone(p)]
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in below:
            if not gone(p):
                os.kill(p, signal.SIGKILL)
