"""Compile T_{x,y} = x ∘ T ∘ y, determinized over marks and minimized (003 §3, DESIGN §2).

Recipe:
1. Encode T as a pynini transducer whose input tape is the mark tape and whose output tape is a
   tagged symbol stream (``x:a`` for input symbol a, ``y:b`` for output symbol b). An MFST arc
   with k marks and n ≤ k symbols becomes a chain of k arcs, the symbols on the first n.
2. Compose with the alignment acceptor A_{x,y}, the (|x|+1)(|y|+1) grid accepting every
   interleaving of tagged x and tagged y; the result is x ∘ T ∘ y with marks on the input tape.
3. Remove ε:ε arcs and determinize as a functional transducer (output strings are
   string-semiring weights, 003 fn. 3).
4. Contract the ε-input chains determinization leaves behind when a residual output must be
   delayed: their symbols belong to the preceding mark arc, or to STOP at a final state.
5. Positions (i, j) of a state: the symbols consumed by the tagged outputs of any path to it,
   plus the longest common prefix of every output still to come ("as soon as possible").
6. Minimize the mark acceptor, merging only states at equal positions.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
import numpy as np
import pynini

from .errors import (AmbiguousMFSTError, CyclicLatticeError, InvalidMFSTError,
                     LatticeTooLargeError, NoPathError, UnknownSymbolError)
from .interop import read_fst
from .lattice import Lattice
from .mfst import MarkedFST, Symbols, as_symbols


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
        self.label = {m: i + 1 for i, m in enumerate(self.marks)}
        tagged = [f"x:{a}" for a in T.input_alphabet] + [f"y:{b}" for b in T.output_alphabet]
        for t in tagged:
            self.label[t] = len(self.label) + 1
        self.num_marks = len(self.marks)
        self.is_x = [0] * (len(self.label) + 1)
        for t in tagged:
            self.is_x[self.label[t]] = int(t[0] == "x")

        fst = pynini.Fst()
        fst.add_states(T.num_states)
        fst.set_start(T.start)
        one = pynini.Weight.one(fst.weight_type())
        for q in T.finals:
            fst.set_final(q, one)
        for arc in T.arcs:
            symbols = [self.label[f"x:{a}"] for a in arc.input] + \
                      [self.label[f"y:{b}"] for b in arc.output]
            k = len(arc.marks)
            if len(symbols) > k:
                raise InvalidMFSTError(
                    f"{T.name}: arc {arc.src}->{arc.dst} has {len(symbols)} symbols but "
                    f"{k} marks; each symbol needs a mark to ride on",
                    "add marks to the arc (e.g. one per symbol) or split it into a chain")
            if k == 0:
                fst.add_arc(arc.src, pynini.Arc(0, 0, one, arc.dst))
                continue
            prev = arc.src
            for i, mark in enumerate(arc.marks):
                nxt = arc.dst if i == k - 1 else fst.add_state()
                fst.add_arc(prev, pynini.Arc(self.label[mark], symbols[i] if i < len(symbols) else 0,
                                             one, nxt))
                prev = nxt
        fst.arcsort("olabel")
        self.fst = fst

    def alignment_acceptor(self, x: tuple[str, ...], y: tuple[str, ...]) -> pynini.Fst:
        """A_{x,y}: state i·(|y|+1)+j has read x[:i] and y[:j]."""
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
    num_generating = None
    if props & pynini.ACYCLIC:
        composed.topsort()
        num_generating = _count_paths(composed)
    if props & pynini.EPSILONS:
        composed.rmepsilon()
    acyclic = composed.properties(pynini.ACYCLIC, True) == pynini.ACYCLIC
    if not acyclic and not options.allow_cyclic:
        raise CyclicLatticeError(f"{where}: the lattice is cyclic (T has a loop that reads and "
                                 "writes nothing but marks)")
    if acyclic and num_generating is None:
        raise AmbiguousMFSTError(f"{where}: T has a cycle of ε arcs without marks, so "
                                 "infinitely many paths share each mark string")

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
    lattice = _Exporter(det, enc, where).lattice(x, y, acyclic)
    if num_generating is not None and lattice.acyclic:
        distinct = lattice.num_paths()
        if distinct != num_generating:
            raise AmbiguousMFSTError(f"{where}: {num_generating} generating paths but only "
                                     f"{distinct} distinct mark strings")
    return lattice


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


class _Exporter:
    """Turn the determinized FST into a Lattice.

    1. Contract ε-input chains into the preceding mark arc, or into STOP at a final state.
    2. Consumed symbols per state, along any path (checked to be path-independent).
    3. Positions "as soon as possible": add the longest common prefix of all outputs to come.
    4. Minimize (acyclic only) by merging states with equal finality, position and out-arcs
       (mark, class of destination), in reverse topological order; this also numbers the
       states topologically with the start first.
    Steps 1-2 are one forward pass and 3-4 one backward pass over the topologically sorted
    states of the determinized FST: compilation time is dominated by this Python code.
    """

    def __init__(self, det: pynini.Fst, enc: _Encoding, where: str):
        self.is_x, self.marks, self.where = enc.is_x, enc.marks, where
        arrays = read_fst(det)
        arcs = list(zip(arrays.ilabel.tolist(), arrays.olabel.tolist(), arrays.dst.tolist()))
        offsets = np.searchsorted(arrays.src, np.arange(len(arrays.final) + 1)).tolist()
        self.out = [arcs[offsets[s]:offsets[s + 1]] for s in range(len(arrays.final))]
        self.is_final = np.isfinite(arrays.final).tolist()
        self.start = arrays.start
        self.is_chain = [len(o) == 1 and o[0][0] == 0 and not f
                         for o, f in zip(self.out, self.is_final)]

    def follow_chain(self, t: int, emitted: list[int]) -> int:
        """Walk ε-input arcs from t through states with no other choice, collecting outputs."""
        while self.is_chain[t]:
            _, olabel, t = self.out[t][0]
            if olabel:
                emitted.append(olabel)
        return t

    def contracted_arcs(self, s: int, stop: dict) -> list[tuple[int, int, tuple[int, ...]]]:
        """Out-arcs of s as (mark, dst, emitted labels); records STOP residuals in ``stop``."""
        result = []
        if self.is_final[s]:
            stop[s] = ()
        is_chain = self.is_chain
        for ilabel, olabel, t in self.out[s]:
            if ilabel and not is_chain[t]:  # the common case: nothing to contract
                result.append((ilabel - 1, t, (olabel,) if olabel else ()))
                continue
            emitted = [olabel] if olabel else []
            end = self.follow_chain(t, emitted)
            if ilabel:
                result.append((ilabel - 1, end, tuple(emitted)))
            elif self.is_final[end] and not self.out[end] and s not in stop:
                stop[s] = tuple(emitted)  # a residual chain hanging off s: STOP owes these
            else:
                raise AmbiguousMFSTError(f"{self.where}: determinization left a branching "
                                         "ε-input arc (non-functional MFST)")
        return result

    def counts(self, labels: tuple[int, ...]) -> tuple[int, int]:
        dx = sum([self.is_x[label] for label in labels])
        return dx, len(labels) - dx

    def consumed(self, order, arcs, stop, x, y) -> dict[int, tuple[int, int]]:
        consumed = {self.start: (0, 0)}
        is_x = self.is_x
        for s in order:
            i, j = consumed[s]
            for _, t, emitted in arcs[s]:
                if not emitted:
                    c = (i, j)
                elif len(emitted) == 1:
                    c = (i + 1, j) if is_x[emitted[0]] else (i, j + 1)
                else:
                    dx, dy = self.counts(emitted)
                    c = (i + dx, j + dy)
                old = consumed.setdefault(t, c)
                if old != c:
                    raise AmbiguousMFSTError(f"{self.where}: a state is reached at two "
                                             f"alignments {c} and {old}")
            if s in stop:
                dx, dy = self.counts(stop[s])
                if (i + dx, j + dy) != (len(x), len(y)):
                    raise AmbiguousMFSTError(f"{self.where}: STOP does not finish the alignment")
        return consumed

    def lattice(self, x: tuple, y: tuple, acyclic: bool) -> Lattice:
        stop: dict[int, tuple[int, ...]] = {}
        arcs = {self.start: self.contracted_arcs(self.start, stop)}
        if acyclic:  # states are topologically sorted: one forward pass finds the reachable
            for s in range(self.start, len(self.out)):
                if s in arcs:
                    for _, t, _ in arcs[s]:
                        if t not in arcs:
                            arcs[t] = self.contracted_arcs(t, stop)
        else:
            stack = [self.start]
            while stack:
                for _, t, _ in arcs[stack.pop()]:
                    if t not in arcs:
                        arcs[t] = self.contracted_arcs(t, stop)
                        stack.append(t)
        order = sorted(arcs) if acyclic else list(arcs)
        consumed = self.consumed(order, arcs, stop, x, y)
        before = (len(order), sum(len(a) for a in arcs.values()))
        if not acyclic:
            new = {s: k for k, s in enumerate(order)}
            return self._build(x, y, [consumed[s] for s in order], [s in stop for s in order],
                               [(new[s], m, new[t]) for s in order for m, t, _ in arcs[s]],
                               None, before)

        pending: dict[int, tuple[int, ...]] = {}
        cls: dict[int, int] = {}
        classes: dict[tuple, int] = {}
        merged_arcs: list[tuple[int, int, int]] = []
        positions: list[tuple[int, int]] = []
        final: list[bool] = []
        heights: list[int] = []
        for s in reversed(order):
            futures = [emitted + pending[t] for _, t, emitted in arcs[s]]
            if s in stop:
                futures.append(stop[s])
            pending[s] = common = futures[0] if len(futures) == 1 else _common_prefix(futures)
            position = consumed[s]
            if common and s != self.start:  # nothing is consumed before the first mark
                dx, dy = self.counts(common)
                position = (position[0] + dx, position[1] + dy)
            out = sorted([(m, cls[t]) for m, t, _ in arcs[s]])
            signature = (s in stop, position, tuple(out))
            c = classes.get(signature)
            if c is None:
                c = classes[signature] = len(classes)
                merged_arcs.extend((c, m, d) for m, d in out)
                positions.append(position)
                final.append(s in stop)
                heights.append(1 + max([heights[d] for _, d in out]) if out else 0)
            cls[s] = c
        k = len(classes)  # reverse the class ids: start becomes 0, arcs go forwards
        return self._build(x, y, positions[::-1], final[::-1],
                           [(k - 1 - c, m, k - 1 - d) for c, m, d in merged_arcs],
                           heights[::-1], before)

    def _build(self, x, y, positions, final, arc_list, heights, before) -> Lattice:
        arc_list.sort()
        arr = np.asarray(arc_list, dtype=np.int64).reshape(-1, 3)
        num = len(final)
        return Lattice(
            mark_vocab=self.marks, x=x, y=y, arc_src=arr[:, 0].copy(), arc_dst=arr[:, 2].copy(),
            arc_mark=arr[:, 1].copy(), final=np.asarray(final, dtype=bool),
            positions=np.asarray(positions, dtype=np.int64).reshape(num, 2),
            height=np.asarray(heights if heights is not None else [-1] * num, dtype=np.int64),
            states_before_min=before[0], arcs_before_min=before[1])


def _common_prefix(strings: list[tuple[int, ...]]) -> tuple[int, ...]:
    first = min(strings, key=len)
    if not first or all(other == first for other in strings):
        return first
    for k, label in enumerate(first):
        if any(other[k] != label for other in strings):
            return first[:k]
    return first
