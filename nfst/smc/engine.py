"""Sequential Monte Carlo over lattice paths: particle filtering and smoothing (000 §4); the
beam-search baseline is in ``nfst.smc.beam``. See docs/design.md, "Particle smoothing".

For each lattice T_{x,y} of a batch, M particles walk the lattice together, one choice per
step, with any ``Sampler`` as the proposal q. Particle m carries an unnormalised weight

    w_0 = exp(C_0)
    w_t = w_{t-1} · p_θ(ω_t | ω_{<t}) · exp(C_t − C_{t-1}) / q(ω_t | ω_{<t})          (000:31)

where p_θ is the scorer's next-mark probability and C_t the lookahead (``nfst.smc.lookahead``).
STOP is a choice like any other: it multiplies p_θ(EOS | ω) / q(STOP | ω), and C = 0 once the
path is complete, so the product telescopes to w = p̃_θ(ω) / q(ω). A particle that stopped keeps
its weight and stays put while the others go on: particles finish at different lengths.

Resampling (adaptive, 000 fn. 9): after each step, the particles of a lattice whose effective
sample size falls below τ·M are replaced by M draws from their normalised weights (any scheme
of ``nfst.smc.resampling``) and get equal weights. The estimate of p̃(x, y) = Σ_ω p̃_θ(ω) is

    Ẑ = Π_{resampling steps r} mean_m(w_r^m) · mean_m(w_final^m),

unbiased in Ẑ (not in log Ẑ) for any τ; τ = 0 never resamples (sequential importance
sampling, Ẑ = the importance-sampling estimate). With the exact lookahead and the exact
proposal every increment is 1: all weights equal, ESS = M, Ẑ exact.

Shapes: B lattices, M particles per lattice (N = B·M walkers, lattice-major), T steps run,
L = longest final path. "Slot m at step t" is the m-th particle of its lattice after step t's
choice and before step t's resampling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ..dp.batch import LatticeBatch
from ..errors import PathTooLongError
from ..models.samplers.base import Sampler
from ..models.samplers.choices import choose
from ..models.scorer import Scorer
from ..runtime.threads import cpu_threads
from .lookahead import Lookahead, ZeroLookahead
from .resampling import ess, get_resampler, log_mean_exp


@dataclass
class SMCConfig:
    particles: int = 16
    """M, particles per lattice."""
    resample_threshold: float = 0.5
    """τ: resample a lattice's particles when their ESS < τ·M (000 fn. 9: ½); 0 never."""
    resampling: str = "multinomial"
    """A scheme of ``nfst.smc.resampling.RESAMPLERS``."""
    max_length: Optional[int] = None
    """Most marks a path may have; None: the batch's longest path."""


@dataclass
class Particles:
    """A weighted set of M complete paths per lattice: p̂(ω) ∝ Σ_{m: ω_m = ω} w_m (000:28)."""

    arcs: Tensor
    """(B, M, L) long: each particle's arcs, -1 after its end."""
    marks: Tensor
    """(B, M, L) long: their marks, -1 after the end."""
    lengths: Tensor
    """(B, M) long."""
    log_p: Tensor
    """(B, M) float64: log p̃_θ(ω_m), EOS included."""
    log_weights: Tensor
    """(B, M) float64: unnormalised log w_m (-inf for an empty slot)."""

    @property
    def weights(self) -> Tensor:
        """(B, M) normalised weights w̄."""
        return torch.softmax(self.log_weights, dim=-1)


@dataclass
class SMCResult(Particles):
    log_z: Tensor = None
    """(B,) log Ẑ, an estimate of log p̃(x, y) = log Σ_ω p̃_θ(ω); Ẑ is unbiased."""
    log_q: Tensor = None
    """(B, M) float64: log q of each particle's path along its ancestry."""
    step_log_p: Tensor = None
    """(B, M, L + 1) float64: log p_θ of each choice along the path (STOP last, 0 after)."""
    step_log_q: Tensor = None
    """(B, M, L + 1) float64: log q of each choice along the path (detached)."""
    ess: Tensor = None
    """(B, T) ESS after each step's reweighting, before its resampling."""
    resampled: Tensor = None
    """(B, T) bool: whether the lattice's particles were resampled after step t."""
    ancestors: Tensor = None
    """(B, T, M) long: after step t, slot m holds a copy of slot ancestors[b, t, m] (the
    identity when not resampled)."""
    step_arcs: Tensor = None
    """(B, T, M) long: the arc slot m took at step t, -1 for STOP or an ended particle."""
    step_choice_log_q: Tensor = None
    """(B, T, M): log q of slot m's choice at step t (0 once ended); keeps the sampler's
    gradient when SMC ran with gradients enabled (for ``nfst.train.nasmc``)."""
    filtering_log_weights: Tensor = None
    """(B, T, M) float64: normalised log w̃_t of slot m after step t's reweighting (002:1)."""


