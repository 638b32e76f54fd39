"""``nfst bench estimates``: the estimators an LSTM run relies on, checked against exact values.

A mark trigram fitted by exact maximum likelihood on cipher training lattices
(``nfst.train.ngram``) is the scorer: a WFST, so on each cipher test lattice its log Z is exact
and its posterior can be sampled (``nfst.evaluate.exact``). Every sampler, untrained and trained
``steps`` inclusive-KL steps against it, is evaluated on ``lattices`` test pairs as a run would
evaluate it, and the same quantities are computed exactly:

- ``estimated_log_z[name]``: log Ẑ by importance sampling with ``M`` paths per pair from that
  sampler alone, and ``estimated_log_z["mixture"]`` from an even mixture of every trained
  sampler (the estimate behind ``estimated_exclusive_kl``); each a lower bound in expectation,
  beside ``exact_log_z``. ``pareto_k``: the mean over pairs of each estimate's Pareto k̂
  (``nfst.evaluate.pareto``; above min(1 − 1/log₁₀ M, 0.7) unreliable);
- ``estimated_exclusive_kl[name]``: partial KL + log Ẑ of the mixture, the lower bound a run
  with an LSTM scorer reports; ``exact_exclusive_kl[name]``: partial KL + exact log Z
  (unbiased); ``name/untrained`` for the untrained samplers; ``exact_inclusive_kl``: from
  exact posterior samples;
- ``checks[name]``: whether the estimate honours its statement, estimated ≤ exact + 3 standard
  errors of the estimate (it is stated as a lower bound), for every log Z and exclusive KL
  (for log Ẑ, the standard error its per-pair delta-method errors state); ``log_z_gap``:
  exact log Z minus the mixture's log Ẑ, by how much every estimated exclusive KL is low.

Every figure is the mean over pairs; ``*_se`` dicts hold the standard errors over pairs.
"""

from __future__ import annotations

import math
import time
from typing import Optional, Sequence

import torch

from ..evaluate.exact import add_exact
from ..evaluate.log_z import add_exclusive_kl, estimate_log_z
from ..evaluate.samplers import evaluate
from ..models.samplers import SAMPLERS, SamplerConfig, Vocabulary, make_sampler
from ..tasks import get_task
from ..train.ngram import NgramConfig, fit_ngram
from ..train.sampler import SamplerTrainConfig, train_sampler
from .common import cipher_lattices


def _bound_holds(estimate: float, se: float, exact: float) -> bool:
    return estimate <= exact + 3 * se


def _stated_se(per_pair_se: Sequence[float]) -> float:
    """The standard error of a mean over pairs of independent estimates, from their own
    (delta-method) standard errors: what the estimator states, not what it achieves."""
    return math.sqrt(sum(se * se for se in per_pair_se)) / len(per_pair_se)


def bench_estimates(
    lattices: int = 32,
    train_pairs: int = 256,
    steps: int = 60,
    d: int = 64,
    k: int = 16,
    M: int = 256,
    order: int = 3,
    seed: int = 0,
    samplers: Optional[Sequence[str]] = None,
    cache_dir: Optional[str] = None,
    device: str = "cpu",
    quiet: bool = True,
) -> dict:
    started = time.time()
    names = list(samplers or SAMPLERS)
    train = cipher_lattices(train_pairs, "train", cache_dir)
    test = cipher_lattices(lattices, "test", cache_dir)
    scorer = fit_ngram(train, NgramConfig(order=order), device=device, quiet=True).scorer
    untrained, trained = _samplers(names, scorer, train, steps, d, seed, device, quiet)
    common = dict(k=k, seed=seed, device=device, quiet=quiet, without_replacement=False, examples=0)
    result = evaluate(trained, scorer, test, **common)
    for name, m in evaluate(untrained, scorer, test, **common)["samplers"].items():
        result["samplers"][name]["untrained_per_pair_partial_kl"] = m["per_pair_partial_kl"]
    result["log_z"] = estimate_log_z(trained, scorer, test, M, seed=seed, device=device)
    add_exclusive_kl(result)
    add_exact(result, scorer, trained, test, k=k, seed=seed, device=device)
    own = {
        name: estimate_log_z({name: trained[name]}, scorer, test, M, seed=seed, device=device)
        for name in names
    }
    out = {
        "bench": "estimates",
        "pairs": len(test),
        "train_pairs": len(train),
        "steps": steps,
        "d": d,
        "k": k,
        "M": M,
        "scorer": f"{order}-gram (WFST)",
    } | _against_exact(result, own)
    out["seconds"] = round(time.time() - started, 1)
    return out


