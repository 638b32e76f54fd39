"""Training seeds (``--seeds``), the reference chosen on validation pairs, and held-out pairs
that never validate."""

import dataclasses
import json
import shutil

import pytest
import torch

from nfst.experiment.config import RunConfig, training_seed, upgraded
from nfst.experiment.run import Run
from nfst.runtime import storage
from tests.helpers.tasks import write_fixture


def test_seeds_train_again_evaluate_on_the_same_pairs_and_leave_seed_0_alone(
    finished_run, tmp_path
):
    run, _ = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run.dir, copy)
    one = Run.open(copy, cache_dir=run.cache_dir, quiet=True, processes=1)
    two = Run(
        dataclasses.replace(one.config, seeds=2),
        copy,
        cache_dir=run.cache_dir,
        quiet=True,
        processes=1,
    )
    alone = one.done("evaluate")["samplers"]  # the evaluation with one seed
    two.train_samplers()
    for name in two.config.samplers:  # seed 0 is the run of one seed, untouched
        assert two.done(f"sampler-{name}") == one.done(f"sampler-{name}")
        a, b = (
            storage.load(copy / "samplers" / f)["state"] for f in (f"{name}.pt", f"{name}-seed1.pt")
        )
        assert any(not torch.equal(a[k], b[k]) for k in a)  # another initialisation
    result = two.evaluation()
    assert result["seeds"] == [0, 1]
    validation = {}
    assert set(result["samplers"]) == set(two.config.samplers)
    for name, m in result["samplers"].items():
        assert (
            len(m["partial_kl_by_seed"]) == 2
            and m["partial_kl_by_seed"][0] != m["partial_kl_by_seed"][1]
        )
        assert [len(p) for p in m["per_pair_partial_kl_by_seed"]] == [result["pairs"]] * 2
        assert m["partial_kl"] == pytest.approx(sum(m["partial_kl_by_seed"]) / 2)
        validation[name] = m["validation_partial_kl"]
    assert result["reference"] == min(validation, key=validation.get)
    assert result["samplers"][result["reference"]]["gap"]["mean"] == 0.0
    # seed 0's test figures are those of the evaluation with one seed
    for name, m in result["samplers"].items():
        assert m["per_pair_partial_kl_by_seed"][0] == alone[name]["per_pair_partial_kl"]
        assert m["partial_kl_by_seed"][0] == pytest.approx(alone[name]["partial_kl"], abs=1e-9)
        assert m["validation_partial_kl_by_seed"][0] == alone[name]["validation_partial_kl"]


def test_smc_takes_the_reference_chosen_on_validation_not_the_best_on_test(finished_run, tmp_path):
    run, _ = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run.dir, copy)
    evaluation = json.loads((copy / "stages" / "evaluate.json").read_text())
    worst_on_test = max(
        evaluation["samplers"], key=lambda s: evaluation["samplers"][s]["partial_kl"]
    )
    evaluation["reference"] = worst_on_test  # as if validation had chosen it
    (copy / "stages" / "evaluate.json").write_text(json.dumps(evaluation))
    (copy / "stages" / "smc.json").unlink()
    again = Run.open(copy, cache_dir=run.cache_dir, quiet=True, processes=1)
    assert again.smoothing()["sampler"] == worst_on_test


DEV = [
    f"{w}\t{r}\t1"
    for w, r in [
        ("دل", "dil"),
        ("کام", "kam"),
        ("سلام", "salam"),
        ("کتاب", "kitab"),
        ("پانی", "pani"),
        ("دم", "dam"),
    ]
]


def test_without_a_test_file_the_test_pairs_are_dev_pairs_that_never_validate(tmp_path):
    """tr's shared data has no test file: at every preset, dev_pairs set (large) or not
    (paper: half of dev validates), the test pairs are dev pairs disjoint from validation."""
    root = write_fixture(tmp_path / "data", dev=DEV)
    for preset, overrides, held in (("paper", (), 3), ("large", ("dev_pairs=2",), 2)):
        run = Run(
            RunConfig(task="tr", preset=preset, samplers=("swa",), overrides=overrides),
            tmp_path / preset,
            data_dir=root,
            cache_dir=tmp_path / "cache",
            quiet=True,
            processes=1,
        )
        dev, test = run.pairs("dev"), run.pairs("test")
        assert len(dev) == held and not set(dev) & set(test)
        assert len(dev) + len(test) == len(DEV)
        assert [(tuple(lat.x), tuple(lat.y)) for lat in run.lattices("test")] == test[:]


def test_training_seeds_are_hashed_so_runs_of_other_seeds_share_none():
    """Run seed s, training seed j ≥ 1 is the hash of (s, j), not s + j: the run of seed 1
    would otherwise retrain run 0's second seed. Runs recorded before keep seed + j."""
    seeds = {s: [training_seed(s, j) for j in range(5)] for s in range(4)}
    assert [row[0] for row in seeds.values()] == [0, 1, 2, 3]  # j = 0: the run's own seed
    every = [x for row in seeds.values() for x in row]
    assert len(set(every)) == len(every) == 20
    assert training_seed(7, 2, "consecutive") == 9
    old = upgraded({"run": {"task": "cipher", "seed": 7}})
    assert RunConfig(**old["run"]).seeding == "consecutive"
    assert RunConfig().seeding == "hashed"


def test_a_run_trains_its_seeds_from_the_hashed_training_seeds(finished_run):
    run, _ = finished_run
    assert run.config.seeding == "hashed"
    assert run.training_seed(0) == run.config.seed
    assert run.training_seed(1) == training_seed(run.config.seed, 1) != run.config.seed + 1
