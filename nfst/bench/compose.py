"""``nfst bench compose``: mark-concatenating composition of two topologies of about 10⁴ arcs,
in Python (``MarkedFST.compose``) and through OpenFst (``compose_openfst``, encoding
and decoding included), checked to accept the same labelled paths.

Each topology chooses one of 10 substitution ciphers of a 1,000-letter alphabet (an ε arc
marked ``cipher_i``, then loops ``replace a c_i(a)``): 10,010 arcs. The second reads what the
first writes, so the composition has 100 cipher pairs × 1,000 letters."""

from __future__ import annotations

import time

import pynini

from ..fst.mfst import MarkedFST
from ..fst.openfst_compose import compose_openfst
from ..fsts.cipher import cipher_selector, substitution_ciphers


def bench_compose(letters: int = 1000, ciphers: int = 10) -> dict:
    alphabet = [f"s{k}" for k in range(letters)]
    A = cipher_selector(substitution_ciphers(alphabet, ciphers, seed=0))
    B = cipher_selector(substitution_ciphers(alphabet, ciphers, seed=1), replace="again")
    t = time.perf_counter()
    python = A.compose(B)
    python_s = time.perf_counter() - t
    t = time.perf_counter()
    openfst = compose_openfst(A, B)
    openfst_s = time.perf_counter() - t
    if not _same_paths(python, openfst):
        raise RuntimeError("the two compositions have different paths")
    return {
        "bench": "compose",
        "arcs": [len(A.arcs), len(B.arcs)],
        "python_states": python.num_states,
        "python_arcs": len(python.arcs),
        "openfst_states": openfst.num_states,
        "openfst_arcs": len(openfst.arcs),
        "python_ms": 1e3 * python_s,
        "openfst_ms": 1e3 * openfst_s,
        "speedup": python_s / openfst_s,
    }


def _same_paths(S: MarkedFST, T: MarkedFST) -> bool:
    """Whether S and T, read as acceptors of (input, output, marks) arc labels, accept the
    same strings (determinized, then OpenFst's equivalence test). The two compositions
    keep different filter states, so their sizes may differ."""
    labels: dict = {}
    acceptors = []
    for U in (S, T):
        fst = pynini.Fst()
        fst.add_states(U.num_states)
        fst.set_start(U.start)
        for q in U.finals:
            fst.set_final(q)
        for a in U.arcs:
            k = labels.setdefault((a.input, a.output, a.marks), len(labels) + 1)
            fst.add_arc(a.src, pynini.Arc(k, k, pynini.Weight.one("tropical"), a.dst))
        acceptors.append(fst)
    return pynini.equivalent(*(pynini.determinize(a) for a in acceptors))
