"""What a task knows of how its pairs were generated, as a test of a path (:class:`Structure`),
and the share of weighted paths that pass it. It lives beside the lattice, below evaluation,
so a task can name its structure without importing the evaluation layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor

from .lattice import Lattice


@dataclass
class Structure:
    """What a task knows of how its pairs were generated, as a test of a path: e.g. cipher's
    ``generating_cipher``, whether a path names the cipher that generated its pair."""

    name: str
    """The key its share is reported under (results carry it as ``structure``)."""
    agrees: Callable[[Lattice, Sequence[str]], bool]
    """Whether a path (its marks) of a lattice agrees with the pair's generating structure."""

    def share(self, lattice: Lattice, arcs: Tensor, weights: Tensor) -> float:
        """Σ_j weights_j · [path j agrees] for paths ``arcs`` (k, L), lattice-local, -1 padded,
        and weights (k,) summing to 1."""
        hits = [
            self.agrees(lattice, lattice.marks_of([a for a in row if a >= 0]))
            for row in arcs.tolist()
        ]
        return float((weights * torch.tensor(hits, dtype=weights.dtype)).sum())
