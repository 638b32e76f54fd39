"""Exact references under a WFST scorer, checked against enumeration of every path."""

import math

import pytest

from nfst.evaluate.exact import add_exact, exact_log_z, is_exact
from nfst.evaluate.samplers import evaluate
from tests.helpers.lattices import del_ins_lattices
from tests.helpers.samplers import enumerated, new_sampler
from tests.helpers.scorers import random_bigram, random_scorer


def test_only_wfst_scorers_are_exact():
    lats = del_ins_lattices()
    assert is_exact(random_bigram(lats))
    assert not is_exact(random_scorer(len(lats[0].mark_vocab), seed=0))


def test_exact_log_z_is_the_enumerated_partition_function():
    lats = del_ins_lattices()
    scorer = random_bigram(lats)
    truth = [e["log_z"] for e in enumerated(new_sampler("swp", lats), scorer, lats)]
    assert exact_log_z(scorer, lats, batch_size=2) == pytest.approx(truth, abs=1e-9)


@pytest.mark.parametrize("name", ["swa", "swp"])
def test_exact_kls_match_enumeration_within_their_sampling_error(name):
    """Per pair, the exclusive KL (k samples of q, exact log Z) and the inclusive KL (k exact
    posterior samples) are within 4 Monte Carlo standard errors of the enumerated KLs; the
    standard errors come from the enumerated variances of the log ratios."""
    lats, k = del_ins_lattices(), 400
    scorer, sampler = random_bigram(lats), new_sampler(name, lats)
    result = evaluate(
        {name: sampler}, scorer, lats, k=k, quiet=True, examples=0, without_replacement=False
    )
    add_exact(result, scorer, {name: sampler}, lats, k=k)
    m = result["samplers"][name]
    exclusive = [p + z for p, z in zip(m["per_pair_partial_kl"], result["exact_log_z"]["per_pair"])]
    for got, got_in, truth in zip(
        exclusive, m["per_pair_inclusive_kl"], enumerated(sampler, scorer, lats)
    ):
        assert abs(got - truth["exclusive"]) <= 4 * math.sqrt(truth["var_q"] / k) + 1e-9
        assert abs(got_in - truth["inclusive"]) <= 4 * math.sqrt(truth["var_p"] / k) + 1e-9
    assert m["exclusive_kl"] == pytest.approx(sum(exclusive) / len(exclusive))
