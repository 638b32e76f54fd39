"""log Ẑ by importance sampling from a mixture of samplers: a lower bound on the exact log Z of
a WFST scorer, with its diagnostics, and Ẑ unbiased for Z."""

import math

import pytest
import torch

from nfst.evaluate.exact import add_exact, exact_log_z
from nfst.evaluate.log_z import add_exclusive_kl, estimate_log_z
from nfst.evaluate.samplers import evaluate
from tests.helpers.lattices import del_ins_lattices
from tests.helpers.samplers import new_sampler
from tests.helpers.scorers import random_bigram


def test_importance_sampled_log_z_is_a_lower_bound_with_its_diagnostics():
    """On every pair log Ẑ ≤ log Z up to 3 of its stated standard errors; the exclusive KL
    built on it is below the exact-log-Z one by exactly log Z − log Ẑ."""
    lats = del_ins_lattices() * 2
    scorer = random_bigram(lats, seed=1)
    samplers = {"swa": new_sampler("swa", lats), "swp": new_sampler("swp", lats, seed=1)}
    result = evaluate(samplers, scorer, lats, k=8, quiet=True, examples=0,
                      without_replacement=False)
    result["log_z"] = estimate_log_z(samplers, scorer, lats, 64)
    add_exact(add_exclusive_kl(result), scorer, samplers, lats, k=8)
    log_z = result["log_z"]
    exact = result["exact_log_z"]["per_pair"]
    for value, se, truth in zip(log_z["per_pair"], log_z["per_pair_se"], exact):
        assert value <= truth + 3 * se + 1e-9
    assert log_z["error"] == pytest.approx(
        sum(v - z for v, z in zip(log_z["per_pair"], exact)) / len(exact))
    for m in result["samplers"].values():
        assert m["exclusive_kl"] - m["exclusive_kl_lower_bound"] == pytest.approx(-log_z["error"])
    assert set(log_z["by_proposal"]) == {"swa", "swp"}
    assert sum(v["samples"] for v in log_z["by_proposal"].values()) == 64
    best = max(v["log_z"] for v in log_z["by_proposal"].values())
    assert log_z["spread"] == pytest.approx(sum(log_z["per_pair"]) / len(exact) - best)
    assert len(log_z["per_pair_pareto_k"]) == len(lats)
    assert 0 <= log_z["pareto_k"]["over_threshold"] <= 1


def test_mixture_importance_sampling_is_unbiased_for_z():
    """E[Ẑ] = Z for the mixture estimate (each path weighted against the whole mixture): the
    mean of Ẑ/Z over 300 independent copies of each pair is 1 within 4 standard errors."""
    lats, copies = del_ins_lattices(), 300
    scorer = random_bigram(lats, seed=2)
    samplers = {"swa": new_sampler("swa", lats), "swp": new_sampler("swp", lats, seed=3)}
    log_z = estimate_log_z(samplers, scorer, lats * copies, 4, batch_size=64)["per_pair"]
    exact = exact_log_z(scorer, lats)
    ratio = torch.tensor(log_z, dtype=torch.float64).view(copies, len(lats)) \
        - torch.tensor(exact, dtype=torch.float64)
    ratio = ratio.exp()
    mean, se = ratio.mean(0), ratio.std(0) / math.sqrt(copies)
    assert bool(((mean - 1).abs() <= 4 * se + 1e-9).all()), (mean, se)
