"""A lattice's states split by the marks read last: the state space an n-gram scorer needs.

An n-gram over marks scores mark ω_t by its last n − 1 predecessors, so it is not a weight
function of the lattice's arcs: one arc is reached with different histories. Splitting each
state s into (s, h), h the last ``depth`` = n − 1 marks of the prefixes that reach it (padded on
the left with BOS = V), makes it one: the arc a: s → s' becomes (s, h) → (s', (h + m_a)[-depth:]),
and the n-gram weight log p(m_a | h) is a weight of that arc. The result is again a lattice
(acyclic, mark-deterministic, every state co-accessible) with the same mark strings, one path
for each path of the original, so the exact passes of ``nfst.dp`` sum and sample the n-gram's
path distribution over T_{x,y}.

A history is one integer: h = (h_1, …, h_d) oldest first is Σ_i h_i (V + 1)^(d − i), so reading
m turns h into (h·(V + 1) + m) mod (V + 1)^d, and the all-BOS history is (V + 1)^d − 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lattice import Lattice


@dataclass
class HistoryLattice:
    lattice: Lattice
    """The split states (s, h) as a lattice over the same marks; a state's arcs keep the order
    of its original state's out-arcs, so a choice column means the same in both."""
    state: np.ndarray
    """int64 (R,): the original state of each split state."""
    history: np.ndarray
    """int64 (R,): its history id (module docstring)."""
    arc: np.ndarray
    """int64 (A_h,): the original arc of each arc."""


def start_history(depth: int, vocab_size: int) -> int:
    """The id of the all-BOS history, the start state's."""
    return (vocab_size + 1) ** depth - 1


def expand_history(lattice: Lattice, depth: int) -> HistoryLattice:
    """Split every state of ``lattice`` by the last ``depth`` marks read (module docstring).
    Only histories that some path realises are made."""
    lattice.require_acyclic("expand_history")
    V, S = len(lattice.mark_vocab), lattice.num_states
    base, size = V + 1, (V + 1) ** depth
    offsets = lattice.arc_offsets.tolist()
    dst, mark = lattice.arc_dst.tolist(), lattice.arc_mark.tolist()
    reaching: list[set] = [set() for _ in range(S)]
    if S:
        reaching[0].add(start_history(depth, V))
    first = [0] * (S + 1)  # split states of s: first[s]:first[s + 1], histories sorted
    histories: list[list[int]] = []
    for s in range(S):  # topological order: every predecessor of s is done
        hs = sorted(reaching[s])
        histories.append(hs)
        first[s + 1] = first[s] + len(hs)
        for a in range(offsets[s], offsets[s + 1]):
            m, target = mark[a], reaching[dst[a]]
            for h in hs:
                target.add((h * base + m) % size)
    state = np.repeat(np.arange(S, dtype=np.int64), [len(hs) for hs in histories])
    history = np.array([h for hs in histories for h in hs], dtype=np.int64)
    index = [dict(zip(hs, range(first[s], first[s + 1]))) for s, hs in enumerate(histories)]
    src, dst_h, arc = [], [], []
    for s in range(S):
        for r, h in enumerate(histories[s], start=first[s]):
            for a in range(offsets[s], offsets[s + 1]):
                src.append(r)
                dst_h.append(index[dst[a]][(h * base + mark[a]) % size])
                arc.append(a)
    arc = np.array(arc, dtype=np.int64)
    split = Lattice(
        mark_vocab=lattice.mark_vocab,
        x=lattice.x,
        y=lattice.y,
        arc_src=np.array(src, dtype=np.int64),
        arc_dst=np.array(dst_h, dtype=np.int64),
        arc_mark=lattice.arc_mark[arc],
        final=lattice.final[state],
        positions=lattice.positions[state],
        height=lattice.height[state],
    )  # (s, h) has s's paths ahead of it
    return HistoryLattice(split, state, history, arc)
