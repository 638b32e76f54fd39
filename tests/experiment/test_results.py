"""The schema of results.json (nfst.experiment.schema, built by nfst.experiment.results), from
hand-written stage files: figures carried from the stage files, the structure carried by its
name, and files of another schema version refused with a hint."""

import json
import math
from dataclasses import fields

import pytest

from nfst.errors import ReportError
from nfst.evaluate.evaluation import SamplerEvaluation
from nfst.evaluate.pareto import pareto_summary
from nfst.experiment.report import load_results
from nfst.experiment.results import build_results
from nfst.experiment.rundir import RunDir
from nfst.experiment.schema import SCHEMA_VERSION, Results, SamplerResults
from tests.experiment.constructed import SAMPLERS, constructed_results


def run_dir_of(tmp_path, kind: str = "ngram") -> RunDir:
    return RunDir(
        tmp_path,
        {
            "run": {"task": "cipher", "preset": "small", "seed": 0},
            "preset": {"scorer": {"kind": kind}},
        },
    )


def sampler_metrics(per_pair: list[float], **extra) -> dict:
    """One sampler's entry of stages/evaluate.json, as ``nfst.evaluate.evaluate_all`` writes
    it (without replacement, no WFST scorer)."""
    kl = sum(per_pair) / len(per_pair)
    return {
        "partial_kl": kl,
        "partial_kl_se": 0.5,
        "ess": 1.5,
        "ess_se": 0.1,
        "expected_length": 4.0,
        "expected_length_se": 0.2,
        "pareto_k": None,
        "pareto_k_over_threshold": 0.0,
        "pareto_k_summary": pareto_summary([], []),
        "examples": [],
        "per_pair_partial_kl": per_pair,
        "ess_wor": 2.0,
        "ess_wor_se": 0.1,
        "partial_kl_wor": kl,
        "partial_kl_wor_se": 0.5,
        "partial_kl_by_seed": [kl],
        "per_pair_partial_kl_by_seed": [per_pair],
        "validation_partial_kl": kl,
        "validation_partial_kl_by_seed": [kl],
        "gap": {"mean": 0.0, "se": 0.0},
        "untrained_partial_kl": 9.0,
        "untrained_partial_kl_se": 1.0,
        "untrained_per_pair_partial_kl": [9.0] * len(per_pair),
        "exclusive_kl_lower_bound": kl - 1.0,
        "exclusive_kl_lower_bound_se": 0.5,
        "untrained_exclusive_kl_lower_bound": 8.0,
        "untrained_exclusive_kl_lower_bound_se": 1.0,
    } | extra


def finish_evaluate(
    run_dir: RunDir,
    samplers: dict,
    per_pair_log_z: list[float],
    structure=None,
    seeds=(0,),
    **log_z,
) -> None:
    run_dir.finish(
        "evaluate",
        {
            "pairs": len(per_pair_log_z),
            "k": 8,
            "seed": 0,
            "samplers": samplers,
            "seeds": list(seeds),
            "reference": next(iter(samplers), "swa"),
            "validation_pairs": len(per_pair_log_z),
            "structure": structure,
            "ngram": {"order": 3, "test_log_likelihood": -9.0},
            "log_z": {
                "method": "importance sampling",
                "samples": 8,
                "per_pair": per_pair_log_z,
                "per_pair_se": [0.1] * len(per_pair_log_z),
                "pareto_k": pareto_summary([], []),
                "spread": 0.0,
            }
            | log_z,
        },
    )


def test_the_scorers_test_log_z_is_the_mean_over_pairs(tmp_path):
    """Three pairs of 8 samples each: test log Ẑ is the mean of the three per-pair values,
    with the standard error of that mean (not a sum over the samples)."""
    run_dir = run_dir_of(tmp_path)
    finish_evaluate(run_dir, {}, [-1.0, -2.0, -6.0])
    scorer = build_results(run_dir).scorer
    assert scorer.test_log_z == pytest.approx(-3.0)
    assert scorer.test_log_z_se == pytest.approx(math.sqrt(7 / 3))  # sd √7 over √3 pairs


@pytest.mark.parametrize(
    "stage, stopped_by",
    [
        ({"stopped_by": "patience"}, "patience"),
        ({"stopped_by": "steps"}, "steps"),
        ({"stopped_early": True}, "patience"),
        ({"stopped_early": False}, "steps"),
    ],
)
def test_what_stopped_a_samplers_training_old_stage_files_included(stage, stopped_by, tmp_path):
    """Stage files written before ``stopped_by`` was recorded say ``stopped_early``: true is
    early stopping (patience), false the step cap."""
    run_dir = run_dir_of(tmp_path)
    history = [{"step": 0, "dev_partial_kl": 2.0}, {"step": 4, "dev_partial_kl": 1.5}]
    run_dir.finish("sampler-swa", {"seconds": 1.0, "best_step": 4, "history": history, **stage})
    finish_evaluate(run_dir, {"swa": sampler_metrics([1.0])}, [-1.0])
    swa = build_results(run_dir).samplers["swa"]
    assert (swa.stopped_by, swa.steps, swa.best_step) == (stopped_by, 4, 4)


