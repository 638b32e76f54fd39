"""Steps 4–6 of compiling T_{x,y} (``nfst.fst.compile``), read back from OpenFst: the
determinized x ∘ T ∘ y becomes the flat arrays of :class:`Lattice`. Contract ε-input chains,
compute positions "as soon as possible", and minimize while numbering states topologically.
Steps 1–2 wrote T and A_{x,y} for OpenFst (``nfst.fst.compile_to_openfst``).
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import pynini

from ..errors import AmbiguousMFSTError
from .compile_to_openfst import CompileEncoding
from .from_openfst import read_fst
from .lattice import Lattice


class LatticeReader:
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

    def __init__(self, det: pynini.Fst, enc: CompileEncoding, where: str):
        self.shape, self.marks, self.emits, self.where = enc.shape, enc.marks, enc.emits, where
        self.fst = read_fst(det)
        self.start = self.fst.start

    # -- step 1 ---------------------------------------------------------------------------
    def contract(
        self, step: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list, dict]:
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
        out = [
            sorted(
                zip(
                    fst.ilabel[offsets[s] : offsets[s + 1]].tolist(),
                    fst.olabel[offsets[s] : offsets[s + 1]].tolist(),
                    fst.dst[offsets[s] : offsets[s + 1]].tolist(),
                )
            )
            for s in range(num)
        ]
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
                    raise AmbiguousMFSTError(
                        f"{self.where}: determinization left a branching "
                        "ε-input arc (non-functional MFST)"
                    )
        moves = [int(step[list(e)].sum()) for e in emit]
        src, mark, dst, moves = (np.asarray(v, dtype=np.int64) for v in (src, mark, dst, moves))
        return src, mark, dst, moves, emit, stop

    # -- step 2 ---------------------------------------------------------------------------
    def consumed(self, src, dst, moves, step, stop, live, acyclic, x, y) -> np.ndarray:
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
            raise AmbiguousMFSTError(
                f"{self.where}: a state is reached at two alignments "
                f"{grid(total[src[a]] + moves[a])} and {grid(total[dst[a]])}"
            )
        for s, residual in stop.items():
            if total[s] + step[list(residual)].sum() != len(x) * width + len(y):
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
        shape = np.asarray(self.shape, dtype=np.int64)
        step = shape[:, 0] * width + shape[:, 1]  # per output label (ε: 0)
        src, mark, dst, moves, emit, stop = self.contract(step)
        num = len(self.fst.final)
        live = np.zeros(num, dtype=bool)
        live[dst], live[self.start] = True, True
        stop = {s: residual for s, residual in stop.items() if live[s]}
        consumed = self.consumed(src, dst, moves, step, stop, live, acyclic, x, y)
        order = np.flatnonzero(live).tolist()
        before = (len(order), len(src))
        if not acyclic:
            return self._unminimized(x, y, order, consumed, stop, src, mark, dst, before), None
        cls, info, arcs = self._minimize(order, consumed, step, src, mark, dst, emit, stop)
        # Reverse the class ids: the start becomes 0, arcs go forwards and, read backwards,
        # are sorted by source and mark.
        at, final, heights, paths = zip(*reversed(info))
        arc_array = np.fromiter(chain.from_iterable(reversed(arcs)), np.int64, 3 * len(arcs))
        src, mark, dst = arc_array.reshape(-1, 3).T
        flip = len(info) - 1
        lattice = self._build(
            x, y, np.asarray(at), final, flip - src, mark, flip - dst, heights, before
        )
        return lattice, paths[flip - cls[self.start]]

    def _unminimized(self, x, y, order, consumed, stop, src, mark, dst, before) -> Lattice:
        """A cyclic lattice as it is (no minimization), its live states ``order`` numbered
        with the start first, its arcs sorted by (src, mark, dst)."""
        order = [self.start, *(s for s in order if s != self.start)]
        new = np.zeros(len(self.fst.final), dtype=np.int64)
        new[order] = np.arange(len(order))
        by_source = np.lexsort((new[dst], mark, new[src]))
        return self._build(
            x,
            y,
            consumed[order],
            [s in stop for s in order],
            new[src][by_source],
            mark[by_source],
            new[dst][by_source],
            None,
            before,
        )

    def _minimize(
        self, order, consumed, step, src, mark, dst, emit, stop
    ) -> tuple[list[int], list[tuple[int, bool, int, int]], list[tuple[int, int, int]]]:
        """Steps 3 and 4 on an acyclic FST, its live states visited in reverse topological
        ``order``: each state's class (``cls``), per class its position, finality, height and
        number of paths (``info``), and the arcs between classes (class, mark, class of dst),
        classes numbered in the order they were made (sinks first)."""
        num = len(self.fst.final)
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
        return cls, info, arcs

    def _build(self, x, y, positions, final, src, mark, dst, heights, before) -> Lattice:
        """A Lattice from per-state positions (i·(|y|+1) + j) and finality, arc arrays sorted
        by (src, mark), and heights (None if cyclic)."""
        num = len(final)
        return Lattice(
            mark_vocab=self.marks,
            x=x,
            y=y,
            arc_src=src,
            arc_dst=dst,
            arc_mark=mark,
            final=np.asarray(final, dtype=bool),
            positions=np.stack(np.divmod(positions, len(y) + 1), axis=1).reshape(num, 2),
            height=np.asarray(heights if heights is not None else [-1] * num, dtype=np.int64),
            states_before_min=before[0],
            arcs_before_min=before[1],
        )


def _common_prefix(strings: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The longest common prefix of a set is that of its lexicographic least and greatest."""
    low, high = min(strings), max(strings)
    for k, label in enumerate(low):
        if label != high[k]:
            return low[:k]
    return low
