"""The schema of results.json (nfst.experiment.results), from hand-written stage files."""

import math

import pytest

from nfst.experiment.results import build_results
from nfst.experiment.rundir import RunDir


def test_the_scorers_test_log_z_is_the_mean_over_pairs(tmp_path):
    """Three pairs of 8 samples each: test log Ẑ is the mean of the three per-pair values,
    with the standard error of that mean (not a sum over the samples)."""
    run_dir = RunDir(tmp_path, {"run": {"task": "cipher", "preset": "small", "seed": 0},
                                "preset": {"scorer": {"kind": "ngram"}}})
    log_z = {"method": "importance sampling", "samples": 8, "per_pair": [-1.0, -2.0, -6.0],
             "per_pair_se": [0.1, 0.2, 0.3]}
    run_dir.finish("evaluate", {"samplers": {}, "log_z": log_z, "seeds": [0],
                                "reference": "swa", "pairs": 3, "validation_pairs": 3,
                                "structure": None})
    scorer = build_results(run_dir)["scorer"]
    assert scorer["test_log_z"] == pytest.approx(-3.0)
    assert scorer["test_log_z_se"] == pytest.approx(math.sqrt(7 / 3))  # sd √7 over √3 pairs


@pytest.mark.parametrize("stage, stopped_by", [
    ({"stopped_by": "patience"}, "patience"), ({"stopped_by": "steps"}, "steps"),
    ({"stopped_early": True}, "patience"), ({"stopped_early": False}, "steps")])
def test_what_stopped_a_samplers_training_old_stage_files_included(stage, stopped_by, tmp_path):
    """Stage files written before ``stopped_by`` was recorded say ``stopped_early``: true is
    early stopping (patience), false the step cap."""
    run_dir = RunDir(tmp_path, {"run": {"task": "cipher", "preset": "small", "seed": 0},
                                "preset": {"scorer": {"kind": "ngram"}}})
    history = [{"step": 0, "dev_partial_kl": 2.0}, {"step": 4, "dev_partial_kl": 1.5}]
    run_dir.finish("sampler-swa", {"seconds": 1.0, "best_step": 4, "history": history, **stage})
    run_dir.finish("evaluate", {"samplers": {"swa": {"partial_kl": 1.0}}, "seeds": [0],
                                "reference": "swa", "pairs": 1, "validation_pairs": 1,
                                "structure": None,
                                "log_z": {"method": "importance sampling", "per_pair": [-1.0]}})
    swa = build_results(run_dir)["samplers"]["swa"]
    assert (swa["stopped_by"], swa["steps"], swa["best_step"]) == (stopped_by, 4, 4)


def test_the_scorers_training_curve_is_carried(tmp_path):
    """The scorer stage's IWAE curve reaches results.json (the report plots it); the n-gram,
    fitted exactly, has none."""
    run_dir = RunDir(tmp_path, {"run": {"task": "cipher", "preset": "small", "seed": 0},
                                "preset": {"scorer": {"kind": "lstm"}}})
    curve = {"step": [1, 2], "iwae": [-50.0, -40.0]}
    run_dir.finish("scorer", {"train_iwae": -40.0, "curve": curve})
    run_dir.finish("evaluate", {"samplers": {}, "seeds": [0], "reference": "swa", "pairs": 1,
                                "validation_pairs": 1, "structure": None,
                                "log_z": {"method": "is", "per_pair": [-1.0]}})
    results = build_results(run_dir)
    assert results["scorer"]["curve"] == curve
    assert (results["pairs"], results["validation_pairs"], results["reference"]) == (1, 1, "swa")
