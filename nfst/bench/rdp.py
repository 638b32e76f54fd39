"""``nfst bench rdp``: randomized DP (``nfst.dp.randomized``) and randomized SWP against the
exact passes on cipher test lattices, in one run.

1. SWP, exact and at ``swp_budget`` (10%): ``steps`` inclusive-KL training steps each (the same
   seeds, cipher training lattices, a frozen random LSTM scorer), then the partial KL of both on
   ``eval_lattices`` test lattices (k = 16 paths each, mean ± standard error over pairs), and
   the median ms of one training step (sample 16 paths per lattice, score, loss, backward,
   Adam) on 16 test lattices.
2. log Z of the exact-trained SWP's WFST (float64; its arc weights from Algorithm 1) on
   ``lattices`` test lattices, ``runs`` randomized backward passes per budget: ``mse_log_z``
   (log Ẑ − log Z)² per budget with the ``alpha-beta`` proposal (α of SWP's cheap mark-only
   model, as randomized SWP uses it), and deterministic top-K at 50% ranked by β̂ itself, the
   baseline of 004 Table 2 (``mse_log_z_topk50``); ``z_ratio_mean`` ± ``z_ratio_se``: Ẑ/Z at
   10% over every lattice and run; ms per lattice of the exact and the 10% backward pass.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from ..dp.batch import LatticeBatch
from ..dp.passes import backward, forward, log_partition
from ..dp.randomized import randomized_backward
from ..dp.selection import RDPConfig
from ..evaluate.drawing import draw
from ..evaluate.metrics import mean_and_se, partial_kl
from ..models.samplers import SamplerConfig, Vocabulary, make_sampler
from ..models.scorer import LSTMScorer
from ..runtime.threads import cpu_threads
from ..tasks import get_task
from ..train.objectives import inclusive_kl_loss
from .common import cipher_lattices, emit, median_seconds

BUDGETS = (0.01, 0.05, 0.1, 0.2)


def _train_step(sampler, scorer, batch, opt, generator, k):
    paths = sampler.sample(batch, k, generator)
    with torch.no_grad():
        log_p = scorer.score_paths(paths)
    loss = inclusive_kl_loss(log_p, paths.log_q)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(sampler.parameters(), 5.0)
    opt.step()


def _swp(vocabulary, d, budget, scorer, train, steps, k, seed):
    """An SWP trained ``steps`` steps (batches of 8 training lattices) against ``scorer``."""
    torch.manual_seed(seed)
    sampler = make_sampler("swp", vocabulary, SamplerConfig(d=d, dropout=0.0, budget=budget))
    opt = torch.optim.Adam(sampler.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)
    for step in range(steps):
        lo = (8 * step) % max(1, len(train) - 8)
        _train_step(sampler, scorer, LatticeBatch(train[lo : lo + 8]), opt, generator, k)
    return sampler, opt


def bench_rdp(
    lattices: int = 100,
    runs: int = 10,
    d: int = 256,
    steps: int = 30,
    eval_lattices: int = 32,
    swp_budget: float = 0.1,
    repeat: int = 3,
    seed: int = 0,
) -> dict:
    task = get_task("cipher")
    T = task.mfst()
    test = cipher_lattices(lattices, "test")
    train = cipher_lattices(8 * steps, "train")
    vocab = len(test[0].mark_vocab)
    torch.manual_seed(seed)
    scorer = LSTMScorer(vocab, 64).freeze()
    result = {
        "bench": "rdp",
        "lattices": len(test),
        "mean_states": float(np.mean([lat.num_states for lat in test])),
        "budgets": list(BUDGETS),
    }
    swp, exact_swp = _swp_comparison(
        Vocabulary.of(T), scorer, train, test, d, steps, eval_lattices, swp_budget, repeat, seed
    )
    result |= _log_z_comparison(exact_swp, test, runs, repeat, seed) | swp
    keys = (
        "bench",
        "lattices",
        "mean_states",
        "budgets",
        "mse_log_z",
        "mse_log_z_topk50",
        "z_ratio_mean",
        "z_ratio_se",
        "exact_ms",
        "rdp_ms",
        "swp_exact_ms",
        "swp_rdp_ms",
        "swp_exact_partial_kl",
        "swp_rdp_partial_kl",
    )
    return {key: result[key] for key in keys}


def _swp_comparison(
    vocabulary, scorer, train, test, d, steps, eval_lattices, swp_budget, repeat, seed
):
    """Part 1: SWP exact and at ``swp_budget``, each trained, then its partial KL on test pairs
    and the median ms of one training step; the figures, and the exact-trained SWP."""
    with cpu_threads(torch.device("cpu")):
        step_batch = LatticeBatch(test[:16])
        kl, ms = {}, {}
        for name, budget in (("exact", 1.0), ("rdp", swp_budget)):
            sampler, opt = _swp(vocabulary, d, budget, scorer, train, steps, 16, seed)
            torch.manual_seed(seed)
            samples = draw(sampler, scorer, test[:eval_lattices], 16, batch_size=16, seed=seed)
            per_pair = [float(partial_kl(s.log_q, s.log_p)) for s in samples]
            kl[name] = mean_and_se(per_pair)
            generator = torch.Generator().manual_seed(seed)
            times = []
            for _ in range(repeat + 1):
                t = time.perf_counter()
                _train_step(sampler, scorer, step_batch, opt, generator, 16)
                times.append(time.perf_counter() - t)
            ms[name] = 1e3 * statistics.median(times[1:])
            if name == "exact":
                exact_swp = sampler
    figures = {
        "swp_exact_ms": ms["exact"],
        "swp_rdp_ms": ms["rdp"],
        "swp_exact_partial_kl": list(kl["exact"]),
        "swp_rdp_partial_kl": list(kl["rdp"]),
    }
    return figures, exact_swp


def _log_z_comparison(sampler, test: list, runs: int, repeat: int, seed: int) -> dict:
    """Part 2: log Z of ``sampler``'s WFST (float64) on the ``test`` lattices, randomized (``runs`` passes
    per budget, the ``alpha-beta`` proposal) and top-K at 50% against exact: their squared
    errors, Ẑ/Z at 10%, and ms per lattice of the exact and the 10% backward pass."""
    batch = LatticeBatch(test)
    with torch.no_grad():
        sampler = sampler.double()
        log_w, _, _ = sampler.arc_log_weights(batch)
        mark_part = sampler.U_mark(sampler.mark_embed.weight)
        cheap_w = (torch.sigmoid(mark_part) @ sampler.w.weight[0])[batch.arc_mark]
    log_z = log_partition(batch, log_w)
    alpha = forward(batch, cheap_w)
    generator = torch.Generator().manual_seed(seed)

    def diffs(config, n):
        return torch.cat(
            [
                randomized_backward(
                    batch, log_w, config=config, generator=generator, cheap_alpha=alpha
                ).log_z
                - log_z
                for _ in range(n)
            ]
        )

    mse, ratio = [], None
    for budget in BUDGETS:
        d_log = diffs(RDPConfig(budget=budget, proposal="alpha-beta"), runs)
        mse.append(float((d_log**2).mean()))
        if budget == 0.1:
            ratio = mean_and_se(torch.exp(d_log).tolist())
    top = diffs(RDPConfig(budget=0.5, top_share=1.0, proposal="beta"), 1)
    exact_s = median_seconds(lambda: backward(batch, log_w), repeat)
    rdp_s = median_seconds(
        lambda: randomized_backward(
            batch,
            log_w,
            config=RDPConfig(budget=0.1, proposal="alpha-beta"),
            generator=generator,
            cheap_alpha=alpha,
        ),
        repeat,
    )
    return {
        "mse_log_z": mse,
        "mse_log_z_topk50": float((top**2).mean()),
        "z_ratio_mean": ratio[0],
        "z_ratio_se": ratio[1],
        "exact_ms": 1e3 * exact_s / len(test),
        "rdp_ms": 1e3 * rdp_s / len(test),
    }


if __name__ == "__main__":
    emit(bench_rdp())
