"""Fixtures shared by the whole suite, the suite's thread policy, and its Hypothesis profiles.

Every test runs single-threaded: the tensors are tiny, and on a busy machine intra-op threads
spin against each other and against other processes (the suite took 6x as long beside one
CPU-bound process). The environment variables are set before torch is imported, so that
subprocesses (the command line, compile workers, distributed workers) inherit them.

Hypothesis profiles (docs/install.md, "The test suite"): ``ci``, chosen when CI=true, draws the
same examples on every run and keeps no database, so CI cannot fail by chance or replay a
failure found elsewhere; ``dev``, the default, draws fresh examples each run and replays
failures from .hypothesis/; ``thorough`` (HYPOTHESIS_PROFILE=thorough) draws 10x as many.
HYPOTHESIS_PROFILE names any of them and wins over CI.
"""

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

torch.set_num_threads(1)

# Each profile from Hypothesis's defaults (not the "ci" it loads by itself where CI is set).
# Timing is the one thing derandomize leaves to chance: no deadline, no too_slow check.
_base = settings.get_profile("default")
settings.register_profile(
    "ci",
    _base,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", _base, deadline=None)
settings.register_profile("thorough", _base, max_examples=1000, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE")
    or ("ci" if os.environ.get("CI", "").lower() == "true" else "dev")
)


def pytest_collection_modifyitems(items):
    """The documentation pages' tests first: the longest file, so that with two workers (make
    test) the other takes the rest beside it rather than after it. A test's own @settings may
    not undo the profile's derandomize or database."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/test_docs.py"))  # stable
    profile = settings.default
    for item in items:
        own = getattr(getattr(item, "obj", None), "_hypothesis_internal_use_settings", None)
        if own is not None and (own.derandomize, own.database) != (
            profile.derandomize,
            profile.database,
        ):
            raise pytest.UsageError(
                f"{item.nodeid}: its @settings set derandomize or database; "
                "the Hypothesis profile decides them (tests/conftest.py)"
            )


@pytest.fixture(
    params=[
        "cpu",
        pytest.param(
            "cuda",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
        ),
    ]
)
def device(request) -> torch.device:
    """Each test that takes it runs on the CPU and, when one is present, on a GPU (reported
    as skipped where there is none)."""
    return torch.empty(0, device=request.param).device  # with its index, as tensors report it
