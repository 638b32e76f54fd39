"""A whole tiny run, made once for the session and shared by the tests that read it."""

import fcntl
import os
from pathlib import Path

import pytest

from nfst.experiment.run import Run
from tests.helpers.tiny import FINISHED, tiny_config


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    """(run, report path) of a whole tiny cipher run with the n-gram as scorer (a WFST), its
    samplers sleeping first as the default does (to a cap of 8 steps).
    Tests read it; a test that changes its directory works on a copy. Under pytest-xdist the
    workers share one: the first to get the lock makes it, the others open it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    tmp, made = root / "finished", root / "finished.report"
    config = tiny_config(overrides=tuple(FINISHED))
    with open(root / "finished.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run = Run(config, tmp / "run", cache_dir=tmp / "cache", quiet=True, processes=1)
        if not made.exists():
            made.write_text(str(run.run()))
    before = _files(tmp / "run")
    yield run, Path(made.read_text())
    changed = sorted(set(before.items()) ^ set(_files(tmp / "run").items()))
    assert not changed, f"a test changed the shared run (work on a copy): {changed}"


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }
