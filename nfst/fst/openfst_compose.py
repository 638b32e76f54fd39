"""Mark-concatenating composition through OpenFst: ``compose_openfst(A, B)`` has the same paths as
``A.compose(B)`` in Python, and is much faster on large topologies (``nfst bench compose``).

Each MFST becomes a Pynini transducer whose matched tape is the shared middle alphabet (A's
output, B's input) and whose other tape carries one label per distinct (symbol, marks) pair of
A's input side or B's output side. OpenFst composes them; a result arc with labels
(code_A(a, ω1), code_B(c, ω2)) is the MFST arc a:c/ω1ω2. The ``alt_sequence`` filter lets B's
lone (ε-input) moves go before A's lone (ε-output) moves between two matched moves and never
after, exactly the order ``MarkedFST.compose`` keeps, so both give the same mark strings.
"""

from __future__ import annotations

import numpy as np
import pynini

from .from_openfst import read_fst
from .mfst import Arc, MarkedFST
from .to_openfst import states_of


def compose_openfst(A: MarkedFST, B: MarkedFST) -> MarkedFST:
    """A ∘ B with marks concatenated (A's then B's); arcs carry ≤ 1 symbol per tape."""
    A.require_single_symbols("compose")
    B.require_single_symbols("compose")
    middle = {
        s: k + 1 for k, s in enumerate(sorted(set(A.output_alphabet) | set(B.input_alphabet)))
    }
    side_a: dict[tuple, int] = {((), ()): 0}  # (input, marks) of A's arcs -> label (0 = ε)
    side_b: dict[tuple, int] = {((), ()): 0}  # (output, marks) of B's arcs -> label
    fa = _encode(
        A,
        lambda a: (
            side_a.setdefault((a.input, a.marks), len(side_a)),
            middle[a.output[0]] if a.output else 0,
        ),
    )
    fb = _encode(
        B,
        lambda a: (
            middle[a.input[0]] if a.input else 0,
            side_b.setdefault((a.output, a.marks), len(side_b)),
        ),
    )
    fa.arcsort("olabel")
    fb.arcsort("ilabel")
    composed = read_fst(pynini.compose(fa, fb, compose_filter="alt_sequence", connect=True))
    name = f"({A.name} o {B.name})"
    num = len(composed.final)
    if num == 0:
        return MarkedFST(name)
    new = np.arange(num)  # the start becomes state 0
    new[[0, composed.start]] = new[[composed.start, 0]]
    decode_a, decode_b = list(side_a), list(side_b)
    arcs = [
        Arc(q, r, decode_a[i][0], decode_b[o][0], decode_a[i][1] + decode_b[o][1])
        for q, i, o, r in zip(
            new[composed.src].tolist(),
            composed.ilabel.tolist(),
            composed.olabel.tolist(),
            new[composed.dst].tolist(),
        )
    ]
    finals = new[np.flatnonzero(np.isfinite(composed.final))].tolist()
    return MarkedFST.from_arcs(num, finals, arcs, name)


def _encode(T: MarkedFST, labels) -> pynini.Fst:
    """T as a Pynini transducer whose arc for MFST arc ``a`` has labels ``labels(a)``."""
    fst, one = states_of(T)
    for a in T.arcs:
        i, o = labels(a)
        fst.add_arc(a.src, pynini.Arc(i, o, one, a.dst))
    return fst
