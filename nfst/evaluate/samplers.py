"""Evaluating samplers against a frozen scorer on held-out pairs (003 §4–5, Table 7).

For each pair (x, y) we draw k paths z_1..z_k ~ q_φ(· | x, y) and score them under both q_φ and
p̃_θ (``nfst.evaluate.drawing``), then average the metrics of ``nfst.evaluate.metrics`` over
pairs, with standard errors: partial KL (003:7; nats, lower is better; samplers are only
comparable on the same scorer),
deduplicated ESS (003 Table 7) and the expected mark length under p (003 Fig. 4b), both from
the self-normalised importance weights p̃/q, whose Pareto k̂ is reported beside them
(``nfst.evaluate.pareto``: nan below 21 samples per pair or where the tail is fewer than 5
distinct paths, repeated; unreliable above min(1 − 1/log₁₀ k, 0.7) for k samples per pair);
and a few qualitative proposals (003 Tables 4–6): the highest-weight sample of the first
pairs, and the most probable (highest log q) of the first pair's k samples.
Without replacement (:func:`summarize_distinct`): k *distinct* paths per pair by stochastic
beam search (``nfst.smc.without_replacement``), weighted by priority sampling; their
deduplicated ESS beside the with-replacement one, and the unbiased partial-KL estimate.

Samplers evaluated on the same pairs are best compared pair by pair: :func:`paired_difference`
gives the mean difference of two samplers' partial KL with the standard error of the paired
differences, much smaller than either sampler's own standard error when pairs vary a lot.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..fst.structure import Structure
from ..models.samplers.base import Sampler
from ..models.scorer import Scorer
from ..runtime.distributed import item_seed, shared_map
from ..smc import without_replacement as wor
from . import metrics
from .drawing import PairSamples, draw, eval_mode
from .metrics import mean_and_se
from .pareto import nonzero_weights, pareto_k, pareto_summary
from .tables import text_table


def render_marks(lattice: Lattice, arcs: Sequence[int]) -> str:
    """A path's marks, space-separated (the default rendering of proposals)."""
    return " ".join(lattice.marks_of([a for a in arcs if a >= 0]))


def _shown(
    samples: PairSamples, lattice: Lattice, j: int, render: Callable[[Lattice, Sequence[int]], str]
) -> dict:
    """Sample j of a pair as the report shows it: x, y, the rendered path, log q, log p̃."""
    return {
        "x": " ".join(lattice.x),
        "y": " ".join(lattice.y),
        "proposal": render(lattice, samples.arcs[j].tolist()),
        "log_q": float(samples.log_q[j]),
        "log_p": float(samples.log_p[j]),
    }


def summarize(
    samples: Sequence[PairSamples],
    lattices: Sequence[Lattice],
    examples: int = 3,
    render: Callable[[Lattice, Sequence[int]], str] = render_marks,
    structure: Optional[Structure] = None,
) -> dict:
    """The metrics of the module docstring for one sampler, as a JSON-serialisable dict; with
    ``structure``, also the share of its samples that agree with it (``structure.name``,
    mean ± SE over pairs; ``per_pair_share``, P values). ``examples``: the highest-weight
    sample of each of the first ``examples`` pairs; with any, also ``most_probable``: the
    sample of highest log q among the k of the first pair (003 Tables 4–6 set samplers'
    proposals for one pair side by side)."""
    per_pair = [float(metrics.partial_kl(s.log_q, s.log_p)) for s in samples]
    log_w = [s.log_p - s.log_q for s in samples]
    kl, kl_se = mean_and_se(per_pair)
    ess, ess_se = mean_and_se([float(metrics.dedup_ess(w, s.arcs)) for w, s in zip(log_w, samples)])
    length, length_se = mean_and_se(
        [float(metrics.expected_length(w, s.lengths)) for w, s in zip(log_w, samples)]
    )
    reliability = pareto_summary([pareto_k(w) for w in log_w], [nonzero_weights(w) for w in log_w])
    shown = [
        _shown(s, lat, int(torch.argmax(s.log_p - s.log_q)), render)
        for s, lat in list(zip(samples, lattices))[:examples]
    ]
    out = {
        "partial_kl": kl,
        "partial_kl_se": kl_se,
        "ess": ess,
        "ess_se": ess_se,
        "expected_length": length,
        "expected_length_se": length_se,
        "pareto_k": reliability["mean"],
        "pareto_k_over_threshold": reliability["over_threshold"],
        "pareto_k_summary": reliability,
        "examples": shown,
        "per_pair_partial_kl": per_pair,
    }
    if examples:
        out["most_probable"] = _shown(
            samples[0], lattices[0], int(torch.argmax(samples[0].log_q)), render
        )
    if structure is not None:
        out["per_pair_share"] = [
            structure.share(
                lat, s.arcs, torch.full((len(s.arcs),), 1 / len(s.arcs), dtype=torch.float64)
            )
            for s, lat in zip(samples, lattices)
        ]
        out[structure.name], out[f"{structure.name}_se"] = mean_and_se(out["per_pair_share"])
    return out