def _samplers(names, scorer, train, steps: int, d: int, seed: int, device, quiet: bool):
    """Each sampler of ``names`` untrained, and trained ``steps`` inclusive-KL steps against
    ``scorer`` from the same initial weights: two dicts, name -> sampler."""
    vocabulary = Vocabulary.of(get_task("cipher").mfst())
    config = SamplerTrainConfig(
        sampler=SamplerConfig(d=d, dropout=0.0),
        lr=3e-3,
        steps=steps,
        eval_every=max(1, steps),
        eval_k=8,
        patience=10**6,
    )
    untrained, trained = {}, {}
    for i, name in enumerate(names):
        torch.manual_seed(seed + i)  # each sampler's initial weights, whatever ran before
        untrained[name] = make_sampler(name, vocabulary, config.sampler).to(device)
        trained[name] = make_sampler(name, vocabulary, config.sampler).to(device)
        trained[name].load_state_dict(untrained[name].state_dict())
        train_sampler(
            trained[name], scorer, train, train[:16], config, seed=seed, device=device, quiet=quiet
        )
    return untrained, trained


def _against_exact(result: dict, own: dict) -> dict:
    """The estimates of the evaluation ``result`` (with exact values: ``add_exact``) and of
    each sampler's own log Ẑ (``own``: name -> ``estimate_log_z``'s) beside the exact values,
    and whether each bound holds."""
    exact_z = result["exact_log_z"]["mean"]
    out: dict = {
        "exact_log_z": exact_z,
        "estimated_log_z": {},
        "estimated_log_z_se": {},
        "pareto_k": {},
        "exact_exclusive_kl": {},
        "exact_exclusive_kl_se": {},
        "estimated_exclusive_kl": {},
        "estimated_exclusive_kl_se": {},
        "exact_inclusive_kl": {},
        "exact_inclusive_kl_se": {},
        "checks": {},
    }
    for name, estimate in [*own.items(), ("mixture", result["log_z"])]:
        mean = sum(estimate["per_pair"]) / len(estimate["per_pair"])
        se = _stated_se(estimate["per_pair_se"])
        out["estimated_log_z"][name], out["estimated_log_z_se"][name] = mean, se
        out["pareto_k"][name] = estimate["pareto_k"]["mean"]
        out["checks"][f"log_z/{name}"] = _bound_holds(mean, se, exact_z)
    for name, m in result["samplers"].items():
        for label, prefix in ((name, ""), (f"{name}/untrained", "untrained_")):
            est = m[f"{prefix}exclusive_kl_lower_bound"]
            se = m[f"{prefix}exclusive_kl_lower_bound_se"]
            exact = m[f"{prefix}exclusive_kl"]
            out["estimated_exclusive_kl"][label] = est
            out["estimated_exclusive_kl_se"][label] = se
            out["exact_exclusive_kl"][label] = exact
            out["exact_exclusive_kl_se"][label] = m[f"{prefix}exclusive_kl_se"]
            out["checks"][f"exclusive_kl/{label}"] = _bound_holds(est, se, exact)
        out["exact_inclusive_kl"][name] = m["inclusive_kl"]
        out["exact_inclusive_kl_se"][name] = m["inclusive_kl_se"]
    out["all_checks_pass"] = all(out["checks"].values())
    out["log_z_gap"] = exact_z - out["estimated_log_z"]["mixture"]
    return out
