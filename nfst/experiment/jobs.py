"""The sampler stage in parallel worker processes (``nfst run --jobs N``).

Each sampler trains on its own against the same frozen scorer, so the samplers of a run are
independent jobs. A worker process opens the run directory (its recorded settings, its
``scorer.pt``, the lattice cache) and trains one sampler exactly as the sequential stage would:
the same seed, the same initialisation, the same intra-op thread count, hence the same figures
to the last digit. Workers are spawned (not forked: torch's threads do not survive a fork) and
report a line per validation instead of a progress bar, which several processes would garble
(none under ``--quiet``).
On a host with several GPUs, each worker takes one, in turn
(``nfst.runtime.devices.worker_device``).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Optional, Sequence

import torch

from ..errors import Interrupted, NfstError
from ..runtime.interrupt import exit_status, graceful_interrupts, interrupt_requested
from .rundir import sampler_key

_device: Optional[str] = None
"""In a worker process: the device its pool gave it (:func:`_start_worker`)."""


def available_cores() -> int:
    """The cores this process may run on (the default ``--jobs``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


STEP_COST = {
    "nolookahead": 1.07,
    "swp": 1.0,
    "sws": 1.17,
    "swa": 1.23,
    "swp-prefix": 1.65,
    "swp-sws": 1.65,
}
"""A training step's cost relative to SWP's on the CPU (``nfst bench step``, d 256: the mean of
four runs on an idle 2-core CPU at 721f97a), for samplers without a measured training time."""


def longest_first(run, todo: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """``todo`` ((sampler, training seed) pairs of ``run``) ordered by expected training time,
    longest first, so that the workers, taking jobs in this order, finish close together:
    a sampler's time is that of its training run already recorded for another seed (the
    longest), else its step cost (:data:`STEP_COST`) in units of the slowest recorded one."""
    measured: dict[str, float] = {}
    for name, seed in run.trainings():
        done = run.done(f"sampler-{sampler_key(name, seed)}")
        if done and done.get("seconds") is not None:
            measured[name] = max(measured.get(name, 0.0), done["seconds"])
    unit = max(measured.values(), default=1.0)

    def cost(job: tuple[str, int]) -> float:
        return measured.get(job[0], unit * STEP_COST.get(job[0], 1.0))

    return sorted(todo, key=cost, reverse=True)


def train_in_workers(run, jobs_todo: Sequence[tuple[str, int]], jobs: int) -> None:
    """Train the (sampler, training seed) pairs ``jobs_todo`` of ``run`` (an
    ``nfst.experiment.run.Run`` whose scorer stage is done), at most ``jobs`` at a time, each
    in its own process, started in the order given; worker i on device
    ``worker_device(run.device, i, GPUs present)``."""
    from ..runtime.devices import worker_device
    from ..runtime.threads import loop_threads

    where = dict(data_dir=run.data_dir, cache_dir=run.cache_dir, processes=1, quiet=True)
    context = multiprocessing.get_context("spawn")
    workers = min(jobs, len(jobs_todo))
    devices = context.SimpleQueue()  # each worker process takes one as it starts
    for worker in range(workers):
        devices.put(worker_device(str(run.device), worker, torch.cuda.device_count()))
    stop = context.Value("i", 0)  # the signal that stopped this process, for the workers
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(devices, os.getpid(), stop),
    ) as pool:
        # type(run).open (Run.open) pickles by name: the workers import it themselves
        futures = [
            pool.submit(
                _train_one,
                type(run).open,
                str(run.dir),
                name,
                seed,
                where,
                loop_threads(),
                run.quiet,
            )
            for name, seed in jobs_todo
        ]
        try:
            for future in as_completed(futures):
                future.result()  # a worker's error (or interruption) is the stage's
        except BaseException as e:  # that, or this process interrupted: start no more samplers
            lost = isinstance(e, BrokenProcessPool)  # a worker was killed: stop the others
            if isinstance(e, (KeyboardInterrupt, Interrupted)):
                stop.value = exit_status() - 128  # the workers pass it on to their samplers
            elif lost:
                stop.value = signal.SIGTERM
            pool.shutdown(cancel_futures=True)
            if lost:
                raise NfstError(
                    "a sampler's worker process was killed (by a signal, or for memory)",
                    "run the same command again: it resumes from the checkpoints; "
                    "fewer --jobs if memory ran out",
                ) from e
            raise


_interrupted = False
"""In a worker process: a signal stopped one of its samplers, so it starts no other (those
already queued to it when the stage stopped)."""

_training = False
"""In a worker process: a sampler is training."""


STUCK_SECONDS = 5
"""How long a worker of a stopping stage waits for work before it exits (:func:`_watch`)."""


def _start_worker(devices, parent: int, stop) -> None:
    """Take a device from the pool's queue and watch ``parent`` (:func:`_watch`). Between
    samplers, SIGINT and SIGTERM are the parent's to handle (``_train_one`` handles them while
    a sampler trains): a worker killed while it waits for work would die holding the lock of
    the pool's task queue, and the other workers would wait for that lock forever."""
    global _device
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)
    _device = devices.get()
    threading.Thread(target=_watch, args=(parent, stop), daemon=True).start()


def _watch(parent: int, stop) -> None:
    """Once a signal has stopped ``parent`` (``stop.value``, its number), pass it on to the
    sampler training here, unless it came here too (Ctrl-C signals the whole process group;
    ``kill PID`` the parent alone, which would otherwise wait for every running
    sampler to train to its end). Exit once ``parent`` is gone: a parent killed by SIGKILL
    cleans nothing up, and a spawned worker holds both ends of the pool's task queue, so it
    would wait for work forever. Exit too once the stage is stopping (or this worker's sampler
    was stopped) and it has waited for work :data:`STUCK_SECONDS`: a pool shuts its workers
    down within a second, so one still here waits on the lock of a worker killed by SIGKILL.
    (Its checkpoints are whole: the same command run again resumes.)"""
    waited = 0
    while os.getppid() == parent and waited < STUCK_SECONDS:
        time.sleep(1.0)
        if stop.value and _training and not interrupt_requested():
            os.kill(os.getpid(), stop.value)
        waited = waited + 1 if (stop.value or _interrupted) and not _training else 0
    os._exit(1)


def _train_one(
    open_run: Callable, run_dir: str, name: str, seed: int, where: dict, threads: int, quiet: bool
) -> None:
    global _interrupted, _training
    from ..runtime.threads import set_threads

    if _interrupted:
        raise Interrupted(f"{sampler_key(name, seed)} not started: the stage was interrupted")
    set_threads(threads)
    with graceful_interrupts():
        run = open_run(run_dir, device=_device, **where)

        def report(step: int, record: dict) -> None:
            if "dev_partial_kl" in record and not quiet:
                print(
                    f"[{run.config.task}] sampler {sampler_key(name, seed)} step {step}: "
                    f"dev partial KL {record['dev_partial_kl']:.2f}",
                    flush=True,
                )

        try:
            _training = True
            run.train_sampler(name, seed, callback=report)
        except (Interrupted, KeyboardInterrupt):
            _interrupted = True
            raise
        finally:
            _training = False
