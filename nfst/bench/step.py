"""One training step of each sampler on the same cipher batch (``nfst bench step``).

A step is what :func:`nfst.train.sampler.train_sampler` does per minibatch: sample k paths per
lattice with gradients, score them with the frozen scorer, the inclusive-KL loss, backward,
clip and an Adam update. Every sampler gets the same batch (16 cipher training lattices, the
first of the task's seeded training subset), the same scorer and the same seeds, in one run.

Reported (milliseconds, the median of ``repeat`` steps after one warm-up step, the
samplers taking turns; see ``_Stepper`` for the clock), for each
hidden size in ``dims`` (003's 256 and the small preset's 64): ``ms_per_step`` per sampler,
``ms_sampler_only`` per sampler (the step minus the scorer's forward pass, which is the same
work for every sampler), ``over_swp`` (each sampler's step over SWP's, measured in the same
run), ``swp_over_swa``, ``ms_per_sleep_step`` (a step of sleep training: maximum likelihood
on one given path per pair, ``nfst.train.triples``), and from one more step each, ``ops_per_step`` and ``syncs_per_step``:
the operators it dispatched, forward and backward, and those of them that wait for values on
the host (:class:`~nfst.bench.common.OpCounter`; the same on any device). The paper found SWP
about 10× slower than SWA (003 App. G).

``triples``: what sleep training adds per triple, drawing its mark string from the scorer and
compiling its lattice (:func:`_triple_ms`).

``paper_preset``: what the paper preset would take per task at these step times: each of its
samplers (``DEFAULT_SAMPLERS``, at its d) trains for up to its ``steps`` (early stopping may end
sooner; validation not counted), one after another, and its scorer for its steps, timed here
on one batch of K paths per pair (drawn once from an untrained sampler, so all distinct: the
worst case; the proposal's own sampling not counted).

    nfst bench step [--device cuda]     # prints the JSON object as its last line
"""

from __future__ import annotations

import statistics
import time
from typing import Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..experiment.config import DEFAULT_SAMPLERS
from ..experiment.presets import preset
from ..fst.compile import compile_lattice
from ..fst.mark_strings import MarkReader
from ..models.samplers import SamplerConfig, Vocabulary, make_sampler
from ..models.scorer import LSTMScorer, distinct_strings
from ..runtime.threads import cpu_threads
from ..tasks import get_task
from ..train.objectives import inclusive_kl_loss, iwae_loss
from ..train.triples import draw_strings
from .common import OpCounter, cipher_lattices, emit

SAMPLER_NAMES = ("nolookahead", "swa", "sws", "swp", "swp-prefix", "swp-sws")


