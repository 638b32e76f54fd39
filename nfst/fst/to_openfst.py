"""Writing nfst objects as OpenFst (Pynini) FSTs: a marked FST as a Pynini transducer
(:func:`to_pynini`), a lattice as a weighted acceptor (:func:`lattice_to_fst`), and the states of
a marked FST for the encodings that add their own arcs (:func:`states_of`). The other direction
is ``nfst.fst.from_openfst``.

:func:`to_pynini` writes the encoding ``OutputMarks`` reads back. One symbol table on both tapes;
an MFST arc (a₁…aₙ, b₁…bₘ, ω₁…ω_k) becomes a chain of max(n, m) + k arcs: aₜ:bₜ (ε pads the
shorter tape), then ε:``prefix + ωⱼ`` for each mark. ``from_pynini(to_pynini(T),
marks=OutputMarks())`` has the paths of T, with their inputs, outputs and marks.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pynini

from ..errors import InvalidMFSTError
from .lattice import Lattice
from .mfst import MarkedFST


def states_of(T: MarkedFST) -> tuple[pynini.Fst, pynini.Weight]:
    """A Pynini FST with T's states, start and final states (weight one), and no arcs yet;
    and that weight one, for the arcs to come."""
    fst = pynini.Fst()
    fst.add_states(T.num_states)
    fst.set_start(T.start)
    one = pynini.Weight.one(fst.weight_type())
    for q in T.finals:
        fst.set_final(q, one)
    return fst, one


def to_pynini(T: MarkedFST, prefix: str = "@") -> pynini.Fst:
    """T as a Pynini transducer, marks on the output tape (see the module docstring)."""
    table = pynini.SymbolTable()
    table.add_symbol("<epsilon>", 0)
    for s in sorted(set(T.input_alphabet) | set(T.output_alphabet)):
        table.add_symbol(s)
    for m in T.mark_alphabet:
        if table.member(prefix + m):
            raise InvalidMFSTError(
                f"{T.name}: the mark {m!r} written {prefix + m!r} is also a symbol",
                "pass another prefix",
            )
        table.add_symbol(prefix + m)
    fst, one = states_of(T)

    def label(s: str) -> int:
        return table.find(s) if s else 0

    for arc in T.arcs:
        width = max(len(arc.input), len(arc.output))
        pairs = [
            (
                label(arc.input[t] if t < len(arc.input) else ""),
                label(arc.output[t] if t < len(arc.output) else ""),
            )
            for t in range(width)
        ]
        pairs += [(0, table.find(prefix + m)) for m in arc.marks]
        prev = arc.src
        for t, (i, o) in enumerate(pairs or [(0, 0)]):
            nxt = arc.dst if t == max(len(pairs), 1) - 1 else fst.add_state()
            fst.add_arc(prev, pynini.Arc(i, o, one, nxt))
            prev = nxt
    fst.set_input_symbols(table)
    fst.set_output_symbols(table)
    return fst


def lattice_to_fst(
    lattice: Lattice, arc_weights: Optional[np.ndarray] = None, arc_type: str = "log64"
) -> pynini.Fst:
    """The lattice as a pynini acceptor over mark ids + 1 (0 is ε). ``arc_weights`` are
    log-space scores; OpenFst costs are their negation."""
    weights = np.zeros(lattice.num_arcs) if arc_weights is None else np.asarray(arc_weights)
    fst = pynini.Fst(arc_type)
    fst.add_states(lattice.num_states)
    fst.set_start(0)
    one = pynini.Weight.one(arc_type)
    for s in np.flatnonzero(lattice.final):
        fst.set_final(int(s), one)
    for a in range(lattice.num_arcs):
        label = int(lattice.arc_mark[a]) + 1
        fst.add_arc(
            int(lattice.arc_src[a]),
            pynini.Arc(
                label, label, pynini.Weight(arc_type, -float(weights[a])), int(lattice.arc_dst[a])
            ),
        )
    return fst
