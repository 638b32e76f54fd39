"""Exact references under a WFST scorer, checked against enumeration of every path."""

import math

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.evaluate.exact import add_exact, exact_log_z, is_exact
from nfst.evaluate.log_z import add_exclusive_kl, estimate_log_z
from nfst.evaluate.samplers import evaluate
from nfst.models.ngram import NgramScorer
from tests.helpers.lattices import del_ins_lattices
from tests.helpers.samplers import all_paths, exact_log_p, new_sampler
from tests.helpers.scorers import random_scorer


def random_bigram(lats, seed=0):
    torch.manual_seed(seed)
    scorer = NgramScorer(len(lats[0].mark_vocab), order=2)
    with torch.no_grad():
        scorer.logits.normal_(0, 1.5)
    return scorer.freeze()


def enumerated(sampler, scorer, lats):
    """Per lattice: log Z, KL(q ‖ p), KL(p ‖ q) and the variances of the two log ratios, under
    q and p, by enumeration of every path."""
    batch = LatticeBatch(lats)
    arcs, mask = all_paths(batch)
    with torch.no_grad():
        log_p = exact_log_p(scorer, batch, arcs).masked_fill(~mask, -math.inf)
        log_q = sampler.eval().score(batch, arcs).double().masked_fill(~mask, -math.inf)
    log_z = torch.logsumexp(log_p, 1)
    out = []
    for b in range(len(lats)):
        m = mask[b]
        lp, lq = log_p[b, m] - log_z[b], log_q[b, m]
        d = lq - lp
        q, p = lq.exp(), lp.exp()
        kl_qp, kl_pq = float((q * d).sum()), float((p * -d).sum())
        out.append({"log_z": float(log_z[b]), "exclusive": kl_qp, "inclusive": kl_pq,
                    "var_q": float((q * (d - kl_qp) ** 2).sum()),
                    "var_p": float((p * (-d - kl_pq) ** 2).sum())})
    return out


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
    result = evaluate({name: sampler}, scorer, lats, k=k, quiet=True, examples=0,
                      without_replacement=False)
    add_exact(result, scorer, {name: sampler}, lats, k=k)
    m = result["samplers"][name]
    exclusive = [p + z for p, z in zip(m["per_pair_partial_kl"],
                                       result["exact_log_z"]["per_pair"])]
    for got, got_in, truth in zip(exclusive, m["per_pair_inclusive_kl"],
                                  enumerated(sampler, scorer, lats)):
        assert abs(got - truth["exclusive"]) <= 4 * math.sqrt(truth["var_q"] / k) + 1e-9
        assert abs(got_in - truth["inclusive"]) <= 4 * math.sqrt(truth["var_p"] / k) + 1e-9
    assert m["exclusive_kl"] == pytest.approx(sum(exclusive) / len(exclusive))


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
