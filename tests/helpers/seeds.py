"""Every seed of a run's random streams, listed (``nfst.runtime.distributed``)."""

from nfst.experiment.config import training_seed
from nfst.runtime.distributed import item_seed, stream_seed


def run_streams(
    seed: int,
    seeds: int = 3,
    minibatches: int = 100,
    ranks: int = 4,
    smc_methods: int = 12,
    particles=(1, 2, 3, 4, 8, 16, 32, 64, 128),
    runs: int = 3,
) -> dict[int, str]:
    """Every seed a run of ``seed`` with ``seeds`` training runs gives a generator (the module
    docstring's list), each with what it seeds, up to ``minibatches`` per stream; an error if
    two coincide."""
    named: dict[int, str] = {}

    def add(value: int, what: str) -> None:
        assert value not in named, f"{what} has the seed of {named[value]}"
        named[value] = what

    def training(t: int, who: str) -> None:
        add(stream_seed(t, "init"), f"{who}: init")
        add(stream_seed(t, "train"), f"{who}: train")
        for rank in range(ranks):
            add(stream_seed(t, "train", rank), f"{who}: train rank {rank}")

    def items(stream: int, what: str, *prefix: int) -> None:
        for i in range(minibatches):
            add(item_seed(stream, *prefix, i), f"{what} {(*prefix, i)}")

    training(stream_seed(seed, "scorer"), "scorer")
    for t in (training_seed(seed, j) for j in range(seeds)):
        training(t, f"training seed {t}")
        for name in ("early_stopping", "validation", "test"):
            items(stream_seed(t, name), f"training seed {t}: {name}")
        for stage in range(3):
            items(stream_seed(t, "log_z"), f"training seed {t}: log_z", stage)
    smc = stream_seed(seed, "smc")
    add(item_seed(smc, "lookahead", "init"), "smc: lookahead init")
    add(item_seed(smc, "lookahead", "fit"), "smc: lookahead fit")
    add(item_seed(smc, "abstract"), "smc: abstract")
    for method in range(smc_methods):
        for m in particles:
            for r in range(runs):
                for i in range(10):
                    add(item_seed(smc, method, m, r, i), f"smc {(method, m, r, i)}")
    return named
