"""Steps 1–2 of compiling T_{x,y} (``nfst.fst.compile``), written for OpenFst: T as a Pynini
transducer from marks to a tagged symbol stream, and the alignment acceptor A_{x,y} it is
composed with. Steps 4–6 read OpenFst's result back (``nfst.fst.compile_from_openfst``).
"""

from __future__ import annotations

import numpy as np
import pynini

from ..errors import InvalidMFSTError
from .from_openfst import read_fst
from .mfst import MarkedFST
from .to_openfst import states_of


class CompileEncoding:
    """T as a pynini transducer over one shared symbol table (built once per MFST: :meth:`of`)."""

    @classmethod
    def of(cls, T: MarkedFST) -> "CompileEncoding":
        """T's encoding, built on first use and kept with T."""
        return T.derived("pynini-encoding", cls)

    def __init__(self, T: MarkedFST):
        self.name = T.name
        self.marks = T.mark_alphabet
        self.inputs = frozenset(T.input_alphabet)
        self.outputs = frozenset(T.output_alphabet)
        # label 0 = ε; marks are 1..M so that lattice mark id = label - 1.
        tagged = [f"x:{a}" for a in T.input_alphabet] + [f"y:{b}" for b in T.output_alphabet]
        self.label = {m: i + 1 for i, m in enumerate(self.marks)}
        self.shape = [(0, 0)] * (len(self.marks) + 1)
        """(x symbols, y symbols) that output label l consumes."""
        for t in tagged:
            self.label[t] = len(self.shape)
            self.shape.append((1, 0) if t[0] == "x" else (0, 1))
        self.num_marks = len(self.marks)
        self.groups: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
        """Labels for several symbols that ride on one mark: (x symbols, y symbols) -> label."""

        fst, one = states_of(T)
        for arc in T.arcs:
            symbols = [self.label[f"x:{a}"] for a in arc.input] + [
                self.label[f"y:{b}"] for b in arc.output
            ]
            k = len(arc.marks)
            if symbols and k == 0:
                raise InvalidMFSTError(
                    f"{T.name}: arc {arc.src}->{arc.dst} has {len(symbols)} symbols but no "
                    "marks; each symbol needs a mark to ride on",
                    "add a mark to the arc (e.g. one naming its symbols)",
                )
            if len(symbols) > k:  # the last mark carries the rest
                symbols[k - 1 :] = [self.group(arc.input, arc.output, len(symbols) - k + 1)]
            if k == 0:
                fst.add_arc(arc.src, pynini.Arc(0, 0, one, arc.dst))
                continue
            prev = arc.src
            for i, mark in enumerate(arc.marks):
                nxt = arc.dst if i == k - 1 else fst.add_state()
                fst.add_arc(
                    prev,
                    pynini.Arc(self.label[mark], symbols[i] if i < len(symbols) else 0, one, nxt),
                )
                prev = nxt
        self.emits = [()] + [(label,) for label in range(1, len(self.shape))]
        """What an arc with output label l emits (a shared tuple per label)."""
        fst.arcsort("olabel")
        self.fst = fst
        self.unambiguous = marks_determine_paths(fst)
        """No two paths of T share a mark string, so no T_{x,y} needs its paths counted."""

    def group(self, xs: tuple[str, ...], ys: tuple[str, ...], n: int) -> int:
        """The label of the last ``n`` symbols of the tagged stream ``xs ys``."""
        skip = len(xs) + len(ys) - n
        key = (xs[skip:], ys[max(skip - len(xs), 0) :])
        if key not in self.groups:
            self.groups[key] = len(self.shape)
            self.shape.append((len(key[0]), len(key[1])))
        return self.groups[key]

    def alignment_acceptor(self, x: tuple[str, ...], y: tuple[str, ...]) -> pynini.Fst:
        """A_{x,y}: state i·(|y|+1)+j has read x[:i] and y[:j]; a group label moves by its
        symbols at once."""
        width = len(y) + 1
        n = (len(x) + 1) * width
        acc = pynini.Fst()
        acc.add_states(n)
        acc.set_start(0)
        one = pynini.Weight.one(acc.weight_type())
        acc.set_final(n - 1, one)
        xl = [self.label[f"x:{a}"] for a in x]
        yl = [self.label[f"y:{b}"] for b in y]
        for i in range(len(x) + 1):
            for j in range(width):
                s = i * width + j
                if i < len(x):
                    acc.add_arc(s, pynini.Arc(xl[i], xl[i], one, s + width))
                if j < len(y):
                    acc.add_arc(s, pynini.Arc(yl[j], yl[j], one, s + 1))
                for (xs, ys), label in self.groups.items():
                    if x[i : i + len(xs)] == xs and y[j : j + len(ys)] == ys:
                        acc.add_arc(s, pynini.Arc(label, label, one, s + len(xs) * width + len(ys)))
        return acc


def marks_determine_paths(fst: pynini.Fst, max_pairs: int = 2_000_000) -> bool:
    """Whether no two successful paths of ``fst`` share an input (mark) string.

    Numbering the arcs, the self-product synchronised on marks pairs every two paths with
    equal marks; two different paths meet off the pairs (a, a), so the FST is unambiguous iff
    every arc of the trimmed product pairs an arc with itself. ε inputs (marks-less arcs of
    T) would need ε-aware pairing, and a product that may exceed ``max_pairs`` arcs (Σ over
    marks of (arcs with that mark)²) costs more than it saves: both answer False, which only
    means that each T_{x,y} gets its paths counted.
    """
    arrays = read_fst(fst)
    if (arrays.ilabel == 0).any() or (np.bincount(arrays.ilabel) ** 2).sum() > max_pairs:
        return False
    numbered = pynini.Fst()
    numbered.add_states(len(arrays.final))
    numbered.set_start(arrays.start)
    one = pynini.Weight.one(numbered.weight_type())
    for q in np.flatnonzero(np.isfinite(arrays.final)).tolist():
        numbered.set_final(q, one)
    for k, (q, mark, r) in enumerate(
        zip(arrays.src.tolist(), arrays.ilabel.tolist(), arrays.dst.tolist())
    ):
        numbered.add_arc(q, pynini.Arc(mark, k + 1, one, r))
    pairs = pynini.compose(
        numbered.copy().invert().arcsort("olabel"), numbered.arcsort("ilabel"), connect=True
    )
    paired = read_fst(pairs)
    return bool((paired.ilabel == paired.olabel).all())