def test_every_training_seeds_record_is_carried_seed_0s_also_at_the_top(tmp_path):
    """Each training seed's seconds, stopping and sleep phase come from its own stage file
    (``sampler-swa``, ``sampler-swa-seed1``), in seed order; the top-level fields stay seed
    0's."""
    run_dir = run_dir_of(tmp_path)
    for key, steps, sleep in [("swa", 4, 300), ("swa-seed1", 8, 700)]:
        run_dir.finish(
            f"sampler-{key}",
            {
                "seconds": float(steps),
                "best_step": steps,
                "steps": steps,
                "stopped_by": "patience",
                "history": [{"step": steps, "dev_partial_kl": 1.0}],
                "sleep": {"steps": sleep},
            },
        )
    finish_evaluate(run_dir, {"swa": sampler_metrics([1.0])}, [-1.0], seeds=(0, 1))
    swa = build_results(run_dir).samplers["swa"]
    assert [
        (t["steps"], t["train_seconds"], t["sleep"]["steps"]) for t in swa.training_by_seed
    ] == [
        (4, 4.0, 300),
        (8, 8.0, 700),
    ]
    assert (swa.steps, swa.sleep["steps"]) == (4, 300)


def test_the_scorers_training_curve_is_carried(tmp_path):
    """The scorer stage's IWAE curve reaches results.json (the report plots it); the n-gram,
    fitted exactly, has none."""
    run_dir = run_dir_of(tmp_path, "lstm")
    curve = {"step": [1, 2], "iwae": [-50.0, -40.0]}
    run_dir.finish("scorer", {"train_iwae": -40.0, "curve": curve})
    finish_evaluate(run_dir, {}, [-1.0])
    results = build_results(run_dir).to_json()
    assert results["scorer"]["curve"] == curve
    assert (results["pairs"], results["validation_pairs"], results["reference"]) == (1, 1, "swa")


def test_the_structures_share_is_carried_under_its_name_and_read_back(tmp_path):
    """A structure of any name: its share in results.json is under that name, for the scorer
    and each sampler, and the file reads back to the same results."""
    run_dir = run_dir_of(tmp_path)
    swa = sampler_metrics([1.0, 2.0], source_script=0.25, source_script_se=0.05)
    finish_evaluate(
        run_dir,
        {"swa": swa},
        [-1.0, -2.0],
        structure="source_script",
        source_script=0.75,
        source_script_se=0.125,
    )
    written = json.loads(json.dumps(build_results(run_dir).to_json()))
    assert written["schema_version"] == SCHEMA_VERSION
    assert (written["scorer"]["structure"], written["scorer"]["source_script"]) == (
        "source_script",
        0.75,
    )
    assert written["samplers"]["swa"]["source_script_se"] == 0.05
    assert "structure_share" not in written["samplers"]["swa"]
    assert Results.from_json(written).to_json() == written


def test_a_samplers_results_are_its_evaluation_with_every_key_and_its_training(tmp_path):
    """``SamplerResults`` is the evaluation's ``SamplerEvaluation`` (defined once) and the
    sampler's training: the stage file's entry carried value for value, its ``examples`` as
    ``proposals``, every key written (null where it does not apply, unlike the stage file)."""
    assert issubclass(SamplerResults, SamplerEvaluation)
    run_dir = run_dir_of(tmp_path)
    stage = sampler_metrics([1.0, 2.0])
    finish_evaluate(run_dir, {"swa": stage}, [-1.0, -2.0])
    written = build_results(run_dir).to_json()["samplers"]["swa"]
    assert {k: written.get("proposals" if k == "examples" else k) for k in stage} == stage
    assert set(written) == {f.name for f in fields(SamplerResults)} - {
        "structure_share",
        "structure_share_se",
    }
    assert written["exclusive_kl"] is None and written["most_probable"] is None


def test_results_of_another_schema_version_are_refused_with_a_hint(tmp_path):
    old = constructed_results(SAMPLERS)
    del old["schema_version"]  # as written before versions were recorded
    (tmp_path / "results.json").write_text(json.dumps(old))
    with pytest.raises(ReportError, match="schema version 1; this nfst reads") as info:
        load_results(tmp_path)
    assert f"delete {tmp_path}/results.json and run `nfst report {tmp_path}`" in info.value.hint
    (tmp_path / "results.json").write_text(json.dumps(old | {"schema_version": 99}))
    with pytest.raises(ReportError, match="schema version 99"):
        load_results(tmp_path)
    current = constructed_results(SAMPLERS)
    del current["samplers"]["swa"]["exclusive_kl"]
    (tmp_path / "results.json").write_text(json.dumps(current))
    with pytest.raises(ReportError, match="sampler swa lacks exclusive_kl"):
        load_results(tmp_path)