def _by_slot(steps: list[Tensor], B: int, M: int) -> Tensor:
    """T per-step records (N,) -> (B, T, M)."""
    return torch.stack(steps, 0).view(-1, B, M).transpose(0, 1)


def check_scorer(batch: LatticeBatch, scorer: Scorer) -> None:
    if scorer.vocab_size != len(batch.mark_vocab):
        raise ValueError(
            f"the scorer has {scorer.vocab_size} marks but the lattices' mark "
            f"vocabulary has {len(batch.mark_vocab)}: they come from different tasks"
        )


def smc(
    batch: LatticeBatch,
    sampler: Sampler,
    scorer: Scorer,
    lookahead: Optional[Lookahead] = None,
    config: Optional[SMCConfig] = None,
    generator: Optional[torch.Generator] = None,
) -> SMCResult:
    """Run SMC with M = ``config.particles`` particles on every lattice of ``batch``.

    ``sampler`` proposes (its log q keeps gradients if grad mode is on, for training from
    particles); ``scorer`` (p_θ) and ``lookahead`` (C, default 0: particle filtering) run
    without gradients. ``generator`` must live on the batch's device.

    Each step is a few dozen small tensor ops, so on CPU the run uses one intra-op thread
    (``nfst.runtime.threads``): on a busy 2-core machine two spinning threads made it 5-30×
    slower."""
    with cpu_threads(batch.device):
        return _smc(batch, sampler, scorer, lookahead, config, generator)


def _smc(batch, sampler, scorer, lookahead, config, generator) -> SMCResult:
    check_scorer(batch, scorer)
    sampler.check_batch(batch)
    config = config if config is not None else SMCConfig()
    lookahead = lookahead if lookahead is not None else ZeroLookahead()
    resample = get_resampler(config.resampling)
    B, M = batch.batch_size, config.particles
    N, dev, f64 = B * M, batch.device, torch.float64
    cap = batch.max_height if config.max_length is None else config.max_length
    stop_col = batch.out_arcs.shape[1]
    group = torch.arange(B, device=dev)[:, None] * M  # slot m of lattice b is walker b·M + m
    identity = torch.arange(M, device=dev).expand(B, M)

    context = sampler.prepare(batch)
    walk = sampler.start(batch, context, torch.arange(B, device=dev).repeat_interleave(M))
    with torch.no_grad():
        look_ctx = lookahead.prepare(batch)
        scorer_state = scorer.start(N)
        c_prev = lookahead(batch, look_ctx, walk).to(f64)
    log_w = c_prev.clone()  # w_0 = exp(C_0)
    log_z = torch.zeros(B, dtype=f64, device=dev)  # Σ log mean w over resampling steps
    log_p = torch.zeros(N, dtype=f64, device=dev)  # running log p̃ of each prefix
    log_q = torch.zeros(N, dtype=f64, device=dev)
    rec = {
        key: []
        for key in ("ess", "resampled", "ancestors", "arcs", "lp", "lq", "choice_lq", "filtering")
    }

    for _ in range(cap + 1):
        alive = walk.alive
        lq_all = sampler.log_probs(batch, context, walk)  # (N, D + 1)
        choice, arc = choose(batch, walk, lq_all, generator)
        with torch.no_grad():
            stop = choice == stop_col
            moving = alive & ~stop
            mark = torch.where(stop, scorer.eos, batch.arc_mark[arc.clamp(min=0)])
            step_lp = scorer.next_log_probs(scorer_state).gather(1, mark[:, None]).squeeze(1)
            scorer_state = scorer.advance(scorer_state, mark)  # unused for walkers that stop
        step_lq = lq_all.gather(1, choice[:, None]).squeeze(1)
        rec["choice_lq"].append(torch.where(alive, step_lq, torch.zeros_like(step_lq)))
        walk = sampler.advance(batch, context, walk, choice)
        with torch.no_grad():
            c_new = torch.where(moving, lookahead(batch, look_ctx, walk).to(f64), 0.0)
            lp = torch.where(alive, step_lp.to(f64), 0.0)
            lq = torch.where(alive, step_lq.detach().to(f64), 0.0)
            log_w = log_w + torch.where(alive, lp + c_new - c_prev - lq, 0.0)  # (000:31)
            c_prev = torch.where(alive, c_new, c_prev)
            log_p, log_q = log_p + lp, log_q + lq
            rec["arcs"].append(arc)
            rec["lp"].append(lp)
            rec["lq"].append(lq)

            grouped = log_w.view(B, M)
            step_ess = ess(grouped)
            rec["ess"].append(step_ess)
            rec["filtering"].append(grouped - torch.logsumexp(grouped, 1, keepdim=True))
            need = (step_ess < config.resample_threshold * M) & walk.alive.view(B, M).any(1)
            anc, index = identity, None
            if bool(need.any()):
                anc = torch.where(need[:, None], resample(grouped, generator), identity)
                log_z = log_z + torch.where(need, log_mean_exp(grouped), 0.0)
                log_w = torch.where(need[:, None], 0.0, grouped).view(N)
                index = (group + anc).view(N)
                scorer_state = scorer.select_state(scorer_state, index)
                c_prev, log_p, log_q = c_prev[index], log_p[index], log_q[index]
            rec["resampled"].append(need)
            rec["ancestors"].append(anc)
        if index is not None:  # outside no_grad: the sampler's hidden state keeps its graph
            walk = walk.select(index)
        if not bool(walk.alive.any()):
            break
    else:
        raise PathTooLongError(f"SMC: a particle exceeded max_length={cap} marks")

    with torch.no_grad():
        log_z = log_z + log_mean_exp(log_w.view(B, M))
    return _result(batch, rec, log_w.view(B, M), log_z, log_p.view(B, M), log_q.view(B, M))