@torch.no_grad()
def summarize_distinct(
    sampler: Sampler,
    scorer: Scorer,
    lattices: Sequence[Lattice],
    k: int,
    batch_size: int = 16,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> dict:
    """Dedup ESS and partial KL (mean ± SE over pairs) from k distinct paths per pair. Each
    minibatch draws from its own generator, so under torchrun the ranks share them, as in
    :func:`draw` (a collective then)."""
    device = torch.device(device)
    starts = list(range(0, len(lattices), batch_size))

    def one_batch(i: int) -> tuple[list[float], list[float]]:
        batch = LatticeBatch(lattices[starts[i] : starts[i] + batch_size], device)
        generator = torch.Generator(device=device).manual_seed(item_seed(seed, i))
        p = wor.distinct_particles(sampler, scorer, batch, k, generator)
        return (
            metrics.dedup_ess(p.log_weights).tolist(),
            metrics.partial_kl(p.sample.log_q, p.log_p, p.sample.log_inclusion).tolist(),
        )

    with eval_mode(sampler, scorer):
        done = shared_map(one_batch, range(len(starts)))
    (e, e_se), (m, m_se) = (mean_and_se([v for part in done for v in part[j]]) for j in (0, 1))
    return {"ess_wor": e, "ess_wor_se": e_se, "partial_kl_wor": m, "partial_kl_wor_se": m_se}


def evaluate(
    samplers: Mapping[str, Sampler],
    scorer: Scorer,
    lattices: Sequence[Lattice],
    *,
    k: int = 16,
    batch_size: int = 16,
    seed: int = 0,
    device: torch.device | str = "cpu",
    examples: int = 3,
    render: Callable[[Lattice, Sequence[int]], str] = render_marks,
    quiet: bool = False,
    without_replacement: bool = True,
    structure: Optional[Structure] = None,
) -> dict:
    """Evaluate each sampler on ``lattices`` (held-out pairs) with k samples per pair.

    Returns a JSON-serialisable dict::

        {"pairs": P, "k": k, "seed": seed,
         "samplers": {name: {"partial_kl", "partial_kl_se", "ess", "ess_se",
                             "expected_length", "expected_length_se",
                             "pareto_k", "pareto_k_over_threshold", "pareto_k_summary",
                             "examples": [{"x", "y", "proposal", "log_q", "log_p"}, ...],
                             "per_pair_partial_kl": [P values, for paired comparisons],
                             "most_probable": {"x", "y", "proposal", "log_q", "log_p"}}}}
        (``most_probable`` where ``examples`` > 0)

    With ``without_replacement`` each sampler also gets ``ess_wor``, ``ess_wor_se``,
    ``partial_kl_wor`` and ``partial_kl_wor_se`` (:func:`summarize_distinct`); with
    ``structure``, the share of its samples that agree with it (:func:`summarize`).

    Every sampler gets the same seed, so the comparison does not depend on evaluation order.
    """
    if not lattices:
        raise ValueError("evaluate needs at least one lattice")
    result = {"pairs": len(lattices), "k": k, "seed": seed, "samplers": {}}
    for name, sampler in samplers.items():
        samples = draw(
            sampler,
            scorer,
            lattices,
            k,
            batch_size=batch_size,
            seed=seed,
            device=device,
            progress=not quiet,
            desc=f"evaluate {name}",
        )
        result["samplers"][name] = summarize(samples, lattices, examples, render, structure)
        if without_replacement:
            result["samplers"][name] |= summarize_distinct(
                sampler, scorer, lattices, k, batch_size, seed, device
            )
    return result


def paired_difference(result: dict, a: str, b: str) -> tuple[float, float]:
    """Mean and standard error over pairs of partial KL(a) − partial KL(b)."""
    pa = result["samplers"][a]["per_pair_partial_kl"]
    pb = result["samplers"][b]["per_pair_partial_kl"]
    return mean_and_se([x - y for x, y in zip(pa, pb)])


def format_table(result: dict) -> str:
    """An aligned text table of :func:`evaluate`'s result."""
    rows = [("sampler", "partial KL", "± se", "ESS", "ESS w/o repl.", "E_p|z|")]
    for name, m in result["samplers"].items():
        rows.append(
            (
                name,
                f"{m['partial_kl']:.2f}",
                f"{m['partial_kl_se']:.2f}",
                f"{m['ess']:.2f}",
                f"{m['ess_wor']:.2f}" if "ess_wor" in m else "–",
                f"{m['expected_length']:.1f}",
            )
        )
    return f"{result['pairs']} pairs, k = {result['k']}\n" + text_table(rows)
