"""The seeds a run's code really gives its generators (recorded from ``torch.manual_seed`` and
``torch.Generator.manual_seed`` while it runs) are those of the streams its phase owns, as
``nfst.runtime.distributed`` lists them (tests/helpers/seeds.py's ``run_streams``,
which checks that no two streams share a seed): a sampler's initialisation, its training and
its validation for early stopping, the scorer's training, the evaluation's validation, test
and log Ẑ draws (both stages of an adaptive log Ẑ) and the SMC evaluation's, each of every
training seed, draw from seeds of their own."""

from types import SimpleNamespace

import pytest
import torch

import nfst
from nfst.evaluate.smc import SMCEvalConfig, evaluate_smc
from nfst.experiment.config import training_seed
from nfst.experiment.sampler_stage import RunSamplers
from nfst.models.samplers import SamplerConfig, make_sampler
from nfst.runtime.distributed import stream_seed
from nfst.train.ngram import fit_ngram
from nfst.train.sampler import SamplerTrainConfig, train_sampler
from nfst.train.scorer import ScorerConfig, train_scorer
from tests.helpers.lattices import del_ins_lattices, small_batch, vocabulary_of
from tests.helpers.scorers import random_bigram
from tests.helpers.seeds import run_streams

SEED = 3  # the run's seed: training seeds 3 and 4


class Samplers(RunSamplers):
    """The sampler stage's seeding of a new sampler, without a run directory."""

    def __init__(self, lattices):
        self.config, self.device, self.lattices_ = (
            SimpleNamespace(seed=SEED, seeding="hashed"),
            "cpu",
            lattices,
        )

    def new_sampler(self, name):
        return make_sampler(name, vocabulary_of(self.lattices_), SamplerConfig(d=8, dropout=0.1))


@pytest.fixture
def recorder(monkeypatch):
    """``record(fn)``: the seeds given to torch's generators while ``fn()`` runs."""
    seeds: list[int] = []
    manual_seed = torch.manual_seed

    class Generator(torch.Generator):
        def manual_seed(self, seed):
            seeds.append(int(seed))
            return super().manual_seed(seed)

    monkeypatch.setattr(torch, "Generator", Generator)
    monkeypatch.setattr(
        torch, "manual_seed", lambda seed: (seeds.append(int(seed)), manual_seed(seed))[1]
    )

    def record(fn) -> set[int]:
        start = len(seeds)
        fn()
        return set(seeds[start:])

    return record


def owned(named: dict[int, str], *owners: str) -> set[int]:
    """The seeds of the streams whose names start with one of ``owners``."""
    return {seed for seed, what in named.items() if what.startswith(owners)}


def test_each_phase_draws_from_its_own_streams(recorder):
    lats = del_ins_lattices()
    scorer = random_bigram(lats, seed=1)
    stage = Samplers(lats)
    config = SamplerTrainConfig(
        sampler=SamplerConfig(d=8, dropout=0.1),
        lr=0.01,
        steps=2,
        batch_size=2,
        k=4,
        eval_every=1,
        eval_k=4,
    )
    named = run_streams(SEED, seeds=2, minibatches=4, ranks=1, particles=(2, 3), runs=1)
    trained, used, owners = [], {}, {}

    def train(seed: int) -> None:
        t = stage.training_seed(seed)
        trained.append(
            {
                name: train_sampler(
                    stage.untrained_sampler(name, seed).train(),
                    scorer,
                    lats,
                    lats,
                    config,
                    seed=t,
                    quiet=True,
                ).sampler
                for name in ("swa", "swp")
            }
        )

    for seed in (0, 1):
        t = stage.training_seed(seed)
        phase = f"training seed {t}"
        used[phase] = recorder(lambda seed=seed: train(seed))
        owners[phase] = tuple(f"{phase}: {s}" for s in ("init", "train", "early_stopping"))
        for stream in owners[phase]:  # each of them drew
            assert used[phase] & owned(named, stream), stream
    scorer_config = ScorerConfig(hidden=8, layers=1, dropout=0.1, steps=1, batch_size=2, K=4)
    ngram = fit_ngram(lats, scorer_config.ngram, quiet=True).scorer  # exact: draws nothing
    used["scorer"] = recorder(
        lambda: train_scorer(
            lats,
            scorer_config,
            vocabulary=vocabulary_of(lats),
            ngram=ngram,
            quiet=True,
            seed=stream_seed(SEED, "scorer"),
        )
    )  # as the run trains it
    untrained = {name: stage.untrained_sampler(name) for name in ("swa", "swp")}
    used["evaluation"] = recorder(
        lambda: nfst.evaluate_all(
            trained,
            scorer,
            lats,
            lats[:2],
            untrained=untrained,
            training_seeds=[SEED, training_seed(SEED, 1)],
            k=4,
            log_z_samples=24,
            log_z_max_samples=48,
            quiet=True,
        )
    )
    owners["evaluation"] = tuple(
        f"training seed {t}: {s}"
        for t in (SEED, training_seed(SEED, 1))
        for s in ("validation", "test", "log_z")
    )
    batch = small_batch()
    smc_sampler = make_sampler("swa", vocabulary_of(batch.lattices), SamplerConfig(d=8))
    smc_scorer = random_bigram(batch.lattices, seed=2)
    used["smc"] = recorder(
        lambda: evaluate_smc(
            smc_sampler,
            smc_scorer,
            batch.lattices,
            particles=(2, 3),
            runs=1,
            seed=stream_seed(SEED, "smc"),  # as the run evaluates
            config=SMCEvalConfig(lookahead_steps=2, lookahead_particles=2, abstract_fit_paths=2),
        )
    )

    for phase, seeds in used.items():
        mine = owned(named, *owners.get(phase, (phase,)))
        assert seeds and seeds <= mine, (phase, {s: named.get(s) for s in seeds - mine})
    # log Ẑ's first draw and its fresh second one (every pair light: 3, 3 and 1 paths, no k̂)
    stages = {named[s] for s in used["evaluation"] if "log_z" in named[s]}
    assert {f"training seed {SEED}: log_z ({stage}, 0)" for stage in (0, 1)} <= stages
