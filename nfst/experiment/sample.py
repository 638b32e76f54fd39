"""``nfst sample``: sampled alignments of one pair under a run's trained sampler, with their
importance weights, and the pair's lattice as a picture; or (:func:`export_samples`) every
pair of a split's k proposals, as JSON lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..errors import NfstError, UnknownSymbolError
from ..evaluate.drawing import draw
from ..evaluate.samplers import render_marks
from ..fst.compile import compile_lattice
from ..runtime.distributed import stream_seed
from ..runtime.storage import write_atomically
from .picture import write_lattice_picture

EVALUATION_STREAMS = {"test": "test", "dev": "validation"}
"""The random stream of the evaluation's draws on each split it samples."""


def _listed(symbols: Sequence[str], most: int = 40) -> str:
    return " ".join(symbols[:most]) + (" ..." if len(symbols) > most else "")


def _trained(run, sampler_name: str):
    """The run's trained sampler, or a clear error if it has none (rather than training it)."""
    if not (run.dir / "samplers" / f"{sampler_name}.pt").exists():
        raise NfstError(
            f"{run.dir} has no trained {sampler_name} sampler",
            f"train it first (it joins the run's samplers): nfst train-sampler "
            f"--run-dir {run.dir} --sampler {sampler_name}",
        )
    return run.sampler(sampler_name)


def export_samples(run, sampler_name: str, split: str, out: str | Path, k: int = 8) -> int:
    """Write k proposals of the sampler ``sampler_name`` for every pair of ``split`` (the
    run's compiled pairs, in order) to ``out``, one JSON object per pair::

        {"pair": i, "x": [...], "y": [...],
         "proposals": [{"marks": [...], "log_q": float, "log_p": float}, ...]}

    ``log_q``: log q(ω) of the proposal under the sampler, STOP included; ``log_p``: log
    p̃_θ(ω) under the run's scorer (unnormalised), so p̃/q are the importance weights. On
    test and dev the draws are from the random streams of the evaluation's test and
    validation draws (``nfst.experiment.evaluation``): with k = ``evaluate.k``, the very paths it
    scored. Returns the number of pairs written."""
    sampler, scorer = _trained(run, sampler_name), run.scorer()
    lattices, seed = run.lattices(split), run.training_seed(0)
    if split in EVALUATION_STREAMS:
        seed = stream_seed(seed, EVALUATION_STREAMS[split])
    samples = draw(
        sampler,
        scorer,
        lattices,
        k,
        seed=seed,
        device=run.device,
        progress=not run.quiet,
        desc=f"sample {split}",
    )
    lines = []
    for i, (lattice, pair) in enumerate(zip(lattices, samples)):
        proposals = [
            {
                "marks": list(lattice.marks_of([a for a in arcs if a >= 0])),
                "log_q": log_q,
                "log_p": log_p,
            }
            for arcs, log_q, log_p in zip(
                pair.arcs.tolist(), pair.log_q.tolist(), pair.log_p.tolist()
            )
        ]
        lines.append(
            json.dumps(
                {"pair": i, "x": list(lattice.x), "y": list(lattice.y), "proposals": proposals},
                ensure_ascii=False,
            )
        )
    write_atomically(out, ("\n".join(lines) + "\n").encode())
    return len(lines)


def sample_pair(
    run,
    sampler_name: str,
    x: Sequence[str],
    y: Sequence[str],
    k: int = 8,
    dot: Optional[str] = None,
    png: Optional[str] = None,
) -> str:
    """A text table of k distinct-or-repeated samples with log q, log p̃ and normalised
    importance weights w̄ ∝ p̃/q."""
    try:
        lattice = compile_lattice(run.T, x, y)
    except UnknownSymbolError as exc:  # the generic hint is about data files; this is typed
        alphabet = set(run.T.input_alphabet if exc.tape == "input" else run.T.output_alphabet)
        word = next((s for s in exc.symbols if len(s) > 1 and set(s) <= alphabet), None)
        raise UnknownSymbolError(
            exc.args[0],
            (f"symbols are separated by spaces: {' '.join(word)!r}, not {word!r}; " if word else "")
            + f"{run.config.task} reads x over {_listed(run.T.input_alphabet)} and y "
            f"over {_listed(run.T.output_alphabet)}",
        ) from None
    lines = [
        f"lattice: {lattice.num_states} states, {lattice.num_arcs} arcs, "
        f"{lattice.num_paths()} paths"
    ]
    lines += [f"wrote {f}" for f in write_lattice_picture(lattice, dot, png)]
    sampler, scorer = _trained(run, sampler_name), run.scorer()
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
