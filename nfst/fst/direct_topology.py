"""The MFSTs whose lattices the direct path (``nfst.fst.compile_direct``) compiles, and their
tables: each state's out-arcs spelled as a trie.

Conditions on T (:func:`direct_refusal` names the first that fails):

1. every arc carries at least one mark;
2. at every state the arcs' mark strings are prefix-free: no two equal, none a proper prefix of
   another;
3. the arcs that read and write nothing form no cycle (else T_{x,y} is cyclic).

The trie of a state q has q as its root and a node for each proper prefix of its out-arcs'
mark strings; the last mark of arc a leads to the root dst(a). By condition 2 a mark prefix
leads to one node only.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .mfst import MarkedFST


def direct_refusal(T: MarkedFST) -> Optional[str]:
    """None when T qualifies for the direct path, else why not (one line)."""
    return DirectTopology.of(T).refusal


class DirectTopology:
    """T spelled as tries, with the per-arc tables the direct path reads (built once per MFST:
    :meth:`of`)."""

    @classmethod
    def of(cls, T: MarkedFST) -> "DirectTopology":
        return T.derived("direct-topology", cls)

    def __init__(self, T: MarkedFST):
        self.name = T.name
        self.marks = T.mark_alphabet
        self.refusal = _refusal(T)
        if self.refusal is not None:
            return
        arcs = T.arcs
        mark_id = {m: k for k, m in enumerate(self.marks)}
        self.inputs = {s: k for k, s in enumerate(T.input_alphabet)}
        self.outputs = {s: k for k, s in enumerate(T.output_alphabet)}
        self.num_states = T.num_states
        self.is_final = np.zeros(T.num_states, dtype=bool)
        self.is_final[list(T.finals)] = True
        self.length = np.asarray([len(a.marks) for a in arcs], dtype=np.int64)
        self.spelled = np.concatenate([[0], np.cumsum(self.length)])
        """(A + 1,) CSR offsets: arc a's marks are entries spelled[a]:spelled[a + 1] of
        ``path`` and ``mark``."""
        self.path = np.zeros(self.spelled[-1], dtype=np.int64)
        """(M,): the trie node each mark leaves (an arc's first leaves the arc's src)."""
        self.mark = np.zeros(self.spelled[-1], dtype=np.int64)
        self.src = np.asarray([a.src for a in arcs], dtype=np.int64)
        self.dst = np.asarray([a.dst for a in arcs], dtype=np.int64)
        self.di = np.asarray([len(a.input) for a in arcs], dtype=np.int64)
        self.dj = np.asarray([len(a.output) for a in arcs], dtype=np.int64)
        child: dict[tuple[int, int], int] = {}
        nodes = T.num_states
        for a, arc in enumerate(arcs):
            node = arc.src
            for t, m in enumerate(arc.marks):
                self.path[self.spelled[a] + t], self.mark[self.spelled[a] + t] = node, mark_id[m]
                if t < len(arc.marks) - 1:
                    if (node, mark_id[m]) not in child:
                        child[node, mark_id[m]] = nodes
                        nodes += 1
                    node = child[node, mark_id[m]]
        self.num_nodes = nodes
        self.in_strings, self.in_id = _strings(arcs, "input", self.inputs)
        self.out_strings, self.out_id = _strings(arcs, "output", self.outputs)
        self._units(arcs)

    def _units(self, arcs) -> None:
        """Per arc and offset o < |a_Σ| + |a_Δ| (the diagonals its symbols cross): the x
        symbols consumed before offset o, or for offsets inside a group (more symbols than
        marks: the last mark carries the rest, docs/design.md §3) the group's shape."""
        width = max([len(a.input) + len(a.output) for a in arcs] + [1])
        self.unit_dx = np.zeros((len(arcs), width), dtype=np.int64)
        self.unit_skip = np.zeros((len(arcs), width), dtype=bool)
        self.group_dx = np.zeros(len(arcs), dtype=np.int64)
        self.group_shape = np.zeros(len(arcs), dtype=np.int64)
        shapes: dict[tuple[int, int], int] = {}
        for a, arc in enumerate(arcs):
            n, k, nx = len(arc.input) + len(arc.output), len(arc.marks), len(arc.input)
            self.unit_dx[a, :n] = np.minimum(np.arange(n), nx)
            if n > k:
                self.unit_skip[a, k:n] = True
                gx = min(k - 1, nx)
                self.group_dx[a] = gx
                self.group_shape[a] = shapes.setdefault(
                    (nx - gx, n - (k - 1) - (nx - gx)), len(shapes)
                )
        self.num_shapes = len(shapes) + 1


def _refusal(T: MarkedFST) -> Optional[str]:
    name = T.name
    by_state: dict[int, list] = {}
    for arc in T.arcs:
        if not arc.marks:
            return f"{name}: arc {arc.src}->{arc.dst} carries no mark"
        by_state.setdefault(arc.src, []).append(arc.marks)
    for q, strings in by_state.items():
        strings.sort()  # a proper prefix sorts right before a string that extends it
        for u, v in zip(strings, strings[1:]):
            if v[: len(u)] == u:
                relation = "twice" if u == v else "one a prefix of the other"
                return (
                    f"{name}: state {q} has arcs with mark strings {' '.join(u)!r} and "
                    f"{' '.join(v)!r} ({relation})"
                )
    silent = {
        q: [a.dst for a in T.arcs if a.src == q and not a.input and not a.output]
        for q in range(T.num_states)
    }
    state = [0] * T.num_states  # 0 new, 1 on the stack, 2 done
    for root in range(T.num_states):
        stack = [(root, iter(silent[root]))] if state[root] == 0 else []
        state[root] = max(state[root], 1)
        while stack:
            q, succ = stack[-1]
            r = next(succ, None)
            if r is None:
                state[q] = 2
                stack.pop()
            elif state[r] == 1:
                return f"{name}: arcs without symbols form a cycle through state {r}"
            elif state[r] == 0:
                state[r] = 1
                stack.append((r, iter(silent[r])))
    return None


def _strings(arcs, tape: str, ids: dict[str, int]) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct strings on one tape (as symbol-id arrays) and each arc's index into them."""
    index: dict[tuple[str, ...], int] = {}
    arc_id = np.asarray(
        [index.setdefault(getattr(a, tape), len(index)) for a in arcs], dtype=np.int64
    )
    return [np.asarray([ids[s] for s in string], dtype=np.int64) for string in index], arc_id
