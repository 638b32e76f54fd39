"""log Ẑ by importance sampling from a mixture of samplers: a lower bound on the exact log Z of
a WFST scorer, with its diagnostics, and Ẑ unbiased for Z."""

import math

import pytest
import torch

from nfst import compile_lattice
from nfst.evaluate import log_z as log_z_module
from nfst.evaluate.exact import add_exact, exact_log_z
from nfst.evaluate.log_z import add_exclusive_kl, estimate_log_z
from nfst.evaluate.pareto import pareto_threshold
from nfst.evaluate.samplers import evaluate
from tests.helpers.lattices import CIPHER, del_ins_lattices, small_batch
from tests.helpers.samplers import new_sampler
from tests.helpers.scorers import random_bigram


def larger_lattices() -> list:
    """Pairs of 32 to 121 paths, so that 24 draws often have the 5 distinct weights above the
    tail's threshold that a k̂ needs (the small ones, of 5 to 32 paths, seldom do)."""
    return [
        compile_lattice(CIPHER, x, y)
        for x, y in (("abc", "cab"), ("abca", "bca"), ("abcb", "cab"), ("ab", "bca"))
    ]


def test_importance_sampled_log_z_is_a_lower_bound_with_its_diagnostics():
    """On every pair log Ẑ ≤ log Z up to 3 of its stated standard errors; the exclusive KL
    built on it is below the exact-log-Z one by exactly log Z − log Ẑ."""
    lats = del_ins_lattices() * 2
    scorer = random_bigram(lats, seed=1)
    samplers = {"swa": new_sampler("swa", lats), "swp": new_sampler("swp", lats, seed=1)}
    result = evaluate(
        samplers, scorer, lats, k=8, quiet=True, examples=0, without_replacement=False
    )
    result["log_z"] = estimate_log_z(samplers, scorer, lats, 64)
    add_exact(add_exclusive_kl(result), scorer, samplers, lats, k=8)
    log_z = result["log_z"]
    exact = result["exact_log_z"]["per_pair"]
    for value, se, truth in zip(log_z["per_pair"], log_z["per_pair_se"], exact):
        assert value <= truth + 3 * se + 1e-9
    assert log_z["error"] == pytest.approx(
        sum(v - z for v, z in zip(log_z["per_pair"], exact)) / len(exact)
    )
    assert set(result["samplers"]) == {"swa", "swp"}
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
    ratio = torch.tensor(log_z, dtype=torch.float64).view(copies, len(lats)) - torch.tensor(
        exact, dtype=torch.float64
    )
    ratio = ratio.exp()
    mean, se = ratio.mean(0), ratio.std(0) / math.sqrt(copies)
    assert bool(((mean - 1).abs() <= 4 * se + 1e-9).all()), (mean, se)


def test_adaptive_sizes_come_from_a_first_draw_that_is_then_set_aside():
    """With max_samples, pairs whose first M weights have k̂ above its threshold (0.28 at
    M = 24: ``pareto_threshold``) are estimated from N fresh paths, the others from M fresh
    ones: no estimate is the first draw's (keeping it where its k̂ looks fine would bias Ẑ),
    and the counts recorded are the paths really drawn."""
    lats = larger_lattices() * 3
    scorer = random_bigram(lats, seed=0)
    samplers = {"swa": new_sampler("swa", lats), "swp": new_sampler("swp", lats, seed=1)}
    first = estimate_log_z(samplers, scorer, lats, 24)
    log_z = estimate_log_z(samplers, scorer, lats, 24, max_samples=48)
    heavy = [k > pareto_threshold(24) for k in first["per_pair_pareto_k"]]
    assert 0 < sum(heavy) < len(lats)
    assert log_z["per_pair_samples"] == [48 if h else 24 for h in heavy]
    assert log_z["first_pareto_k"] == first["pareto_k"] and log_z["more_samples"] == sum(heavy)
    assert all(a != b for a, b in zip(log_z["per_pair"], first["per_pair"]))
    assert log_z["samples_drawn"] == len(lats) * 24 * 2 + sum(heavy) * 24
    assert sum(v["samples"] for v in log_z["by_proposal"].values()) == pytest.approx(
        sum(log_z["per_pair_samples"]) / len(lats)
    )
    assert first["max_samples"] is None and "first_pareto_k" not in first


