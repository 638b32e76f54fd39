"""What OpenFst computes on its own, for the benches and tests to check and time nfst against:
the bare compose-determinize-minimize of T_{x,y}, and the backward scores of a weighted lattice.
"""

from __future__ import annotations

import numpy as np
import pynini

from .compile_to_openfst import CompileEncoding
from .from_openfst import read_fst
from .lattice import Lattice
from .mfst import MarkedFST, Symbols, as_symbols
from .to_openfst import lattice_to_fst


def openfst_lattice(T: MarkedFST, x: Symbols, y: Symbols) -> pynini.Fst:
    """x ∘ T ∘ y determinized and minimized by OpenFst alone (docs/design.md §3, steps 1-3), without
    positions, contraction or checks: the reference that ``nfst bench compile`` times."""
    enc = CompileEncoding.of(T)
    composed = pynini.compose(
        enc.fst, enc.alignment_acceptor(as_symbols(x), as_symbols(y)), connect=True
    )
    return pynini.determinize(composed.rmepsilon()).minimize()


def reverse_shortest_distance(lattice: Lattice, arc_weights: np.ndarray) -> np.ndarray:
    """OpenFst's backward scores β (log-space, (S,)) of a weighted lattice, in float64.

    OpenFst pushes the weights towards the start (a reverse ShortestDistance in the log64
    semiring, then reweighting c'(a) = c(a) + d(dst) − d(src) with d = −β); we read both
    FSTs' exact costs and solve for d. A new super-start keeps the lattice's start ordinary.
    """
    fst = lattice_to_fst(lattice, arc_weights)
    top = fst.add_state()
    fst.add_arc(top, pynini.Arc(0, 0, pynini.Weight.one("log64"), 0))
    fst.set_start(top)
    pushed = read_fst(pynini.push(fst, push_weights=True, delta=1e-15))
    orig = read_fst(fst)
    # Arcs come out grouped by source in insertion order, identically in both FSTs.
    first = np.searchsorted(orig.src, np.arange(lattice.num_states)).tolist()
    ocost, pcost, dst = orig.cost.tolist(), pushed.cost.tolist(), orig.dst.tolist()
    d = [0.0] * lattice.num_states
    for s in range(lattice.num_states - 1, -1, -1):  # topological order: dst > src
        if np.isfinite(orig.final[s]):
            d[s] = orig.final[s] - pushed.final[s]
        else:
            a = first[s]
            d[s] = ocost[a] + d[dst[a]] - pcost[a]
    return -np.asarray(d)
