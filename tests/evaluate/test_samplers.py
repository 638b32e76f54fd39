"""Evaluation estimators against exact enumeration on small lattices."""

import itertools
import json
import math

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.evaluate.drawing import PairSamples, draw
from nfst.evaluate.metrics import dedup_ess, expected_length, partial_kl
from nfst.evaluate.samplers import (
    evaluate,
    format_table,
    mean_and_se,
    paired_difference,
    render_marks,
    summarize,
)
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import FreeWeightSampler, all_paths, exact_log_p, new_sampler
from tests.helpers.scorers import random_scorer


def setting(seed=0, scale=0.8):
    lat = cipher_lattice()
    batch = LatticeBatch([lat])
    scorer = random_scorer(len(lat.mark_vocab), seed=seed, scale=scale)
    g = torch.Generator().manual_seed(seed + 50)
    q = FreeWeightSampler(batch, torch.randn(batch.num_arcs, generator=g, dtype=torch.float64))
    arcs, _ = all_paths(batch)
    with torch.no_grad():
        log_p = exact_log_p(scorer, batch, arcs)[0]
        log_q = q.score(batch, arcs)[0]
    lengths = (arcs[0] >= 0).sum(1)
    return lat, scorer, q, log_p, log_q, lengths


def test_partial_kl_matches_enumeration():
    lat, scorer, q, log_p, log_q, _ = setting()
    exact = (log_q.exp() * (log_q - log_p)).sum().item()
    (samples,) = draw(q, scorer, [lat], k=20000, seed=1)
    d = samples.log_q - samples.log_p
    se = d.std().item() / math.sqrt(len(d))
    assert abs(float(partial_kl(samples.log_q, samples.log_p)) - exact) < 4 * se


def test_expected_length_matches_enumeration():
    lat, scorer, q, log_p, log_q, lengths = setting(2)
    p = torch.softmax(log_p, 0)
    exact = (p * lengths).sum().item()
    assert len(set(lengths.tolist())) > 1
    (big,) = draw(q, scorer, [lat], k=40 * 500, seed=2)
    estimates = [
        float(expected_length(big.log_p[sl] - big.log_q[sl], big.lengths[sl]))
        for sl in (slice(500 * r, 500 * (r + 1)) for r in range(40))
    ]
    mean, se = sum(estimates) / 40, torch.tensor(estimates).std().item() / math.sqrt(40)
    assert abs(mean - exact) < 4 * se + 0.01  # SNIS bias is O(1/k)


def dedup(samples: PairSamples) -> float:
    return float(dedup_ess(samples.log_p - samples.log_q, samples.arcs))


def test_dedup_ess_merges_identical_samples():
    arcs = torch.tensor([[0, 1], [0, 1], [2, -1], [0, 1]])
    same = PairSamples(torch.zeros(4), torch.zeros(4), torch.tensor([2, 2, 1, 2]), arcs)
    # weights 1: the merged weights are 3 and 1, so ESS = 16 / 10
    assert abs(dedup(same) - 1.6) < 1e-12
    one = PairSamples(
        torch.tensor([-1.0] * 3),
        torch.tensor([-5.0] * 3),
        torch.ones(3),
        torch.tensor([[4], [4], [4]]),
    )
    assert abs(dedup(one) - 1.0) < 1e-12
    distinct = PairSamples(
        torch.zeros(3), torch.zeros(3), torch.ones(3), torch.tensor([[1], [2], [3]])
    )
    assert abs(dedup(distinct) - 3.0) < 1e-12
    # batched over pairs: each row merged on its own; without arcs the paths are distinct
    log_w = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, float("-inf")]])
    other = torch.tensor([[0, 1], [2, -1], [1, 1], [0, 1]])
    batched = dedup_ess(log_w, torch.stack([arcs, other]))
    assert torch.allclose(batched, torch.tensor([1.6, 3.0], dtype=torch.float64))
    assert torch.allclose(dedup_ess(log_w), torch.tensor([4.0, 3.0], dtype=torch.float64))


def exact_expected_dedup_ess(log_p, log_q, k):
    """E over k i.i.d. draws from q of the deduplicated ESS, by enumerating count vectors."""
    q = log_q.exp().tolist()
    w = (log_p - log_q).exp().tolist()
    n = len(q)
    total = 0.0
    for counts in itertools.product(range(k + 1), repeat=n):
        if sum(counts) != k:
            continue
        prob = math.factorial(k)
        for c, qi in zip(counts, q):
            prob *= qi**c / math.factorial(c)
        W = [c * wi for c, wi in zip(counts, w) if c]
        total += prob * sum(W) ** 2 / sum(x * x for x in W)
    return total


