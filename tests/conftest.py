"""Fixtures shared by the whole suite, and the suite's thread policy.

Every test runs single-threaded: the tensors are tiny, and on a busy machine intra-op threads
spin against each other and against other processes (the suite took 6x as long beside one
CPU-bound process). The environment variables are set before torch is imported, so that
subprocesses (the command line, compile workers, distributed workers) inherit them.
"""

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU"))])
def device(request) -> torch.device:
    """Each test that takes it runs on the CPU and, when one is present, on a GPU (reported
    as skipped where there is none)."""
    return torch.empty(0, device=request.param).device  # with its index, as tensors report it
