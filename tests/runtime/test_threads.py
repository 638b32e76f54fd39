"""Thread counts: `--threads N` reaches the level loops (they run inside cpu_threads)."""

import torch

from nfst.runtime.threads import cpu_threads, loop_threads, set_threads


def test_set_threads_reaches_the_level_loops():
    before, before_loops = torch.get_num_threads(), loop_threads()
    try:
        set_threads(2)
        with cpu_threads(torch.device("cpu")):
            assert torch.get_num_threads() == 2
        set_threads(1)
        with cpu_threads(torch.device("cpu")):
            assert torch.get_num_threads() == 1
        assert loop_threads() == 1
    finally:
        set_threads(before_loops)
        torch.set_num_threads(before)