def test_dedup_ess_matches_its_exact_expectation():
    lats = del_ins_lattices()[:1]  # 3 paths
    batch = LatticeBatch(lats)
    scorer = random_scorer(len(lats[0].mark_vocab), seed=4)
    g = torch.Generator().manual_seed(5)
    q = FreeWeightSampler(batch, torch.randn(batch.num_arcs, generator=g, dtype=torch.float64))
    arcs, _ = all_paths(batch)
    with torch.no_grad():
        log_p = exact_log_p(scorer, batch, arcs)[0] + torch.tensor(
            [0.0, 1.0, -1.0], dtype=torch.float64
        )
        log_q = q.score(batch, arcs)[0]
    k, reps = 4, 3000
    expected = exact_expected_dedup_ess(log_p, log_q, k)
    (big,) = draw(q, scorer, lats, k=k * reps, seed=6)
    index = {tuple(a for a in row.tolist() if a >= 0): i for i, row in enumerate(arcs[0])}
    path_id = torch.tensor([index[tuple(a for a in row.tolist() if a >= 0)] for row in big.arcs])
    values = []
    for r in range(reps):
        sl = slice(r * k, (r + 1) * k)
        ids = path_id[sl]  # reweight with the shifted log p so weights differ by path
        values.append(dedup(PairSamples(log_q[ids], log_p[ids], big.lengths[sl], big.arcs[sl])))
    v = torch.tensor(values)
    assert abs(v.mean().item() - expected) < 4 * v.std().item() / math.sqrt(reps)


def test_evaluate_returns_json_with_every_metric():
    lats = del_ins_lattices()
    scorer = random_scorer(len(lats[0].mark_vocab), seed=0)
    samplers = {"swp": new_sampler("swp", lats), "swa": new_sampler("swa", lats)}
    result = evaluate(samplers, scorer, lats, k=4, batch_size=2, examples=2, quiet=True)
    json.dumps(result)
    assert result["pairs"] == 3 and set(result["samplers"]) == {"swp", "swa"}
    for m in result["samplers"].values():
        for key in (
            "partial_kl",
            "partial_kl_se",
            "ess",
            "expected_length",
            "ess_wor",
            "partial_kl_wor",
        ):
            assert math.isfinite(m[key])
        assert len(m["examples"]) == 2
        assert m["examples"][0]["proposal"].split()[0] in ("<del>", "<ins>")
    assert "partial KL" in format_table(result)
    diff, se = paired_difference(result, "swp", "swa")
    assert (
        diff
        == pytest.approx(
            result["samplers"]["swp"]["partial_kl"] - result["samplers"]["swa"]["partial_kl"]
        )
        and se >= 0
    )
    # evaluation is seeded: the same result again, whatever ran before
    again = evaluate({"swa": samplers["swa"]}, scorer, lats, k=4, batch_size=2, quiet=True)
    assert again["samplers"]["swa"]["partial_kl"] == result["samplers"]["swa"]["partial_kl"]


def test_the_most_probable_proposal_of_pair_0_is_its_highest_log_q_sample():
    """003 Tables 4–6 put each sampler's most probable proposal for one pair side by side:
    the evaluation records, from its own draw, pair 0's sample of highest log q."""
    lats = del_ins_lattices()
    scorer = random_scorer(len(lats[0].mark_vocab), seed=0)
    sampler = new_sampler("swa", lats)
    samples = draw(sampler, scorer, lats, k=8, batch_size=2, seed=3)
    shown = summarize(samples, lats, examples=1)["most_probable"]
    j = int(samples[0].log_q.argmax())
    assert shown["log_q"] == float(samples[0].log_q.max())
    assert shown["log_p"] == float(samples[0].log_p[j])
    assert shown["proposal"] == render_marks(lats[0], samples[0].arcs[j].tolist())
    assert (shown["x"], shown["y"]) == (" ".join(lats[0].x), " ".join(lats[0].y))
    result = evaluate(
        {"swa": sampler},
        scorer,
        lats,
        k=8,
        batch_size=2,
        seed=3,
        quiet=True,
        without_replacement=False,
    )
    assert result["samplers"]["swa"]["most_probable"] == shown
    assert "most_probable" not in summarize(samples, lats, examples=0)


def test_partial_kl_standard_error_is_std_over_root_n():
    """Four pairs whose partial KLs are 1, 2, 3 and 6 nats: mean 3, sample standard deviation
    √(14/3), standard error √(14/3) / √4 = 1.0801 (std / n would give 0.540)."""
    samples = []
    for i, kl in enumerate([1.0, 2.0, 3.0, 6.0]):
        log_p = torch.tensor([-1.0, -2.0], dtype=torch.float64) - i
        samples.append(
            PairSamples(log_p + kl, log_p, torch.tensor([1, 1]), torch.tensor([[0], [1]]))
        )
    result = summarize(samples, [], examples=0)
    assert result["per_pair_partial_kl"] == pytest.approx([1.0, 2.0, 3.0, 6.0])
    assert result["partial_kl"] == pytest.approx(3.0)
    assert result["partial_kl_se"] == pytest.approx(math.sqrt(14 / 3) / 2, rel=1e-12)
    assert mean_and_se([5.0]) == (5.0, 0.0)
    paired = {
        "samplers": {
            "a": {"per_pair_partial_kl": [1.0, 2.0, 3.0, 6.0]},
            "b": {"per_pair_partial_kl": [0.0, 0.0, 0.0, 0.0]},
        }
    }
    assert paired_difference(paired, "a", "b") == pytest.approx((3.0, math.sqrt(14 / 3) / 2))
