"""A run directory's bookkeeping: the settings it was made with (``config.json``), where it reads
its data and caches its lattices (``where.json``), its finished stages (``stages/NAME.json``,
each written atomically; ``stages/NAME.clock``: the seconds spent on one not yet done), the
locks that let processes share a run (``locks/``) and, under torchrun, the barriers that keep
the ranks in step around them.

A directory is claimed (``config.json`` written) by the first stage about to write into it, once
that stage's inputs have loaded: a command that fails on its data leaves nothing behind, and
the next command may use the directory with other settings. Once claimed, a run with other
settings is refused, so results never mix. ``where.json`` is not a setting: the same data may
move, and the last command's paths are recorded, for the next command to find.

Several processes may work on one run at once (``nfst train-sampler`` processes, a cluster's
array jobs on a shared file system): each stage has its own record, a process records the
run's settings under a lock (``records``), reading the record again, and a stage that trains
a model does it under that model's lock (:meth:`RunDir.lock`), so one process trains it and
the others, once it is trained, load it.
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Iterator, Optional

import torch

from ..errors import RunConfigError
from ..runtime import storage
from ..runtime.distributed import rank_and_world
from ..runtime.locks import file_lock
from .config import agrees, upgraded
from .provenance import MADE_FROM

WHERE = "where.json"


def recorded_where(path: str | Path) -> dict:
    """Where the run in ``path`` last read its data and cached its lattices (``where.json``):
    ``{"data_dir": ..., "cache_dir": ...}``, absolute paths or None; ``{}`` where nothing is
    recorded (a run made before nfst recorded it)."""
    file = Path(path) / WHERE
    return json.loads(file.read_text()) if file.exists() else {}


def sampler_key(name: str, seed: int = 0) -> str:
    """The name under which a sampler's ``seed``-th training run is stored: its own name for
    seed 0 (a run without ``--seeds``), ``NAME-seedS`` after it."""
    return name if seed == 0 else f"{name}-seed{seed}"


class RunDir:
    """The files of one run that record what it is and what it has done.

    ``settings``: everything that determines the results (``Run.settings()``), as JSON-ready
    data; ``where``: where the run reads its data (:func:`recorded_where`), recorded beside
    them; ``made_from``: what the run is made from (``nfst.experiment.provenance``), recorded
    once, where it is not yet. Under torchrun every rank holds a RunDir of the same directory;
    rank 0 writes."""

    def __init__(
        self,
        path: str | Path,
        settings: dict,
        where: Optional[dict] = None,
        made_from: Optional[Callable[[], dict]] = None,
    ):
        self.path = Path(path)
        self.settings, self.where, self.made_from = settings, where, made_from
        self._where_recorded = where is None
        self.joins: tuple[str, ...] = ()
        self.rank, self.world = rank_and_world()
        self._check_place()
        self._claimed = self._check()

    @property
    def config_file(self) -> Path:
        return self.path / "config.json"

    def _check_place(self) -> None:
        """Refuse a path where no folder can be made: a file there, or in place of a folder
        above it (before any stage runs, rather than once the first one has finished)."""
        for folder in (self.path, *self.path.parents):
            if folder.exists():
                if not folder.is_dir():
                    where = "" if folder == self.path else f"{folder} is "
                    raise RunConfigError(
                        f"{self.path}: {where}a file, not a folder, so no run "
                        "directory can go there",
                        "give --run-dir a folder (it is made if missing)",
                    )
                return

    def _check(self) -> bool:
        """Refuse a directory whose run has other settings; True when ``config.json`` already
        records these exactly. The samplers to compare are not a setting of the run (each
        trains on its own against the same scorer), nor is the number of training seeds: the
        last command's are recorded, so `nfst train-scorer` then `nfst run` share a run, and
        `--seeds 3` adds seeds to a run of one."""
        if not self.config_file.exists():
            return False
        old = upgraded(json.loads(self.config_file.read_text()))
        mine = json.loads(json.dumps(self.settings))  # a copy to drop the samplers from
        same_samplers = all(
            old.get("run", {}).get(key, 1 if key == "seeds" else None) == mine["run"][key]
            for key in ("samplers", "seeds")
        )
        for settings in (old, mine):
            settings.get("run", {}).pop("samplers", None)
            settings.get("run", {}).pop("seeds", None)
        if not agrees(old, mine):
            raise RunConfigError(
                f"{self.path} holds a run with other settings (see {self.config_file})"
            )
        return same_samplers

    def join(self, sampler: str) -> None:
        """Record ``sampler`` among the run's samplers as the record stands when the run is
        claimed (``nfst train-sampler``'s): of processes that each add one at once, none
        drops another's."""
        self.joins += (sampler,)

    def lock(self, name: str):
        """A context that holds the run's lock ``name`` (``locks/NAME.lock``,
        ``nfst.runtime.locks``): processes that share the run take turns. None under
        torchrun, whose ranks are one job that moves in step (and would wait for each other,
        at the lock and at the next barrier)."""
        if self.world > 1:
            return nullcontext()
        return file_lock(self.path / "locks" / f"{name}.lock")

    def claim(self) -> None:
        """Record the settings in ``config.json``, ``where`` in ``where.json`` and what the run
        is made from in ``made_from.json`` where it is not yet (once each);
        a stage calls this before it first writes into the directory. Under the run's lock
        ``records``, and checked again against the record as it stands then (another process
        may have recorded the run meanwhile), with the samplers joined (:meth:`join`) added
        to the recorded ones; atomic, so another rank reading them sees all or nothing."""
        if not self._claimed:
            self._claimed = True
            if self.rank == 0:
                with self.lock("records"):
                    self._record()
        if not self._where_recorded:
            self._where_recorded = True
            if self.rank == 0 and recorded_where(self.path) != self.where:
                storage.write_atomically(
                    self.path / WHERE, json.dumps(self.where, indent=1).encode()
                )
        if self.made_from is not None:
            made_from, self.made_from = self.made_from, None
            if self.rank == 0 and not (self.path / MADE_FROM).exists():
                storage.write_atomically(
                    self.path / MADE_FROM, json.dumps(made_from(), indent=1).encode()
                )

    def _record(self) -> None:
        if self.joins and self.config_file.exists():
            recorded = json.loads(self.config_file.read_text())["run"].get("samplers", [])
            self.settings["run"]["samplers"] = recorded + [
                s for s in self.joins if s not in recorded
            ]
        if not self._check():
            text = json.dumps(self.settings, indent=1)
            storage.write_atomically(self.config_file, text.encode())

    def barrier(self) -> None:
        """Under torchrun: wait until every rank is here."""
        if self.world > 1:
            torch.distributed.barrier()

    def stage_file(self, name: str) -> Path:
        return self.path / "stages" / f"{name}.json"

    def done(self, name: str) -> Optional[dict]:
        """The result of stage ``name`` if it has finished, else None."""
        path = self.stage_file(name)
        return json.loads(path.read_text()) if path.exists() else None

    def finish(self, name: str, result: dict) -> dict:
        """Record a finished stage; under torchrun rank 0 writes, once every rank has finished
        it (so no rank finds it done before deciding to run it)."""
        self.claim()
        self.barrier()
        if self.rank == 0:
            storage.write_atomically(self.stage_file(name), json.dumps(result, indent=1).encode())
        self.barrier()
        return result

    @contextmanager
    def clock(self, name: str, every: float = 30.0) -> Iterator[Callable[[], dict]]:
        """Time stage ``name`` over every command that works on it, for a stage that an
        interrupted command leaves half done and the next resumes: yields a function giving
        ``{"seconds": ..., "commands": ...}``, this command's wall seconds plus those that
        earlier ones recorded in ``stages/NAME.clock``. Rank 0 rewrites that file every
        ``every`` seconds while the stage runs (a killed command loses at most that much) and
        as it leaves the stage unfinished; it removes it once the stage is done."""
        file = self.path / "stages" / f"{name}.clock"
        earlier = json.loads(file.read_text()) if file.exists() else {}
        started = time.monotonic()

        def so_far() -> dict:
            return {
                "seconds": earlier.get("seconds", 0.0) + time.monotonic() - started,
                "commands": earlier.get("commands", 0) + 1,
            }

        def record() -> None:
            storage.write_atomically(file, json.dumps(so_far()).encode())

        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(every):
                record()

        ticker = threading.Thread(target=tick, daemon=True) if self.rank == 0 else None
        if ticker is not None:
            ticker.start()
        try:
            yield so_far
        finally:
            stop.set()
            if ticker is not None:
                ticker.join()
                if self.done(name) is None:  # left half done, by an error or an interruption
                    record()
                else:
                    file.unlink(missing_ok=True)

    def forget(self, name: str) -> None:
        """Delete the result of stage ``name`` (it must run again)."""
        self.stage_file(name).unlink(missing_ok=True)
