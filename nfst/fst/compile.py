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
from itertools import chain
import numpy as np
import pynini

from ..errors import (AmbiguousMFSTError, CyclicLatticeError, InvalidMFSTError,
                     LatticeTooLargeError, NoPathError, UnknownSymbolError)
from .openfst import read_fst
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
        self.emits = [()] + [(label,) for label in range(1, len(self.label) + 1)]
        """What an arc with output label l emits (a shared tuple per label)."""

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
        self.unambiguous = _marks_determine_paths(fst)
        """No two paths of T share a mark string, so no T_{x,y} needs its paths counted."""

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
    lattice, distinct = _Exporter(det, enc, where).lattice(x, y, acyclic)
    if num_generating is not None and distinct is not None:
        if distinct != num_generating:
            raise AmbiguousMFSTError(f"{where}: {num_generating} generating paths but only "
                                     f"{distinct} distinct mark strings")
    return lattice


def openfst_lattice(T: MarkedFST, x: Symbols, y: Symbols) -> pynini.Fst:
    """x ∘ T ∘ y determinized and minimized by OpenFst alone (DESIGN §2, steps 1-3), without
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


class _Exporter:
    """Turn the determinized FST into a Lattice.

    1. Contract ε-input chains into the preceding mark arc, or into STOP at a final state.
    2. Consumed symbols per state, along any path (checked to be path-independent).
    3. Positions "as soon as possible": add the longest common prefix of all outputs to come.
    4. Minimize (acyclic only) by merging states with equal finality, position and out-arcs
       (mark, class of destination), in reverse topological order; this also numbers the
       states topologically with the start first, and counts the lattice's paths.
    Steps 1-2 are numpy work; steps 3-4 are one Python pass, kept short for the states with
    a single out-arc (most of them), whose position is their successor's.
    """

    def __init__(self, det: pynini.Fst, enc: _Encoding, where: str):
        self.is_x, self.marks, self.emits, self.where = enc.is_x, enc.marks, enc.emits, where
        self.fst = read_fst(det)
        self.start = self.fst.start

    # -- step 1 ---------------------------------------------------------------------------
    def contract(self, step: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   np.ndarray, list, dict]:
        """Arcs as (src, mark, dst) arrays sorted by (src, mark); what each arc moves through
        the alignment grid (the sum of ``step`` over its labels), and the labels it emits; the
        residual labels STOP owes at each final state."""
        fst = self.fst
        finals = np.flatnonzero(np.isfinite(fst.final)).tolist()
        if not (fst.ilabel == 0).any():  # the common case: nothing to contract
            src, mark, dst, olabel = fst.src, fst.ilabel - 1, fst.dst, fst.olabel
            by_mark = np.lexsort((mark, src))
            if (by_mark != np.arange(len(src))).any():
                src, mark, dst, olabel = src[by_mark], mark[by_mark], dst[by_mark], olabel[by_mark]
            emit = [self.emits[o] for o in olabel.tolist()]
            return src, mark, dst, step[olabel], emit, {s: () for s in finals}
        num = len(fst.final)
        offsets = np.searchsorted(fst.src, np.arange(num + 1)).tolist()
        out = [sorted(zip(fst.ilabel[offsets[s]:offsets[s + 1]].tolist(),
                          fst.olabel[offsets[s]:offsets[s + 1]].tolist(),
                          fst.dst[offsets[s]:offsets[s + 1]].tolist())) for s in range(num)]
        is_final = np.isfinite(fst.final).tolist()
        is_chain = [len(o) == 1 and o[0][0] == 0 and not f for o, f in zip(out, is_final)]
        src, mark, dst, emit = [], [], [], []
        stop = {s: () for s in finals}
        for s in range(num):
            if is_chain[s]:
                continue
            for ilabel, olabel, t in out[s]:
                emitted = [olabel] if olabel else []
                while is_chain[t]:  # no other choice: the chain's outputs belong to this arc
                    _, olabel, t = out[t][0]
                    if olabel:
                        emitted.append(olabel)
                if ilabel:
                    src.append(s), mark.append(ilabel - 1), dst.append(t)
                    emit.append(tuple(emitted))
                elif is_final[t] and not out[t] and s not in stop:
                    stop[s] = tuple(emitted)  # a residual chain hanging off s: STOP owes these
                else:
                    raise AmbiguousMFSTError(f"{self.where}: determinization left a branching "
                                             "ε-input arc (non-functional MFST)")
        moves = [int(step[list(e)].sum()) for e in emit]
        as_array = lambda v: np.asarray(v, dtype=np.int64)
        return as_array(src), as_array(mark), as_array(dst), as_array(moves), emit, stop

    # -- step 2 ---------------------------------------------------------------------------
    def consumed(self, src, dst, moves, stop, live, acyclic, x, y) -> np.ndarray:
        """(S,) symbols consumed on the way to each state, i·(|y|+1) + j for i of x and j of
        y: the sum of the moves along a spanning tree (pointer doubling), then checked on
        every arc."""
        width = len(y) + 1
        tree = self.tree_arcs(src, dst, live, acyclic)
        parent, total = np.arange(len(live)), np.zeros(len(live), dtype=np.int64)
        parent[dst[tree]], total[dst[tree]] = src[tree], moves[tree]
        while not np.array_equal(parent[parent], parent):
            total, parent = total + total[parent], parent[parent]
        bad = np.flatnonzero(total[src] + moves != total[dst])
        if len(bad):
            a, grid = bad[0], lambda code: divmod(int(code), width)
            raise AmbiguousMFSTError(f"{self.where}: a state is reached at two alignments "
                                     f"{grid(total[src[a]] + moves[a])} and {grid(total[dst[a]])}")
        for s, residual in stop.items():
            dx = sum([self.is_x[label] for label in residual])
            if total[s] + dx * width + len(residual) - dx != len(x) * width + len(y):
                raise AmbiguousMFSTError(f"{self.where}: STOP does not finish the alignment")
        return total

    def tree_arcs(self, src, dst, live, acyclic) -> np.ndarray:
        """One in-arc per live state but the start, forming a tree rooted at the start."""
        if acyclic:  # topologically sorted: any in-arc comes from an earlier state
            last_in = np.full(len(live), -1)
            last_in[dst] = np.arange(len(dst))
            return last_in[last_in >= 0]
        offsets = np.searchsorted(src, np.arange(len(live) + 1)).tolist()
        dsts, seen, tree, stack = dst.tolist(), {self.start}, [], [self.start]
        while stack:
            s = stack.pop()
            for a in range(offsets[s], offsets[s + 1]):
                if dsts[a] not in seen:
                    seen.add(dsts[a]), tree.append(a), stack.append(dsts[a])
        return np.asarray(tree, dtype=np.int64)

    # -- steps 3 and 4 ----------------------------------------------------------------------
    def lattice(self, x: tuple, y: tuple, acyclic: bool) -> tuple[Lattice, int | None]:
        """The lattice, and its number of paths (acyclic only; None otherwise)."""
        width = len(y) + 1  # a position (i, j) is coded as i·width + j
        step = np.where(np.asarray(self.is_x) == 1, width, 1)  # per output label
        step[0] = 0  # ε
        src, mark, dst, moves, emit, stop = self.contract(step)
        num = len(self.fst.final)
        live = np.zeros(num, dtype=bool)
        live[dst], live[self.start] = True, True
        stop = {s: residual for s, residual in stop.items() if live[s]}
        consumed = self.consumed(src, dst, moves, stop, live, acyclic, x, y)
        order = np.flatnonzero(live).tolist()
        before = (len(order), len(src))
        if not acyclic:
            order.remove(self.start)
            order.insert(0, self.start)
            new = np.zeros(num, dtype=np.int64)
            new[order] = np.arange(len(order))
            by_source = np.lexsort((new[dst], mark, new[src]))
            return self._build(x, y, consumed[order], [s in stop for s in order],
                               new[src][by_source], mark[by_source], new[dst][by_source],
                               None, before), None

        offsets = np.searchsorted(src, np.arange(num + 1)).tolist()
        marks, dsts, start = mark.tolist(), dst.tolist(), self.start
        steps = step.tolist()
        position = consumed.tolist()  # then "as soon as possible", for the states visited
        pending: list[tuple[int, ...]] = [()] * num  # common prefix of the outputs to come
        cls = [0] * num
        chains: dict[tuple[int, int], int] = {}  # (mark, class of dst) -> class
        classes: dict[tuple, int] = {}  # (final, position, out-arcs) -> class
        info: list[tuple[int, bool, int, int]] = []  # per class: position, final, height, paths
        arcs: list[tuple[int, int, int]] = []  # (class, mark, class of dst)
        for s in reversed(order):
            lo, hi = offsets[s], offsets[s + 1]
            if hi - lo == 1 and s != start and s not in stop:
                # One way on: the same position as the successor, which decides the class.
                t, e = dsts[lo], emit[lo]
                pending[s] = e + pending[t] if e else pending[t]
                key = (marks[lo], cls[t])
                c = chains.get(key)
                if c is None:
                    c = chains[key] = len(info)
                    at, _, height, paths = info[key[1]]
                    info.append((at, False, height + 1, paths))
                    arcs.append((c,) + key)
                cls[s] = c
                continue
            final = s in stop
            futures = [stop[s]] if final else []
            out = []
            for a in range(lo, hi):
                futures.append(emit[a] + pending[dsts[a]])
                out.append((marks[a], cls[dsts[a]]))
            pending[s] = common = futures[0] if len(futures) == 1 else _common_prefix(futures)
            at = position[s]
            if common and s != start:  # nothing is consumed before the first mark
                for label in common:
                    at += steps[label]
            signature = (final, at, tuple(out))
            c = classes.get(signature)
            if c is None:
                c = classes[signature] = len(info)
                height, paths = -1, int(final)
                for m, d in reversed(out):
                    arcs.append((c, m, d))
                    target = info[d]
                    height, paths = max(height, target[2]), paths + target[3]
                info.append((at, final, height + 1, paths))
            cls[s] = c
        # Reverse the class ids: the start becomes 0, arcs go forwards and, read backwards,
        # are sorted by source and mark.
        at, final, heights, paths = zip(*reversed(info))
        arc_array = np.fromiter(chain.from_iterable(reversed(arcs)), np.int64, 3 * len(arcs))
        src, mark, dst = arc_array.reshape(-1, 3).T
        flip = len(info) - 1
        lattice = self._build(x, y, np.asarray(at), final, flip - src, mark, flip - dst,
                              heights, before)
        return lattice, paths[flip - cls[start]]

    def _build(self, x, y, positions, final, src, mark, dst, heights, before) -> Lattice:
        """A Lattice from per-state positions (i·(|y|+1) + j) and finality, arc arrays sorted
        by (src, mark), and heights (None if cyclic)."""
        num = len(final)
        return Lattice(
            mark_vocab=self.marks, x=x, y=y, arc_src=src, arc_dst=dst,
            arc_mark=mark, final=np.asarray(final, dtype=bool),
            positions=np.stack(np.divmod(positions, len(y) + 1), axis=1).reshape(num, 2),
            height=np.asarray(heights if heights is not None else [-1] * num, dtype=np.int64),
            states_before_min=before[0], arcs_before_min=before[1])


def _common_prefix(strings: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The longest common prefix of a set is that of its lexicographic least and greatest."""
    low, high = min(strings), max(strings)
    for k, label in enumerate(low):
        if label != high[k]:
            return low[:k]
    return low
