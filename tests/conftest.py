"""Fixtures shared by the whole suite."""

import pytest
import torch


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU"))])
def device(request) -> torch.device:
    """Each test that takes it runs on the CPU and, when one is present, on a GPU (reported
    as skipped where there is none)."""
    return torch.empty(0, device=request.param).device  # with its index, as tensors report it
