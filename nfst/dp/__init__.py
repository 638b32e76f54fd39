"""Dynamic programming on batches of lattices: exact, in any semiring, or randomized.

``batch``: the disjoint union of lattices as flat tensors with a level schedule;
``semiring``: log (sums) and max (Viterbi), with the segmented ⊕ the passes and SWP share;
``passes``: backward/forward passes, arc posteriors, exact sampling, path counts;
``randomized``: unbiased estimates of β, α and Z from a budget of each level's states (004 §3).
"""

from .batch import LatticeBatch
from .passes import (
    arc_posteriors,
    backward,
    forward,
    log_partition,
    log_path_count,
    sample,
    sample_paths,
    transition_log_probs,
)
from .randomized import randomized_backward, randomized_forward
from .selection import RDPConfig
from .semiring import LogSemiring, MaxSemiring, Semiring

__all__ = [
    "LatticeBatch",
    "LogSemiring",
    "MaxSemiring",
    "RDPConfig",
    "Semiring",
    "arc_posteriors",
    "backward",
    "forward",
    "log_partition",
    "log_path_count",
    "randomized_backward",
    "randomized_forward",
    "sample",
    "sample_paths",
    "transition_log_probs",
]
