"""The settings every sampler takes (:class:`SamplerConfig`): its sizes (003 App. D), its
dropout, SWP's budget, the longest path it may sample and whether it walks with static shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class SamplerConfig:
    """Sizes shared by all samplers (003 App. D: one hidden size d for every recurrent net)."""

    d: int = 256
    """Hidden size of the recurrent nets and of every embedding (mark, symbol, arc)."""
    dropout: float = field(default=0.3, metadata={"range": "[0, 1)"})
    """Dropout of the per-step activations, one mask per walker (``dropout.WalkDropout``),
    rounded to a multiple of 1/256; the encoders' dropout is plain."""
    budget: float = field(default=1.0, metadata={"range": "(0, 1]"})
    """SWP only: share of each level's states that Algorithm 1 evaluates (randomized, see
    ``swp_randomized``); 1 is exact."""
    max_length: Optional[int] = None
    """Most marks a sampled path may have; None: the batch's longest path (acyclic lattices
    cannot go further, so the cap is never hit)."""
    static_walk: Optional[bool] = None
    """Whether sampling walks with static shapes, every step replaying one CUDA graph on a
    GPU (``graph``; samplers that score in one pass only). None: on a GPU, not on a CPU
    (where the eager walk skips the walkers without a choice, which is faster)."""
