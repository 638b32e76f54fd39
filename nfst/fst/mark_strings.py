"""Reading a mark string: every (x, y) of the paths of T that spell it (:class:`MarkReader`,
which sleep training's triples are read off), and the arcs of the one path of a lattice
T_{x,y} that spells it (:func:`path_arcs`, marks being distinct on a state's out-arcs,
003 §3)."""

from __future__ import annotations

import numpy as np

from ..errors import NfstError
from .lattice import Lattice
from .mfst import MarkedFST


class MarkReader:
    """Every (x, y) of T's paths with a given mark string: a search over (state, marks read)
    through T's arcs, indexed by their first mark. Arcs without marks are followed too; a
    cycle of them is refused (a mark string could then have infinitely many paths)."""

    def __init__(self, T: MarkedFST):
        self.T = T
        self.by_mark: dict[tuple[int, str], list] = {}
        self.silent: dict[int, list] = {}
        for arc in T.arcs:
            if arc.marks:
                self.by_mark.setdefault((arc.src, arc.marks[0]), []).append(arc)
            else:
                self.silent.setdefault(arc.src, []).append(arc)
        self._check_silent_cycles()

    def _check_silent_cycles(self) -> None:
        state = {}  # 1: on the stack, 2: done
        for root in self.silent:
            if state.get(root):
                continue
            state[root], stack = 1, [(root, iter(self.silent[root]))]
            while stack:
                q, arcs = stack[-1]
                arc = next(arcs, None)
                if arc is None:
                    state[q] = 2
                    stack.pop()
                elif state.get(arc.dst, 0) == 1:
                    raise NfstError(
                        f"{self.T.name}: a cycle of arcs without marks through "
                        f"state {arc.dst}: a mark string may have infinitely many "
                        "paths, so triples cannot be read off it",
                        "give every arc of the cycle a mark",
                    )
                elif state.get(arc.dst, 0) == 0:
                    state[arc.dst] = 1
                    stack.append((arc.dst, iter(self.silent.get(arc.dst, ()))))

    def readings(self, marks: tuple[str, ...]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """The distinct (x, y) of the paths of T whose mark string is ``marks``, sorted."""
        memo: dict[tuple[int, int], set] = {}
        finals, n = self.T.finals, len(marks)

        def suffixes(q: int, i: int) -> set:
            key = (q, i)
            if key in memo:
                return memo[key]
            out = {((), ())} if i == n and q in finals else set()
            arcs = list(self.silent.get(q, ()))
            if i < n:
                arcs += [
                    a
                    for a in self.by_mark.get((q, marks[i]), ())
                    if marks[i : i + len(a.marks)] == a.marks
                ]
            for a in arcs:
                for x, y in suffixes(a.dst, i + len(a.marks)):
                    out.add((a.input + x, a.output + y))
            memo[key] = out
            return out

        return sorted(suffixes(self.T.start, 0))


def path_arcs(lattice: Lattice, marks: tuple[str, ...]) -> np.ndarray:
    """The arcs (L,) of the one path of ``lattice`` with mark string ``marks`` (its out-arcs
    carry distinct marks, 003 §3); ValueError if it has none."""
    index = {m: i for i, m in enumerate(lattice.mark_vocab)}
    # Python lists: each mark is a search among a state's few out-arcs, where numpy's per-call
    # overhead dominates (a cipher triple: 106 against 179 µs; a sleep step reads 16)
    offsets, arc_mark = lattice.arc_offsets.tolist(), lattice.arc_mark.tolist()
    arc_dst = lattice.arc_dst.tolist()
    state, arcs = 0, []
    for mark in marks:
        try:
            arcs.append(arc_mark.index(index[mark], offsets[state], offsets[state + 1]))
        except (KeyError, ValueError):
            raise ValueError(
                f"no path of the lattice of {lattice.x}, {lattice.y} reads {marks}"
            ) from None
        state = arc_dst[arcs[-1]]
    if not lattice.final[state]:
        raise ValueError(f"{marks} ends in a non-final state of the lattice")
    return np.asarray(arcs, dtype=np.int64)
