"""Exact dynamic programming on batches of lattices, in any semiring.

``batch``: the disjoint union of lattices as flat tensors with a level schedule;
``semiring``: log (sums) and max (Viterbi), with the segmented ⊕ the passes and SWP share;
``passes``: backward/forward passes, arc posteriors, exact sampling, path counts.
"""

from .batch import LatticeBatch
from .passes import (arc_posteriors, backward, forward, log_partition, log_path_count, sample,
                     sample_paths, transition_log_probs)
from .semiring import LogSemiring, MaxSemiring, Semiring

__all__ = ["LatticeBatch", "LogSemiring", "MaxSemiring", "Semiring", "arc_posteriors",
           "backward", "forward", "log_partition", "log_path_count", "sample", "sample_paths",
           "transition_log_probs"]
