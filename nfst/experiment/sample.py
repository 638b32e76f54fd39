"""``nfst sample``: sampled alignments of one pair under a run's trained sampler, with their
importance weights, and the pair's lattice as a picture."""

from __future__ import annotations

from typing import Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..errors import NfstError, UnknownSymbolError
from ..evaluate.samplers import render_marks
from ..fst.compile import compile_lattice
from .picture import write_lattice_picture


def _listed(symbols: Sequence[str], most: int = 40) -> str:
    return " ".join(symbols[:most]) + (" ..." if len(symbols) > most else "")


def sample_pair(run, sampler_name: str, x: Sequence[str], y: Sequence[str], k: int = 8,
                dot: Optional[str] = None, png: Optional[str] = None) -> str:
    """A text table of k distinct-or-repeated samples with log q, log p̃ and normalised
    importance weights w̄ ∝ p̃/q."""
    try:
        lattice = compile_lattice(run.T, x, y)
    except UnknownSymbolError as exc:  # the generic hint is about data files; this is typed
        raise UnknownSymbolError(exc.args[0], f"{run.config.task} reads x over "
                                 f"{_listed(run.T.input_alphabet)} and y over "
                                 f"{_listed(run.T.output_alphabet)}") from None
    lines = [f"lattice: {lattice.num_states} states, {lattice.num_arcs} arcs, "
             f"{lattice.num_paths()} paths"]
    lines += [f"wrote {f}" for f in write_lattice_picture(lattice, dot, png)]
    if not (run.dir / "samplers" / f"{sampler_name}.pt").exists():
        raise NfstError(f"{run.dir} has no trained {sampler_name} sampler",
                        f"train it first (it joins the run's samplers): nfst train-sampler "
                        f"--run-dir {run.dir} --sampler {sampler_name}")
    sampler, scorer = run.sampler(sampler_name), run.scorer()
    batch = LatticeBatch([lattice], run.device)
    with torch.no_grad():
        paths = sampler.sample(batch, k, torch.Generator(device=run.device).manual_seed(0))
        log_p = scorer.score_paths(paths)[0].double().cpu()
    log_q = paths.log_q[0].double().cpu()
    weights = torch.softmax(log_p - log_q, 0)
    lines.append(f"{'w̄':>6} {'log q':>8} {'log p̃':>8}  marks ({sampler_name})")
    for i in torch.argsort(weights, descending=True).tolist():
        marks = render_marks(lattice, paths.arcs[0, i].tolist())
        lines.append(f"{weights[i]:6.3f} {log_q[i]:8.2f} {log_p[i]:8.2f}  {marks}")
    return "\n".join(lines)
