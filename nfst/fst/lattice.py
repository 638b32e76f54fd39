"""The per-pair lattice T_{x,y} as flat arrays (docs/design.md §2, §4).

A lattice is the unweighted acceptor of every mark string of a generating path of (x, y).
States are numbered in topological order with the start state 0; arcs are sorted by source
state, so the out-arcs of state ``s`` are ``arc_offsets[s]:arc_offsets[s + 1]``.

Guarantees (003 §3): (a) each arc has exactly one mark, (b) the out-arcs of a state carry
distinct marks, (c) every state reaches a final state. A final state may still have out-arcs:
sampling chooses among its marks and STOP.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Iterator

import numpy as np

from ..errors import CyclicLatticeError


@dataclass(eq=False)
class Lattice:
    mark_vocab: tuple[str, ...]
    """The MFST's mark alphabet; ``arc_mark`` indexes it."""
    x: tuple[str, ...]
    y: tuple[str, ...]
    arc_src: np.ndarray
    """int64 (A,), non-decreasing."""
    arc_dst: np.ndarray
    """int64 (A,)."""
    arc_mark: np.ndarray
    """int64 (A,), index into ``mark_vocab``."""
    final: np.ndarray
    """bool (S,): STOP is a legal action here."""
    positions: np.ndarray
    """int64 (S, 2): prefix lengths (i, j) of x and y aligned on reaching the state."""
    height: np.ndarray
    """int64 (S,): most arcs on a path to a dead end (0 for final states without out-arcs);
    -1 everywhere when the lattice is cyclic."""
    states_before_min: int = 0
    arcs_before_min: int = 0

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def num_arcs(self) -> int:
        return len(self.arc_src)

    @property
    def acyclic(self) -> bool:
        return self.num_states == 0 or bool(self.height[0] >= 0)

    @property
    def arc_offsets(self) -> np.ndarray:
        """int64 (S + 1,): CSR offsets of each state's out-arcs."""
        return np.searchsorted(self.arc_src, np.arange(self.num_states + 1))

    def marks_of(self, arcs: np.ndarray) -> tuple[str, ...]:
        return tuple(self.mark_vocab[m] for m in self.arc_mark[arcs])

    def mark_strings(self) -> Iterator[tuple[str, ...]]:
        """Every accepted mark string, depth first. Exponentially many: small lattices only."""
        self.require_acyclic("mark_strings")
        offsets = self.arc_offsets
        stack: list[tuple[int, tuple[str, ...]]] = [(0, ())]
        while stack:
            s, prefix = stack.pop()
            if self.final[s]:
                yield prefix
            for a in range(offsets[s + 1] - 1, offsets[s] - 1, -1):
                stack.append((int(self.arc_dst[a]), prefix + (self.mark_vocab[self.arc_mark[a]],)))

    def num_paths(self) -> int:
        """Exact number of accepted mark strings (a Python int, it can be huge)."""
        self.require_acyclic("num_paths")
        count = [0] * self.num_states
        offsets = self.arc_offsets.tolist()
        dst, final = self.arc_dst.tolist(), self.final.tolist()
        for s in range(self.num_states - 1, -1, -1):  # topological order: dst > src
            c = int(final[s])
            for d in dst[offsets[s] : offsets[s + 1]]:
                c += count[d]
            count[s] = c
        return count[0]

    def require_acyclic(self, what: str) -> None:
        if not self.acyclic:
            raise CyclicLatticeError(
                f"{what} needs an acyclic lattice; T_{{x,y}} for "
                f"x={' '.join(self.x)!r}, y={' '.join(self.y)!r} is cyclic"
            )

    def to_dot(self) -> str:
        """Graphviz DOT text: states labelled with their positions (i, j), finals doubled."""
        lines = ["digraph lattice {", "  rankdir=LR;", "  node [shape=circle];"]
        for s in range(self.num_states):
            shape = "doublecircle" if self.final[s] else "circle"
            i, j = self.positions[s]
            lines.append(f'  {s} [shape={shape}, label="{s}\\n({i},{j})"];')
        for a in range(self.num_arcs):
            mark = self.mark_vocab[self.arc_mark[a]].replace('"', '\\"')
            lines.append(f'  {self.arc_src[a]} -> {self.arc_dst[a]} [label="{mark}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_networkx(self):
        """A ``networkx.MultiDiGraph``: nodes are states (attributes ``position`` (i, j) and
        ``final``), edges are arcs (``mark``, the mark's name, and ``arc``, its index)."""
        import networkx as nx

        graph = nx.MultiDiGraph(x=self.x, y=self.y)
        graph.add_nodes_from(
            (s, {"position": (int(i), int(j)), "final": bool(f)})
            for s, ((i, j), f) in enumerate(zip(self.positions, self.final))
        )
        graph.add_edges_from(
            (int(q), int(r), {"mark": self.mark_vocab[m], "arc": a})
            for a, (q, r, m) in enumerate(zip(self.arc_src, self.arc_dst, self.arc_mark))
        )
        return graph

    # -- serialisation (used by the on-disk cache) -----------------------------------------
    def to_state(self) -> dict:
        """Plain data for storage; integer arrays shrink to int32 (states and marks fit)."""
        return {
            f.name: (v.astype(np.int32) if isinstance(v, np.ndarray) and v.dtype == np.int64 else v)
            for f in fields(self)
            for v in [getattr(self, f.name)]
        }

    @classmethod
    def from_state(cls, state: dict) -> "Lattice":
        return cls(
            **{
                k: (v.astype(np.int64) if isinstance(v, np.ndarray) and v.dtype == np.int32 else v)
                for k, v in state.items()
            }
        )
