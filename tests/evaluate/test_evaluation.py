"""The typed evaluation (nfst.evaluate.evaluation): its JSON form is stages/evaluate.json's,
and reads back field for field. (A whole evaluation's round trip: tests/evaluate/test_whole.py.)"""

import dataclasses
import json

import pytest

from nfst.evaluate.evaluation import Evaluation, SamplerEvaluation


def _sampler(**given) -> SamplerEvaluation:
    """Every required field filled by its type's stand-in, then ``given``."""
    stand_in = {"float": 1.5, "list": [1.0, 2.0], "dict": {"a": 1}, "Optional[float]": 0.5}
    values = {
        f.name: stand_in.get(str(f.type), None)
        for f in dataclasses.fields(SamplerEvaluation)
        if f.default is dataclasses.MISSING
    }
    return SamplerEvaluation(**values | given)


def _evaluation(**samplers) -> Evaluation:
    return Evaluation(
        pairs=3,
        k=4,
        seed=0,
        samplers=samplers,
        seeds=[0],
        reference="swp",
        validation_pairs=2,
        structure="generating_cipher",
        log_z={"x": 1.0},
        ngram={"order": 3},
    )


def test_the_json_form_names_the_share_by_the_structure_and_leaves_out_what_is_none():
    evaluation = _evaluation(
        swp=_sampler(structure_share=0.4, structure_share_se=0.1, proposals=[{"marks": "a"}])
    )
    written = json.loads(json.dumps(evaluation.to_json()))
    swp = written["samplers"]["swp"]
    assert (swp["generating_cipher"], swp["generating_cipher_se"]) == (0.4, 0.1)
    assert swp["examples"] == [{"marks": "a"}] and "proposals" not in swp
    assert "inclusive_kl" not in swp and "exact_log_z" not in written  # None: not written
    assert Evaluation.from_json(written) == evaluation


def test_a_stage_file_without_a_required_key_names_it():
    written = _evaluation(swp=_sampler()).to_json()
    del written["samplers"]["swp"]["partial_kl"]
    with pytest.raises(KeyError, match="partial_kl"):
        Evaluation.from_json(written)