def bench_step(
    lattices: int = 16,
    k: int = 16,
    dims: Sequence[int] = (256, 64),
    scorer_hidden: int = 256,
    repeat: int = 5,
    samplers: Sequence[str] = SAMPLER_NAMES,
    device: str = "cpu",
    seed: int = 0,
    cache_dir: Optional[str] = None,
) -> dict:
    """Time one training step (``lattices`` pairs, k paths each) of each sampler at each
    hidden size in ``dims``; see the module docstring."""
    device = torch.device(device)
    T = get_task("cipher").mfst()
    lats = cipher_lattices(lattices, cache_dir=cache_dir)
    batch = LatticeBatch(lats, device)
    vocab = len(lats[0].mark_vocab)
    torch.manual_seed(seed)
    scorer = LSTMScorer(vocab, scorer_hidden).to(device).freeze()
    result = {
        "benchmark": "step",
        "device": str(device),
        "lattices": lattices,
        "k": k,
        "scorer_hidden": scorer_hidden,
        "states": batch.num_states,
        "arcs": batch.num_arcs,
        "max_height": batch.max_height,
        "repeat": repeat,
    }
    for d in dims:
        steppers = {
            name: _Stepper(
                make_sampler(name, Vocabulary.of(T), SamplerConfig(d=d)), scorer, batch, k, seed
            )
            for name in samplers
        }
        for _ in range(repeat + 1):  # round robin: a busy machine slows every sampler alike
            for stepper in steppers.values():
                stepper.step()
        for _ in range(repeat + 1):
            for stepper in steppers.values():
                stepper.step(sleep=True)
        for stepper in steppers.values():
            stepper.count()
        per_step = {n: 1000 * statistics.median(s.totals[1:]) for n, s in steppers.items()}
        sampler_only = {
            n: 1000 * statistics.median(t - c for t, c in zip(s.totals[1:], s.scoring[1:]))
            for n, s in steppers.items()
        }
        at_d = {
            "ms_per_step": {n: round(v, 1) for n, v in per_step.items()},
            "ms_per_sleep_step": {
                n: round(1000 * statistics.median(s.sleeps[1:]), 1) for n, s in steppers.items()
            },
            "ms_sampler_only": {n: round(v, 1) for n, v in sampler_only.items()},
            "ops_per_step": {n: s.ops for n, s in steppers.items()},
            "syncs_per_step": {n: s.syncs for n, s in steppers.items()},
        }
        if "swp" in per_step:
            at_d["over_swp"] = {n: round(v / per_step["swp"], 2) for n, v in per_step.items()}
            if "swa" in per_step:
                at_d["swp_over_swa"] = round(per_step["swp"] / per_step["swa"], 3)
        result[f"d{d}"] = at_d
    result["triples"] = _triple_ms(scorer, T, lats, device, seed)
    result["paper_preset"] = paper_preset_hours(
        result, _scorer_step_ms(batch, Vocabulary.of(T), repeat, seed)
    )
    return result


def paper_preset_hours(result: dict, scorer_ms: float) -> dict:
    """The paper preset's training time per task at the step times of ``result`` (the module
    docstring), printed as a sentence too."""
    paper = preset("paper")
    steps, d = paper.sampler.steps, paper.sampler.sampler.d
    ms = result.get(f"d{d}", {}).get("ms_per_step", {})
    hours = {n: round(steps * ms[n] / 3.6e6, 2) for n in DEFAULT_SAMPLERS if n in ms}
    scorer_hours = round(paper.scorer.steps * scorer_ms / 3.6e6, 2)
    out = {
        "sampler_steps": steps,
        "d": d,
        "hours_per_sampler": hours,
        "scorer_steps": paper.scorer.steps,
        "ms_per_scorer_step": round(scorer_ms, 1),
        "scorer_hours": scorer_hours,
    }
    if len(hours) == len(DEFAULT_SAMPLERS):
        out["hours_per_task"] = round(sum(hours.values()) + scorer_hours, 2)
        print(
            f"paper preset on {result['device']}: up to {steps:,} steps per sampler at d {d} "
            f"(early stopping may end sooner; validation not counted): "
            + ", ".join(f"{n} {h:.2f} h" for n, h in hours.items())
            + f"; the scorer {paper.scorer.steps:,} steps at {scorer_ms:.0f} ms, "
            f"{scorer_hours:.2f} h; up to {out['hours_per_task']:.2f} h per task, one after "
            "another"
        )
    return out


def _scorer_step_ms(batch: LatticeBatch, vocabulary: Vocabulary, repeat: int, seed: int) -> float:
    """Median ms of the paper preset's scorer training step (its hidden size, dropout, label
    smoothing, K and clipping) on ``batch``: log p̃ of each distinct path and the label-smoothed
    IWAE loss (``nfst.train.scorer``), backward, clip, Adam."""
    config = preset("paper").scorer
    torch.manual_seed(seed)
    scorer = LSTMScorer(vocabulary.size, config.hidden, config.layers, config.dropout).to(
        batch.device
    )
    opt = torch.optim.Adam(scorer.parameters(), lr=config.lr)
    proposal = make_sampler("nolookahead", vocabulary, SamplerConfig(d=64)).to(batch.device)
    with torch.no_grad():
        paths = proposal.sample(batch, config.K, torch.Generator(batch.device).manual_seed(seed))
    B, K, L = paths.marks.shape
    marks, lengths, index = distinct_strings(paths.marks.reshape(B * K, L))
    times = []
    for _ in range(repeat + 1):
        t0 = _clock(batch.device)
        log_p, smoothed = scorer.log_prob_smoothed(marks, lengths, config.label_smoothing)
        loss = iwae_loss(
            log_p[index].view(B, K).detach(), paths.log_q, surrogate=smoothed[index].view(B, K)
        )
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(scorer.parameters(), config.grad_clip)
        opt.step()
        times.append(_clock(batch.device) - t0)
    return 1000 * statistics.median(times[1:])


