"""Compile T_{x,y} = x ∘ T ∘ y, determinized over marks and minimized (003 §3; docs/design.md §3).

Recipe:
1. Encode T as a pynini transducer whose input tape is the mark tape and whose output tape is a
   tagged symbol stream (``x:a`` for input symbol a, ``y:b`` for output symbol b). An MFST arc
   with k ≥ 1 marks and n symbols becomes a chain of k arcs, one symbol on each of the first
   ones; where n > k the last mark carries the rest as one group label (e.g. a pair mark
   ``a:b``), which the alignment acceptor reads as one move and positions never split.
2. Compose with the alignment acceptor A_{x,y}, the (|x|+1)(|y|+1) grid accepting every
   interleaving of tagged x and tagged y; the result is x ∘ T ∘ y with marks on the input tape.
3. Remove ε:ε arcs and determinize as a functional transducer (output strings are
   string-semiring weights, 003 fn. 3).
4. Contract the ε-input chains determinization leaves behind when a residual output must be
   delayed: their symbols belong to the preceding mark arc, or to STOP at a final state.
5. Positions (i, j) of a state: the symbols consumed by the tagged outputs of any path to it,
   plus the longest common prefix of every output still to come ("as soon as possible").
6. Minimize the mark acceptor, merging only states at equal positions.

Determinization silently merges generating paths that share a mark string, so where T itself
lets two paths share one (checked once per MFST) the generating paths of each pair are
counted and compared with the lattice's paths.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pynini

from ..errors import (AmbiguousMFSTError, CyclicLatticeError, InvalidMFSTError,
                      LatticeTooLargeError, NoPathError, UnknownSymbolError)
from .export import LatticeExporter
from .lattice import Lattice
from .mfst import MarkedFST, Symbols, as_symbols
from .openfst import read_fst, states_of


@dataclass(frozen=True)
class CompileOptions:
    max_states: int = 200_000
    """Refuse lattices (and intermediate FSTs) with more states than this."""
    allow_cyclic: bool = False
    """Return cyclic lattices (flagged by ``Lattice.acyclic``) instead of raising."""


class _Encoding:
    """T as a pynini transducer over one shared symbol table (built once per MFST)."""

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
            symbols = [self.label[f"x:{a}"] for a in arc.input] + \
                      [self.label[f"y:{b}"] for b in arc.output]
            k = len(arc.marks)
            if symbols and k == 0:
                raise InvalidMFSTError(
                    f"{T.name}: arc {arc.src}->{arc.dst} has {len(symbols)} symbols but no "
                    "marks; each symbol needs a mark to ride on",
                    "add a mark to the arc (e.g. one naming its symbols)")
            if len(symbols) > k:  # the last mark carries the rest
                symbols[k - 1:] = [self.group(arc.input, arc.output, len(symbols) - k + 1)]
            if k == 0:
                fst.add_arc(arc.src, pynini.Arc(0, 0, one, arc.dst))
                continue
            prev = arc.src
            for i, mark in enumerate(arc.marks):
                nxt = arc.dst if i == k - 1 else fst.add_state()
                fst.add_arc(prev, pynini.Arc(self.label[mark], symbols[i] if i < len(symbols) else 0,
                                             one, nxt))
                prev = nxt
        self.emits = [()] + [(label,) for label in range(1, len(self.shape))]
        """What an arc with output label l emits (a shared tuple per label)."""
        fst.arcsort("olabel")
        self.fst = fst
        self.unambiguous = _marks_determine_paths(fst)
        """No two paths of T share a mark string, so no T_{x,y} needs its paths counted."""

    def group(self, xs: tuple[str, ...], ys: tuple[str, ...], n: int) -> int:
        """The label of the last ``n`` symbols of the tagged stream ``xs ys``."""
        skip = len(xs) + len(ys) - n
        key = (xs[skip:], ys[max(skip - len(xs), 0):])
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
                    if x[i:i + len(xs)] == xs and y[j:j + len(ys)] == ys:
                        acc.add_arc(s, pynini.Arc(label, label, one,
                                                  s + len(xs) * width + len(ys)))
        return acc


def compile_lattice(T: MarkedFST, x: Symbols, y: Symbols,
                    options: CompileOptions = CompileOptions()) -> Lattice:
    """Build the lattice T_{x,y} of every mark string of a generating path of (x, y).

    Raises UnknownSymbolError, NoPathError, AmbiguousMFSTError, CyclicLatticeError (unless
    ``options.allow_cyclic``) or LatticeTooLargeError; see ``nfst.errors``.
    """
    enc: _Encoding = T.derived("pynini-encoding", _Encoding)
    x, y = as_symbols(x), as_symbols(y)
    where = f"{T.name} on x={' '.join(x)!r}, y={' '.join(y)!r}"
    for tape, string, alphabet in (("input", x, enc.inputs), ("output", y, enc.outputs)):
        unknown = sorted(set(string) - alphabet)
        if unknown:
            raise UnknownSymbolError(f"{where}: {tape} symbols {unknown} are not in the MFST's "
                                     f"{tape} alphabet")

    composed = pynini.compose(enc.fst, enc.alignment_acceptor(x, y), connect=True)
    if composed.num_states() == 0:
        raise NoPathError(f"{where}: no generating path")
    if composed.num_states() > options.max_states:
        raise LatticeTooLargeError(f"{where}: x∘T∘y has {composed.num_states()} states "
                                   f"> max_states={options.max_states}")
    props = composed.properties(pynini.ACYCLIC | pynini.EPSILONS, True)
    acyclic = bool(props & pynini.ACYCLIC)
    num_generating = None  # counted where T itself might let two paths share marks
    if acyclic and not enc.unambiguous:
        composed.topsort()
        num_generating = _count_paths(composed)
    if props & pynini.EPSILONS:
        composed.rmepsilon()
        if not acyclic and composed.properties(pynini.ACYCLIC, True) == pynini.ACYCLIC:
            raise AmbiguousMFSTError(f"{where}: T has a cycle of ε arcs without marks, so "
                                     "infinitely many paths share each mark string")
    if not acyclic and not options.allow_cyclic:
        raise CyclicLatticeError(f"{where}: the lattice is cyclic (T has a loop that reads and "
                                 "writes nothing but marks)")

    try:
        with _openfst_messages() as messages:
            det = pynini.determinize(composed, nstate=options.max_states + 1)
    except pynini.FstOpError as exc:
        raise AmbiguousMFSTError(f"{where}: determinization failed; T is not functional "
                                 "(two paths share a mark string)") from exc
    if messages:  # OpenFst sometimes only complains on stderr and returns a broken FST
        raise AmbiguousMFSTError(f"{where}: determinization failed; T is not functional "
                                 f"(OpenFst: {messages[0]})")
    if det.num_states() > options.max_states:
        raise LatticeTooLargeError(f"{where}: determinized lattice exceeds "
                                   f"max_states={options.max_states}")
    if det.properties(pynini.ERROR, True) == pynini.ERROR:
        raise AmbiguousMFSTError(f"{where}: determinization failed (non-functional)")
    if acyclic:
        det.topsort()
    lattice, distinct = LatticeExporter(det, enc, where).lattice(x, y, acyclic)
    if num_generating is not None and distinct is not None:
        if distinct != num_generating:
            raise AmbiguousMFSTError(f"{where}: {num_generating} generating paths but only "
                                     f"{distinct} distinct mark strings")
    return lattice


def openfst_lattice(T: MarkedFST, x: Symbols, y: Symbols) -> pynini.Fst:
    """x ∘ T ∘ y determinized and minimized by OpenFst alone (docs/design.md §3, steps 1-3), without
    positions, contraction or checks: the reference that ``nfst bench compile`` times."""
    enc: _Encoding = T.derived("pynini-encoding", _Encoding)
    composed = pynini.compose(enc.fst, enc.alignment_acceptor(as_symbols(x), as_symbols(y)),
                              connect=True)
    return pynini.determinize(composed.rmepsilon()).minimize()


_stderr_sink = None


@contextmanager
def _openfst_messages():
    """Collect what OpenFst writes to the C-level stderr meanwhile, as a list of lines."""
    global _stderr_sink
    if _stderr_sink is None:
        _stderr_sink = tempfile.TemporaryFile()
    _stderr_sink.seek(0)
    _stderr_sink.truncate()
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(_stderr_sink.fileno(), 2)
    try:
        yield lines
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        _stderr_sink.seek(0)
        lines += _stderr_sink.read().decode(errors="replace").splitlines()


def _marks_determine_paths(fst: pynini.Fst, max_pairs: int = 2_000_000) -> bool:
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
    for k, (q, mark, r) in enumerate(zip(arrays.src.tolist(), arrays.ilabel.tolist(),
                                         arrays.dst.tolist())):
        numbered.add_arc(q, pynini.Arc(mark, k + 1, one, r))
    pairs = pynini.compose(numbered.copy().invert().arcsort("olabel"),
                           numbered.arcsort("ilabel"), connect=True)
    paired = read_fst(pairs)
    return bool((paired.ilabel == paired.olabel).all())


def _count_paths(fst: pynini.Fst) -> int:
    """Exact number of successful paths of a topologically sorted, connected FST."""
    arrays = read_fst(fst)
    dst = arrays.dst.tolist()
    offsets = np.searchsorted(arrays.src, np.arange(len(arrays.final) + 1)).tolist()
    count = np.isfinite(arrays.final).astype(np.int64).tolist()  # Python ints: no overflow
    for s in range(len(count) - 1, -1, -1):
        for t in dst[offsets[s]:offsets[s + 1]]:
            count[s] += count[t]
    return count[arrays.start]
