"""A whole tiny run, made once for the session and shared by the tests that read it."""

import pytest

from nfst.experiment.run import Run
from tests.experiment.tiny import TINY, tiny_config


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    """(run, report path) of a whole tiny cipher run with the n-gram as scorer (a WFST).
    Tests read it; a test that changes its directory works on a copy."""
    tmp = tmp_path_factory.mktemp("finished")
    config = tiny_config(overrides=tuple(TINY) + ("scorer.kind=ngram",))
    run = Run(config, tmp / "run", cache_dir=tmp / "cache", quiet=True, processes=1)
    return run, run.run()
