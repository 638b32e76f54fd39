"""The sampler stage in parallel worker processes (``nfst run --jobs N``).

Each sampler trains on its own against the same frozen scorer, so the samplers of a run are
independent jobs. A worker process opens the run directory (its recorded settings, its
``scorer.pt``, the lattice cache) and trains one sampler exactly as the sequential stage would:
the same seed, the same initialisation, the same intra-op thread count, hence the same figures
to the last digit. Workers are spawned (not forked: torch's threads do not survive a fork) and
report a line per validation instead of a progress bar, which several processes would garble.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Sequence


def available_cores() -> int:
    """The cores this process may run on (the default ``--jobs``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def train_in_workers(run, names: Sequence[str], jobs: int) -> None:
    """Train the samplers ``names`` of ``run`` (an ``nfst.experiment.run.Run`` whose scorer
    stage is done), at most ``jobs`` at a time, each in its own process."""
    from ..runtime.threads import loop_threads
    where = dict(data_dir=run.data_dir, cache_dir=run.cache_dir, device=str(run.device),
                 processes=1, quiet=True)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(jobs, len(names)), mp_context=context) as pool:
        # type(run).open (Run.open) pickles by name: the workers import it themselves
        futures = {pool.submit(_train_one, type(run).open, str(run.dir), name, where,
                               loop_threads()): name for name in names}
        for future in as_completed(futures):
            future.result()  # a worker's error (or interruption) is the stage's


def _train_one(open_run: Callable, run_dir: str, name: str, where: dict, threads: int) -> None:
    from ..runtime.interrupt import graceful_interrupts
    from ..runtime.threads import set_threads
    set_threads(threads)
    with graceful_interrupts():
        run = open_run(run_dir, **where)

        def report(step: int, record: dict) -> None:
            if "dev_partial_kl" in record:
                print(f"[{run.config.task}] sampler {name} step {step}: dev partial KL "
                      f"{record['dev_partial_kl']:.2f}", flush=True)
        run.sampler(name, callback=report)
