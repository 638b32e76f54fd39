"""Placing a command's worker processes (``--jobs N``) on the GPUs of a host."""

from nfst.runtime.devices import worker_device


def test_workers_spread_over_the_gpus_in_turn():
    """Worker i on cuda:(i mod G): three workers on two GPUs, five on four."""
    assert [worker_device("cuda", i, 2) for i in range(3)] == ["cuda:0", "cuda:1", "cuda:0"]
    assert [worker_device("cuda", i, 4) for i in range(5)] == [
        "cuda:0",
        "cuda:1",
        "cuda:2",
        "cuda:3",
        "cuda:0",
    ]


def test_a_device_named_with_its_index_and_the_cpu_are_every_workers():
    assert [worker_device("cuda:1", i, 2) for i in range(3)] == ["cuda:1"] * 3
    assert [worker_device("cpu", i, 2) for i in range(3)] == ["cpu"] * 3
    assert worker_device("cpu", 1, 0) == "cpu"
