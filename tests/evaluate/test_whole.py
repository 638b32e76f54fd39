"""The whole evaluation from samplers, a scorer and lattices (``nfst.evaluate_all``), on a
WFST scorer whose log Z and KLs are known by enumerating every path."""

import json
import math
from dataclasses import replace

import pytest

import nfst
from nfst.evaluate import Evaluation, Structure, evaluate
from nfst.runtime.distributed import stream_seed
from tests.helpers.lattices import del_ins_lattices
from tests.helpers.samplers import enumerated, new_sampler
from tests.helpers.scorers import random_bigram, random_scorer

K = 400
STARTS_WITH_DELETE = Structure(
    "starts_with_delete", lambda lattice, marks: bool(marks) and marks[0] == "<del>"
)


@pytest.fixture(scope="module")
def evaluation():
    lats = del_ins_lattices()
    scorer = random_bigram(lats)
    trained = [
        {
            "swa": new_sampler("swa", lats, seed=2 * s),
            "swp": new_sampler("swp", lats, seed=2 * s + 1),
        }
        for s in range(2)
    ]
    untrained = {name: new_sampler(name, lats, seed=9) for name in ("swa", "swp")}
    result = nfst.evaluate_all(
        trained,
        scorer,
        lats,
        lats[:2],
        untrained=untrained,
        training_seeds=[7, 8],
        k=K,
        log_z_samples=K,
        structure=STARTS_WITH_DELETE,
        quiet=True,
    )
    return lats, scorer, trained, untrained, result


def test_exact_values_are_the_enumerated_ones(evaluation):
    lats, scorer, trained, _, result = evaluation
    truth = enumerated(trained[0]["swp"], scorer, lats)
    assert result.exact_log_z["per_pair"] == pytest.approx([t["log_z"] for t in truth], abs=1e-9)
    mean_log_z = sum(t["log_z"] for t in truth) / len(truth)
    assert result.ngram["test_log_likelihood"] == pytest.approx(mean_log_z, abs=1e-9)
    swp = result.samplers["swp"]
    exclusive = sum(t["exclusive"] for t in truth) / len(truth)
    se = math.sqrt(sum(t["var_q"] for t in truth) / K) / len(truth)
    assert abs(swp.exclusive_kl - exclusive) <= 4 * se + 1e-9
    inclusive = sum(t["inclusive"] for t in truth) / len(truth)
    se = math.sqrt(sum(t["var_p"] for t in truth) / K) / len(truth)
    assert abs(swp.inclusive_kl - inclusive) <= 4 * se + 1e-9
    assert -1.0 < result.log_z["error"] <= 0.1  # log Ẑ is a lower bound in expectation


def test_seeds_validation_reference_and_untrained(evaluation):
    lats, scorer, trained, untrained, result = evaluation
    assert (result.seeds, result.pairs, result.validation_pairs) == ([0, 1], 3, 2)
    names = result.samplers
    by_validation = {n: m.validation_partial_kl for n, m in names.items()}
    assert result.reference == min(by_validation, key=by_validation.get)
    assert names[result.reference].gap["mean"] == 0.0
    for m in names.values():
        assert len(m.partial_kl_by_seed) == 2 == len(m.validation_partial_kl_by_seed)
        assert m.partial_kl == pytest.approx(sum(m.partial_kl_by_seed) / 2)
        assert m.exclusive_kl_lower_bound == pytest.approx(  # training run 0's
            (sum(m.per_pair_partial_kl) + sum(result.log_z["per_pair"])) / len(lats)
        )
    # training run 1 draws from its own seed's test stream
    again = evaluate(
        trained[1],
        scorer,
        lats,
        k=K,
        seed=stream_seed(8, "test"),
        quiet=True,
        examples=0,
        without_replacement=False,
    )
    assert names["swa"].partial_kl_by_seed[1] == pytest.approx(
        again["samplers"]["swa"]["partial_kl"]
    )
    before = evaluate(
        untrained,
        scorer,
        lats,
        k=K,
        seed=result.seed,
        quiet=True,
        examples=0,
        without_replacement=False,
    )
    assert names["swp"].untrained_partial_kl == pytest.approx(
        before["samplers"]["swp"]["partial_kl"]
    )


def test_the_structure_is_named_and_shared(evaluation):
    *_, result = evaluation
    assert result.structure == "starts_with_delete"
    assert 0.0 <= result.log_z["starts_with_delete"] <= 1.0
    assert all(0.0 <= m.structure_share <= 1.0 for m in result.samplers.values())


def test_the_structure_share_is_over_every_training_run(evaluation):
    lats, scorer, trained, _, result = evaluation
    by_seed = [
        evaluate(
            trained[s],
            scorer,
            lats,
            k=K,
            seed=stream_seed(seed, "test"),
            quiet=True,
            examples=0,
            without_replacement=False,
            structure=STARTS_WITH_DELETE,
        )["samplers"]["swa"]["starts_with_delete"]
        for s, seed in enumerate([7, 8])
    ]
    assert abs(by_seed[0] - by_seed[1]) > 0.01  # so run 0's share alone would fail
    assert result.samplers["swa"].structure_share == pytest.approx(sum(by_seed) / 2)
    assert "per_pair_share" not in result.to_json()["samplers"]["swa"]


def test_the_stage_files_json_is_the_typed_result_and_back(evaluation):
    """``to_json`` writes the structure's share under its name, the proposals as ``examples``
    and no key that does not apply (stages/evaluate.json's form); ``from_json`` reads it back,
    key for key."""
    *_, result = evaluation
    no_wfst = replace(
        result,
        exact_log_z=None,
        samplers={n: replace(m, inclusive_kl=None) for n, m in result.samplers.items()},
    )
    assert "exact_log_z" not in no_wfst.to_json()
    assert "inclusive_kl" not in no_wfst.to_json()["samplers"]["swa"]
    written = json.loads(json.dumps(result.to_json()))
    swa = written["samplers"]["swa"]
    assert swa["starts_with_delete"] == result.samplers["swa"].structure_share
    assert swa["examples"] == result.samplers["swa"].proposals
    assert "structure_share" not in swa and "proposals" not in swa
    assert written["exact_log_z"] == result.exact_log_z
    assert json.dumps(Evaluation.from_json(written).to_json()) == json.dumps(written)
    with pytest.raises(KeyError, match="reference"):
        Evaluation.from_json({k: v for k, v in written.items() if k != "reference"})


def test_a_scorer_that_is_no_ngram_needs_one():
    lats = del_ins_lattices()
    with pytest.raises(ValueError, match="needs the n-gram"):
        nfst.evaluate_all(
            [{}], random_scorer(len(lats[0].mark_vocab), seed=0), lats, lats, untrained={}
        )
