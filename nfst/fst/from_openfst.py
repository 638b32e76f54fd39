"""Reading OpenFst and Pynini FSTs into nfst: an FST's arcs as numpy arrays (:func:`read_fst`),
and a Pynini transducer as a marked FST (:func:`from_pynini`). The other direction is
``nfst.fst.to_openfst``.

**Arrays** (:func:`read_fst`). pynini's Python-level weights go through decimal strings of ~9
significant digits (e.g. the list ``pynini.shortestdistance`` returns), too coarse for 1e-9
reference checks. Reading the FST's binary serialisation instead gives the exact float bits, and
is also the fastest way to get many arcs out of an FST.

**Marked FSTs** (:func:`from_pynini`). A Pynini transducer has an input and an output tape; each
of its arcs gets a mark substring from ``marks``:

- ``None`` (the default): one mark naming the arc's pair, ``"a:b"`` (``"a:ε"``, ``"ε:b"`` where a
  tape is ε); ε:ε arcs get no mark;
- a function ``(input, output) -> marks`` of the arc's symbols (``""`` for ε), returning a
  list of marks or a whitespace-separated string;
- :class:`OutputMarks` ``(prefix="@")``: the third tape rides on the output labels. An output
  symbol named ``prefix + m`` is the mark ``m`` (not an output symbol); other arcs get no marks.
  In Pynini's string syntax a mark is a bracketed symbol: ``pynini.cross("sh", "ش[@sh]")``.

Symbols on arcs without marks ride on the next marks of the path: every path of mark-less arcs
q ⇝ r followed by a marked arc r → s becomes one arc q → s carrying the path's symbols before
the arc's own (an ε-closure over the mark tape). A cycle of mark-less arcs, or symbols left
over when a mark-less path reaches a final state, is an error. Weights are ignored: a state is
final when its final weight is not Zero.

Labels are named by the FST's own symbol tables when it has them, else by ``token_type`` as
Pynini compiles strings: ``"utf8"`` (a label is a Unicode code point), ``"byte"`` (ASCII only)
or a ``pynini.SymbolTable``; bracketed symbols (``[name]``) come from Pynini's generated symbols.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import networkx as nx
import numpy as np
import pynini
import pywrapfst

from ..errors import InvalidMFSTError
from .mfst import Arc, MarkedFST, as_symbols


@dataclass
class FstArrays:
    """An FST as arrays: per-state final costs (S,) (inf = not final), per-arc fields (A,)."""

    start: int
    final: np.ndarray
    src: np.ndarray
    ilabel: np.ndarray
    olabel: np.ndarray
    cost: np.ndarray
    dst: np.ndarray


def read_fst(fst: pynini.Fst) -> FstArrays:
    """Parse the FST's binary form as a ConstFst: a header, then one C struct per state
    (final weight, first arc, arc count, two ε counts), then one C struct per arc (int32
    ilabel, int32 olabel, weight, int32 nextstate), so numpy reads both arrays in one go."""
    data = pywrapfst.convert(fst, "const").write_to_string()
    weight = {
        "standard": "<f4",
        "log": "<f4",
        "tropical": "<f4",
        "log64": "<f8",
        "tropical64": "<f8",
    }[fst.arc_type()]
    pos = 4
    for _ in range(2):  # FST type and arc type strings
        (n,) = struct.unpack_from("<i", data, pos)
        pos += 4 + n
    flags = struct.unpack_from("<i", data, pos + 4)[0]
    if flags & 0b11:
        raise ValueError("read_fst: FSTs with attached symbol tables are not supported")
    start, num_states, num_arcs = struct.unpack_from("<qqq", data, pos + 16)
    pos += 40
    state_t = np.dtype(
        [("final", weight), ("first", "<u4"), ("narcs", "<u4"), ("ieps", "<u4"), ("oeps", "<u4")],
        align=True,
    )
    arc_t = np.dtype([("i", "<i4"), ("o", "<i4"), ("w", weight), ("d", "<i4")], align=True)
    if pos + num_states * state_t.itemsize + num_arcs * arc_t.itemsize != len(data):
        raise ValueError("read_fst: unexpected ConstFst layout")
    states = np.frombuffer(data, state_t, num_states, pos)
    arcs = np.frombuffer(data, arc_t, num_arcs, pos + num_states * state_t.itemsize)
    return FstArrays(
        start=int(start),
        final=states["final"].astype(np.float64),
        src=np.repeat(np.arange(num_states), states["narcs"].astype(np.int64)),
        ilabel=arcs["i"].astype(np.int64),
        olabel=arcs["o"].astype(np.int64),
        cost=arcs["w"].astype(np.float64),
        dst=arcs["d"].astype(np.int64),
    )


EPSILON = "ε"
GENERATED = 0xF0000
"""Pynini numbers the bracketed symbols of its strings from the first code point of plane 15."""


@dataclass(frozen=True)
class OutputMarks:
    """Marks carried on the output tape as symbols named ``prefix + mark``."""

    prefix: str = "@"


MarkSpec = Union[None, OutputMarks, Callable[[str, str], Union[str, Sequence[str]]]]


def pair_mark(input: str, output: str) -> list[str]:
    """The default marks of an arc: one mark ``input:output``, none for ε:ε."""
    if not input and not output:
        return []
    return [f"{input or EPSILON}:{output or EPSILON}"]


def from_pynini(
    fst: pynini.Fst,
    marks: MarkSpec = None,
    *,
    token_type: Union[str, pynini.SymbolTable] = "utf8",
    name: str = "T",
) -> MarkedFST:
    """A marked FST with the paths of a Pynini transducer (see the module docstring)."""
    isyms, osyms = fst.input_symbols(), fst.output_symbols()
    bare = fst.copy()
    bare.set_input_symbols(None)
    bare.set_output_symbols(None)
    arrays = read_fst(bare)
    if arrays.start < 0:
        return MarkedFST(name)  # no start state: the empty relation
    in_name = _namer(isyms, token_type)
    out_name = _namer(osyms, token_type)
    mark_of = _mark_function(marks)
    raw = []
    for q, i, o, r in zip(
        arrays.src.tolist(), arrays.ilabel.tolist(), arrays.olabel.tolist(), arrays.dst.tolist()
    ):
        a, b = in_name(i), out_name(o)
        if isinstance(marks, OutputMarks) and b.startswith(marks.prefix):
            raw.append((q, r, (a,) if a else (), (), (b[len(marks.prefix) :],)))
        else:
            raw.append((q, r, (a,) if a else (), (b,) if b else (), mark_of(a, b)))
    finals = np.flatnonzero(np.isfinite(arrays.final)).tolist()
    return ride_on_marks(len(arrays.final), arrays.start, finals, raw, name)


def _mark_function(marks: MarkSpec) -> Callable[[str, str], tuple[str, ...]]:
    if marks is None:
        return lambda a, b: tuple(pair_mark(a, b))
    if isinstance(marks, OutputMarks):
        return lambda a, b: ()
    if callable(marks):
        return lambda a, b: as_symbols(marks(a, b), marks=True)
    raise InvalidMFSTError(
        f"from_pynini: marks={marks!r} is neither None, a function of "
        "(input, output) nor OutputMarks",
        "e.g. marks=OutputMarks('@')",
    )


def _namer(table: Optional[pynini.SymbolTable], token_type) -> Callable[[int], str]:
    """label -> symbol name ("" for ε)."""
    generated = pynini.generated_symbols()
    if table is None and isinstance(token_type, pynini.SymbolTable):
        table = token_type
    elif table is None and token_type not in ("utf8", "byte"):
        raise InvalidMFSTError(
            f"from_pynini: unknown token_type {token_type!r}",
            "use 'utf8', 'byte' or a pynini.SymbolTable",
        )
    cache = {0: ""}

    def name(label: int) -> str:
        if label in cache:
            return cache[label]
        if table is not None:
            text = table.find(label)
        elif label >= GENERATED:
            text = generated.find(label)
        elif token_type == "byte" and label >= 128:
            raise InvalidMFSTError(
                f"from_pynini: byte label {label} is part of a multi-byte character",
                "compile the grammar with token_type='utf8'",
            )
        else:
            text = chr(label)
        if not text:
            raise InvalidMFSTError(
                f"from_pynini: label {label} has no symbol",
                "attach symbol tables or pass token_type=<SymbolTable>",
            )
        cache[label] = text
        return text

    return name


def ride_on_marks(
    num_states: int,
    start: int,
    finals: Sequence[int],
    raw: Sequence[tuple[int, int, tuple, tuple, tuple]],
    name: str,
) -> MarkedFST:
    """The MFST of (src, dst, input, output, marks) arcs with the mark-less arcs closed away:
    their symbols move onto the next marked arc of each path; states renumbered so that
    ``start`` is 0, then trimmed."""
    bare = [a for a in raw if not a[4]]
    graph = nx.DiGraph()
    graph.add_edges_from((a[0], a[1]) for a in bare)
    if not nx.is_directed_acyclic_graph(graph):
        raise InvalidMFSTError(
            f"{name}: a cycle of arcs without marks",
            "optimize() the grammar (removes ε cycles) or mark a loop",
        )
    out_bare: dict[int, list] = {}
    out_marked: dict[int, list] = {}
    for a in raw:
        (out_marked if a[4] else out_bare).setdefault(a[0], []).append(a)
    # reach[q]: distinct (r, input, output) of the mark-less paths from q, in reverse topological order
    reach: dict[int, set] = {}
    for q in reversed(list(nx.topological_sort(graph))):
        reach[q] = {(q, (), ())}
        for _, r, i, o, _ in out_bare.get(q, ()):
            reach[q] |= {(t, i + ii, o + oo) for t, ii, oo in reach[r]}
    order = [start] + [q for q in range(num_states) if q != start]
    new = {q: k for k, q in enumerate(order)}
    final_set, result_finals, arcs = set(finals), set(), []
    for q in range(num_states):
        # sorted: a set's order follows the string hash seed, and T's arc order its fingerprint
        for r, i, o in sorted(reach.get(q, {(q, (), ())})):
            if r in final_set:
                if i or o:
                    raise InvalidMFSTError(
                        f"{name}: symbols {' '.join(i + o)!r} after the last mark of a path "
                        f"into final state {r}",
                        "end every path with a mark",
                    )
                result_finals.add(new[q])
            for _, s, ii, oo, m in out_marked.get(r, ()):
                arcs.append(Arc(new[q], new[s], i + ii, o + oo, m))
    return MarkedFST.from_arcs(num_states, result_finals, arcs, name).trimmed()
