"""Marked finite-state transducers (003 §2.1).

A marked FST T = (Σ, Δ, Ω, Q, E, q0, F) labels every arc with an input substring over Σ, an
output substring over Δ and a mark substring over Ω. A generating path z yields the triple
(z_Σ, z_Δ, z_Ω); the neural scorer only ever sees the mark string z_Ω.

Symbols are plain strings. Where an API takes a substring, a Python ``str`` is split into its
characters for the input and output tapes (``"ab"`` is ``a b``) and on whitespace for the mark
tape (``"<del> a"`` is ``<del> a``); a list or tuple is taken symbol by symbol.

Pynini transducers become marked FSTs with ``nfst.from_pynini`` and back with
``nfst.to_pynini`` (``nfst.fst.from_openfst``, ``nfst.fst.to_openfst``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import chain
from typing import Callable, Iterable, Sequence, TypeVar, Union

from ..errors import InvalidMFSTError

Symbols = Union[str, Sequence[str]]
T_ = TypeVar("T_")


def as_symbols(value: Symbols, *, marks: bool = False) -> tuple[str, ...]:
    """Normalise a substring argument to a tuple of symbols (see the module docstring)."""
    if isinstance(value, str):
        return tuple(value.split()) if marks else tuple(value)
    symbols = tuple(value)
    for s in symbols:
        if not isinstance(s, str) or not s:
            raise InvalidMFSTError(f"symbols must be non-empty strings, got {s!r} in {value!r}")
    return symbols


@dataclass(frozen=True)
class Arc:
    src: int
    dst: int
    input: tuple[str, ...]
    output: tuple[str, ...]
    marks: tuple[str, ...]


class MarkedFST:
    """A marked FST with a single initial state ``start == 0``.

    >>> T = MarkedFST()
    >>> T.set_final(T.start)
    >>> T.add_arc(T.start, T.start, input="a", output="", marks=["<del>", "a"])
    """

    def __init__(self, name: str = "T"):
        self.name = name
        self.start = 0
        self._num_states = 1
        self._finals: set[int] = set()
        self._arcs: list[Arc] = []
        self._derived: dict[str, object] = {}

    def derived(self, key: str, build: Callable[["MarkedFST"], T_]) -> T_:
        """Memoise ``build(self)`` under ``key``; any change to the MFST forgets it."""
        if key not in self._derived:
            self._derived[key] = build(self)
        return self._derived[key]  # type: ignore[return-value]

    @classmethod
    def from_arcs(
        cls, num_states: int, finals: Iterable[int], arcs: Iterable[Arc], name: str = "T"
    ) -> "MarkedFST":
        """States 0..num_states-1 (the start is 0), final states and arcs, taken as they are."""
        T = cls(name)
        T._num_states = num_states
        T._arcs, T._finals = list(arcs), set(finals)
        for q in chain(T._finals, (q for a in T._arcs for q in (a.src, a.dst))):
            T._check_state(q)
        return T

    def to_networkx(self):
        """A ``networkx.MultiDiGraph``: nodes are states (attributes ``start``, ``final``),
        edges are arcs (``input``, ``output``, ``marks``: tuples of symbols)."""
        import networkx as nx

        graph = nx.MultiDiGraph(name=self.name)
        graph.add_nodes_from(
            (q, {"start": q == self.start, "final": q in self._finals})
            for q in range(self._num_states)
        )
        graph.add_edges_from(
            (a.src, a.dst, {"input": a.input, "output": a.output, "marks": a.marks})
            for a in self._arcs
        )
        return graph

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_derived": {}}  # derived objects (pynini FSTs) do not pickle

    # -- construction -------------------------------------------------------------------
    def add_state(self, final: bool = False) -> int:
        q = self._num_states
        self._num_states += 1
        self._derived.clear()
        if final:
            self._finals.add(q)
        return q

    def set_final(self, q: int, final: bool = True) -> None:
        self._check_state(q)
        self._derived.clear()
        (self._finals.add if final else self._finals.discard)(q)

    def add_arc(
        self, src: int, dst: int, input: Symbols = "", output: Symbols = "", marks: Symbols = ()
    ) -> None:
        self._check_state(src)
        self._check_state(dst)
        self._derived.clear()
        self._arcs.append(
            Arc(src, dst, as_symbols(input), as_symbols(output), as_symbols(marks, marks=True))
        )

    def _check_state(self, q: int) -> None:
        if not (isinstance(q, int) and 0 <= q < self._num_states):
            raise InvalidMFSTError(
                f"{self.name}: no state {q!r} (it has {self._num_states})",
                "create states with add_state() first",
            )

    # -- inspection ---------------------------------------------------------------------
    @property
    def num_states(self) -> int:
        return self._num_states

    @property
    def finals(self) -> frozenset[int]:
        return frozenset(self._finals)

    @property
    def arcs(self) -> tuple[Arc, ...]:
        return tuple(self._arcs)

    def out_arcs(self, q: int) -> list[Arc]:
        return [a for a in self._arcs if a.src == q]

    @property
    def input_alphabet(self) -> tuple[str, ...]:
        return tuple(sorted({s for a in self._arcs for s in a.input}))

    @property
    def output_alphabet(self) -> tuple[str, ...]:
        return tuple(sorted({s for a in self._arcs for s in a.output}))

    @property
    def mark_alphabet(self) -> tuple[str, ...]:
        return tuple(sorted({s for a in self._arcs for s in a.marks}))

    def fingerprint(self) -> str:
        """A content hash: equal for MFSTs with the same states, finals and arcs."""
        h = hashlib.sha256()
        h.update(repr((self._num_states, sorted(self._finals))).encode())
        for a in self._arcs:
            h.update(repr((a.src, a.dst, a.input, a.output, a.marks)).encode())
        return h.hexdigest()

    def __repr__(self) -> str:
        return (
            f"MarkedFST({self.name!r}, states={self._num_states}, arcs={len(self._arcs)}, "
            f"finals={len(self._finals)})"
        )

    # -- rational operations --------------------------------------------------------------
    def _copy_into(self, target: "MarkedFST") -> int:
        """Copy this MFST's states and arcs into ``target``; return the state offset."""
        offset = target._num_states
        target._num_states += self._num_states
        for a in self._arcs:
            target._arcs.append(Arc(a.src + offset, a.dst + offset, a.input, a.output, a.marks))
        return offset

    def union(self, other: "MarkedFST") -> "MarkedFST":
        """Paths of either MFST, through ε arcs (no symbols, no marks) from a new start."""
        result = MarkedFST(f"({self.name} | {other.name})")
        for part in (self, other):
            offset = part._copy_into(result)
            result.add_arc(result.start, part.start + offset)
            result._finals.update(q + offset for q in part._finals)
        return result

    def concat(self, other: "MarkedFST") -> "MarkedFST":
        """A path of ``self`` followed by a path of ``other``; marks concatenate."""
        result = MarkedFST(f"({self.name} {other.name})")
        a_off = self._copy_into(result)
        b_off = other._copy_into(result)
        result.add_arc(result.start, self.start + a_off)
        for q in self._finals:
            result.add_arc(q + a_off, other.start + b_off)
        result._finals.update(q + b_off for q in other._finals)
        return result

    def closure(self) -> "MarkedFST":
        """Kleene star: zero or more paths of ``self`` in sequence."""
        result = MarkedFST(f"({self.name})*")
        result._finals.add(result.start)
        offset = self._copy_into(result)
        result.add_arc(result.start, self.start + offset)
        for q in self._finals:
            result.add_arc(q + offset, result.start)
        return result

    def compose(self, other: "MarkedFST") -> "MarkedFST":
        """Mark-concatenating composition (003 App. A): arc ``a:b/ω1`` of ``self`` meeting arc
        ``b:c/ω2`` of ``other`` gives ``a:c/ω1ω2``.

        Arcs must carry at most one symbol per tape. An ε-output arc of ``self`` or an
        ε-input arc of ``other`` moves alone with its own marks. A filter state orders those
        lone moves (``other``'s before ``self``'s between two matched moves) so each pair of
        paths is composed exactly once and no spurious ambiguity is created.
        ``nfst.compose_openfst(self, other)`` composes through OpenFst (the same paths, other
        state numbers; much faster on large topologies, see ``nfst.fst.openfst_compose``).
        """
        for t in (self, other):
            t.require_single_symbols("compose")
        result = MarkedFST(f"({self.name} o {other.name})")
        index = {(self.start, other.start, 0): result.start}
        agenda = [(self.start, other.start, 0)]
        out1 = {q: self.out_arcs(q) for q in range(self._num_states)}
        out2 = {q: other.out_arcs(q) for q in range(other._num_states)}

        def visit(key: tuple[int, int, int]) -> int:
            if key not in index:
                index[key] = result.add_state()
                agenda.append(key)
            return index[key]

        while agenda:
            q1, q2, f = key = agenda.pop()
            src = index[key]
            if q1 in self._finals and q2 in other._finals:
                result._finals.add(src)
            for a1 in out1[q1]:
                if not a1.output:  # self moves alone; afterwards other may not move alone
                    dst = visit((a1.dst, q2, 1))
                    result._arcs.append(Arc(src, dst, a1.input, (), a1.marks))
                    continue
                for a2 in out2[q2]:
                    if a2.input == a1.output:
                        dst = visit((a1.dst, a2.dst, 0))
                        result._arcs.append(Arc(src, dst, a1.input, a2.output, a1.marks + a2.marks))
            if f == 0:
                for a2 in out2[q2]:
                    if not a2.input:
                        dst = visit((q1, a2.dst, 0))
                        result._arcs.append(Arc(src, dst, (), a2.output, a2.marks))
        return result.trimmed()

    def require_single_symbols(self, what: str) -> None:
        for a in self._arcs:
            if len(a.input) > 1 or len(a.output) > 1:
                raise InvalidMFSTError(
                    f"{self.name}: {what} needs at most one symbol per tape, arc {a}",
                    "split multi-symbol arcs into chains first",
                )

    def trimmed(self) -> "MarkedFST":
        """Keep only states on some path from the start to a final state."""
        fwd = _reachable({self.start}, self._arcs, forward=True)
        bwd = _reachable(set(self._finals), self._arcs, forward=False)
        keep = sorted(fwd & bwd, key=lambda q: (q != self.start, q))
        result = MarkedFST(self.name)
        if not keep:  # empty language: a lone non-final start state
            return result
        new = {q: i for i, q in enumerate(keep)}
        result._num_states = len(keep)
        result._finals = {new[q] for q in self._finals if q in new}
        result._arcs = [
            Arc(new[a.src], new[a.dst], a.input, a.output, a.marks)
            for a in self._arcs
            if a.src in new and a.dst in new
        ]
        return result


def _reachable(sources: set[int], arcs: Iterable[Arc], *, forward: bool) -> set[int]:
    succ: dict[int, list[int]] = {}
    for a in arcs:
        u, v = (a.src, a.dst) if forward else (a.dst, a.src)
        succ.setdefault(u, []).append(v)
    seen = set(sources)
    stack = list(sources)
    while stack:
        for v in succ.get(stack.pop(), ()):
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return seen