def _triple_ms(scorer, T, lattices, device: torch.device, seed: int) -> dict:
    """What sleep training adds per triple (``nfst.train.triples``): drawing a mark string
    from the scorer and reading it off T (this untrained scorer's strings are rarely paths:
    divide by the acceptance of a trained one), and compiling a lattice of a training pair
    (done in a background process while the sampler steps)."""
    reader, n = MarkReader(T), 512
    t0 = time.perf_counter()
    strings = draw_strings(scorer, n, 400, torch.Generator(device).manual_seed(seed), device)
    for ids in strings:
        if ids is not None:
            reader.readings(tuple(T.mark_alphabet[m] for m in ids))
    drawn = 1000 * (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for lat in lattices:
        compile_lattice(T, lat.x, lat.y)
    compiled = 1000 * (time.perf_counter() - t0) / len(lattices)
    return {"ms_per_string_drawn": round(drawn, 3), "ms_per_lattice_compiled": round(compiled, 1)}


def _clock(device: torch.device) -> float:
    """Wall-clock on a GPU (synchronised), this process's CPU time on a CPU (one thread, so
    the same on an idle machine, and not inflated by other processes on a shared one)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return time.perf_counter()
    return time.process_time()


class _Stepper:
    """Training steps of one sampler, timed by ``_clock``; ``count`` takes one more step to
    count its operators."""

    def __init__(self, sampler, scorer, batch: LatticeBatch, k: int, seed: int):
        torch.manual_seed(seed)
        self.device = batch.device
        self.sampler = sampler.to(self.device).train()
        self.scorer, self.batch, self.k = scorer, batch, k
        self.opt = torch.optim.Adam(self.sampler.parameters(), lr=1e-5)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.totals: list[float] = []
        self.scoring: list[float] = []
        self.sleeps: list[float] = []
        with torch.no_grad():  # the sleep step's "triples": one path per pair
            self.arcs = sampler.sample(batch, 1, self.generator).arcs
        self.ops = self.syncs = 0

    def step(self, sleep: bool = False) -> None:
        t0 = _clock(self.device)
        if sleep:
            self.sleep_step()
            self.sleeps.append(_clock(self.device) - t0)
            return
        t1, t2 = self.train_step()
        self.totals.append(_clock(self.device) - t0)
        self.scoring.append(t2 - t1)

    def sleep_step(self) -> None:
        """A step of maximum likelihood on given paths (the sleep phase's step)."""
        with cpu_threads(self.device):
            loss = -self.sampler.score(self.batch, self.arcs).mean()
            self.opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.sampler.parameters(), 5.0)
            self.opt.step()

    def count(self) -> None:
        with OpCounter() as counter:
            self.train_step()
        self.ops, self.syncs = counter.ops, counter.syncs

    def train_step(self) -> tuple[float, float]:
        """One training step; the clock before and after the scorer's forward pass."""
        with cpu_threads(self.device):
            paths = self.sampler.sample(self.batch, self.k, self.generator)
            t1 = _clock(self.device)
            with torch.no_grad():
                log_p = self.scorer.score_paths(paths)
            t2 = _clock(self.device)
            loss = inclusive_kl_loss(log_p, paths.log_q)
            self.opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.sampler.parameters(), 5.0)
            self.opt.step()
        return t1, t2


if __name__ == "__main__":
    emit(bench_step())