def test_no_fresh_draw_repeats_a_first_draw(monkeypatch):
    """48 pairs, three first-stage minibatches of 16, pairs 0–15 heavy and the rest light (k̂
    set by the pair, so that exactly these are): the second stage draws pairs 16–47 in two
    minibatches of 16 and pairs 0–15 in two of 8, each from a seed no first-stage minibatch
    had, so no pair's estimate is its first draw's. (Once, when item_seed(s, 0, 1) was
    item_seed(s, 1), the fresh draw of pairs 16–31 was the first bit for bit.)"""
    pairs = [("ab", "ba"), ("a", "b"), ("abc", "ca"), ("ab", "c")]
    lats = [compile_lattice(CIPHER, x, y) for _ in range(12) for x, y in pairs]
    heavy = {id(lat) for lat in lats[:16]}
    draw = log_z_module._draw

    def by_pair(proposals, scorer, lattices, *args):
        out = draw(proposals, scorer, lattices, *args)
        for lat, p in zip(lattices, out):
            p["pareto_k"] = 0.9 if id(lat) in heavy else 0.1
        return out

    monkeypatch.setattr(log_z_module, "_draw", by_pair)
    scorer = random_bigram(lats, seed=0)
    samplers = {"swa": new_sampler("swa", lats), "swp": new_sampler("swp", lats, seed=1)}
    first = estimate_log_z(samplers, scorer, lats, 24, batch_size=16)
    log_z = estimate_log_z(samplers, scorer, lats, 24, max_samples=48, batch_size=16)
    assert log_z["per_pair_samples"] == [48] * 16 + [24] * 32
    assert log_z["first_pareto_k"] == first["pareto_k"]
    repeated = [j for j, (a, b) in enumerate(zip(log_z["per_pair"], first["per_pair"])) if a == b]
    assert repeated == []


def test_where_every_pair_is_light_the_fresh_draw_is_not_the_first(monkeypatch):
    """Every pair light (k̂ set to 0.1) and max_samples > M: the second stage draws every pair
    again at M, in the same minibatches as the first; seeded without its stage index it would
    draw the same paths, and every "fresh" estimate would be the first bit for bit."""
    draw = log_z_module._draw

    def light(*args):
        return [p | {"pareto_k": 0.1} for p in draw(*args)]

    monkeypatch.setattr(log_z_module, "_draw", light)
    lats = small_batch().lattices * 4
    scorer = random_bigram(lats, seed=0)
    samplers = {"swa": new_sampler("swa", lats), "swp": new_sampler("swp", lats, seed=1)}
    first = estimate_log_z(samplers, scorer, lats, 24)
    log_z = estimate_log_z(samplers, scorer, lats, 24, max_samples=48)
    assert log_z["per_pair_samples"] == [24] * len(lats)
    assert all(a != b for a, b in zip(log_z["per_pair"], first["per_pair"]))


def test_adaptive_importance_sampling_is_unbiased_for_z():
    """E[Ẑ] = Z with adaptive sample sizes too: over 40 copies of each pair (about half of
    them drawn again with more paths), the mean of Ẑ/Z is 1 within 4 standard errors."""
    lats, copies = larger_lattices(), 40
    scorer = random_bigram(lats, seed=3)
    samplers = {"swa": new_sampler("swa", lats), "swp": new_sampler("swp", lats, seed=1)}
    log_z = estimate_log_z(samplers, scorer, lats * copies, 24, max_samples=48, batch_size=64)
    assert 0.2 < log_z["more_samples"] / len(log_z["per_pair"]) < 0.8
    ratio = (
        torch.tensor(log_z["per_pair"], dtype=torch.float64).view(copies, len(lats))
        - torch.tensor(exact_log_z(scorer, lats), dtype=torch.float64)
    ).exp()
    mean, se = ratio.mean(0), ratio.std(0) / math.sqrt(copies)
    assert bool(((mean - 1).abs() <= 4 * se + 1e-9).all()), (mean, se)
