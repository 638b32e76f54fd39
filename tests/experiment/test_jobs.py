"""The sampler stage's wiring around its worker processes (``nfst run --jobs N``): each worker
computes with the parent's thread count, and a teacher is trained once, in the parent, before
the workers that learn from it start. (That workers reproduce the sequential stage exactly is
tests/experiment/test_run.py's.)"""

import json
import os
from pathlib import Path

import torch

import nfst.experiment.jobs
from nfst.experiment.jobs import train_in_workers
from nfst.experiment.run import Run
from nfst.runtime.threads import loop_threads, set_threads
from tests.experiment.tiny import TINY, tiny_config


class ThreadsSeen:
    """Stands in for a Run in a worker process: training a sampler writes down the worker's
    thread counts (torch's and the level loops'), its process and the device it was opened on
    to ``NAME-SEED.json``. It computes nothing, so it may stand on GPUs the host lacks."""

    def __init__(self, run_dir, device="cpu"):
        self.dir, self.data_dir, self.cache_dir = Path(run_dir), None, None
        self.device, self.quiet = torch.device(device), True

    @classmethod
    def open(cls, run_dir, device, **where):
        return cls(run_dir, device)

    def train_sampler(self, name: str, seed: int, callback=None) -> None:
        seen = {"torch": torch.get_num_threads(), "loops": loop_threads(),
                "process": os.getpid(), "device": str(self.device)}
        (self.dir / f"{name}-{seed}.json").write_text(json.dumps(seen))


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
    assert set(devices.values()) <= {"cuda:0", "cuda:1"}
    assert len(set(devices.values())) == len(devices)


def test_the_teacher_is_trained_before_the_workers_start(tmp_path, monkeypatch):
    """With a teacher (swp) and two training seeds, the parent trains swp for each seed, and
    only then do the workers start, on the other samplers alone: a worker finds the teacher
    trained and loads it, rather than every worker training it again on the same files."""
    config = tiny_config(samplers=("swa", "sws"), seeds=2,
                         overrides=tuple(TINY) + ("sampler.teacher=swp",))
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
    assert workers == [([("swp", 0), ("swp", 1)],
                        [("swa", 0), ("swa", 1), ("sws", 0), ("sws", 1)])]


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
