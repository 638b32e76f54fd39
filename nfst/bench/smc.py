"""SMC over cipher test lattices (``nfst bench smc``): 16 pairs × 64 particles by default.

One run of :func:`nfst.smc.engine.smc` — proposal, scorer, learned lookahead, adaptive
resampling — over the first ``pairs`` lattices of the cipher task's test split (synthetic: no
data needed), with untrained models of the ``small`` preset's sizes (sampler d = 64, LSTM
scorer hidden 64; the timing does not depend on training). ``seconds`` is the median of
``repeat`` runs after a warm-up run.

    python -m nfst.bench.smc            # prints the JSON object as its last line
"""

from __future__ import annotations

import argparse

import torch

from ..dp.batch import LatticeBatch
from ..models.samplers import SamplerConfig, Vocabulary, make_sampler
from ..models.scorer import LSTMScorer
from ..smc.engine import SMCConfig, smc
from ..smc.lookahead import LearnedLookahead
from ..tasks import get_task
from .common import cipher_lattices, emit, median_seconds


def bench_smc(
    pairs: int = 16,
    particles: int = 64,
    sampler: str = "swp",
    d: int = 64,
    scorer_hidden: int = 64,
    resampling: str = "systematic",
    repeat: int = 3,
    device: str = "cpu",
    seed: int = 0,
) -> dict:
    """Time SMC with ``particles`` particles on each of ``pairs`` cipher test lattices."""
    device = torch.device(device)
    T = get_task("cipher").mfst()
    lats = cipher_lattices(pairs, split="test")
    batch = LatticeBatch(lats, device)
    vocab = len(lats[0].mark_vocab)
    torch.manual_seed(seed)
    proposal = make_sampler(sampler, Vocabulary.of(T), SamplerConfig(d=d)).to(device).eval()
    scorer = LSTMScorer(vocab, scorer_hidden).to(device).freeze()
    lookahead = LearnedLookahead(vocab).to(device).eval()
    config = SMCConfig(particles=particles, resample_threshold=0.5, resampling=resampling)
    generator = torch.Generator(device=device).manual_seed(seed)
    steps = []

    def run() -> None:
        with torch.no_grad():
            result = smc(batch, proposal, scorer, lookahead, config, generator)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        steps.append(result.ess.shape[1])

    seconds = median_seconds(run, repeat)
    return {
        "pairs": len(lats),
        "particles": particles,
        "seconds": round(seconds, 4),
        "steps": steps[-1],
        "sampler": sampler,
        "d": d,
        "scorer_hidden": scorer_hidden,
        "states": batch.num_states,
        "device": str(device),
        "threads": torch.get_num_threads(),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=16)
    p.add_argument("--particles", type=int, default=64)
    p.add_argument("--sampler", default="swp")
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--scorer-hidden", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    emit(
        bench_smc(
            args.pairs,
            args.particles,
            args.sampler,
            args.d,
            args.scorer_hidden,
            repeat=args.repeat,
            device=args.device,
        )
    )


if __name__ == "__main__":
    main()