def _result(
    batch: LatticeBatch,
    rec: dict[str, list[Tensor]],
    log_w: Tensor,
    log_z: Tensor,
    log_p: Tensor,
    log_q: Tensor,
) -> SMCResult:
    """The SMCResult of a finished run from the per-step records ``rec`` (each step's (N,)
    or (B, M) tensors) and the final (B, M) weights, log p̃ and log q, and (B,) log Ẑ: every
    final particle's path and per-step values, traced back through the ancestry. Only each
    step's log q of its choice keeps the sampler's gradient."""
    B, M = log_w.shape
    with torch.no_grad():
        ancestors = torch.stack(rec["ancestors"], 1)  # (B, T, M)
        step_arcs = _by_slot(rec["arcs"], B, M)
        path_arcs = trace(ancestors, step_arcs)  # (B, M, T)
        path_lp = trace(ancestors, _by_slot(rec["lp"], B, M))
        path_lq = trace(ancestors, _by_slot(rec["lq"], B, M))
        lengths = (path_arcs >= 0).sum(-1)
        L = int(lengths.max())
        arcs = path_arcs[..., :L]
    return SMCResult(
        arcs=arcs,
        marks=batch.marks_of(arcs),
        lengths=lengths,
        log_p=log_p,
        log_weights=log_w,
        log_z=log_z,
        log_q=log_q,
        step_log_p=path_lp[..., : L + 1],
        step_log_q=path_lq[..., : L + 1],
        ess=torch.stack(rec["ess"], 1),
        resampled=torch.stack(rec["resampled"], 1),
        ancestors=ancestors,
        step_arcs=step_arcs,
        step_choice_log_q=_by_slot(rec["choice_lq"], B, M),
        filtering_log_weights=torch.stack(rec["filtering"], 1),
    )


def trace(ancestors: Tensor, per_step: Tensor) -> Tensor:
    """Follow the ancestry back from the final particles.

    ``ancestors`` (B, T, M) as in :class:`SMCResult`; ``per_step`` (B, T, M) a value of each
    slot at each step (its arc, its log q, ...). Returns (B, M, T): the values along the
    ancestral path of each final particle m, so ``trace(r.ancestors, r.step_arcs)`` gives the
    particles' paths (-1 after each ends). Differentiable in ``per_step``."""
    B, T, M = ancestors.shape
    slot = torch.arange(M, device=ancestors.device).expand(B, M)
    out = []
    for t in range(T - 1, -1, -1):
        slot = ancestors[:, t].gather(1, slot)  # which slot at step t the particle descends from
        out.append(per_step[:, t].gather(1, slot))
    return torch.stack(out[::-1], dim=-1)
