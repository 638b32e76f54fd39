"""Interoperation with OpenFst (via pynini): lattices as FSTs, and FSTs as numpy arrays.

pynini's Python-level weights go through decimal strings of ~9 significant digits (e.g. the
list ``pynini.shortestdistance`` returns), too coarse for 1e-9 reference checks. Reading the
FST's binary serialisation instead gives the exact float bits, and is also the fastest way to
get many arcs out of an FST.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pynini
import pywrapfst

from .lattice import Lattice
from .mfst import MarkedFST


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


def states_of(T: MarkedFST) -> tuple[pynini.Fst, pynini.Weight]:
    """A Pynini FST with T's states, start and final states (weight one), and no arcs yet;
    and that weight one, for the arcs to come."""
    fst = pynini.Fst()
    fst.add_states(T.num_states)
    fst.set_start(T.start)
    one = pynini.Weight.one(fst.weight_type())
    for q in T.finals:
        fst.set_final(q, one)
    return fst, one


def read_fst(fst: pynini.Fst) -> FstArrays:
    """Parse the FST's binary form as a ConstFst: a header, then one C struct per state
    (final weight, first arc, arc count, two ε counts), then one C struct per arc (int32
    ilabel, int32 olabel, weight, int32 nextstate), so numpy reads both arrays in one go."""
    data = pywrapfst.convert(fst, "const").write_to_string()
    weight = {"standard": "<f4", "log": "<f4", "tropical": "<f4",
              "log64": "<f8", "tropical64": "<f8"}[fst.arc_type()]
    pos = 4
    for _ in range(2):  # FST type and arc type strings
        (n,) = struct.unpack_from("<i", data, pos)
        pos += 4 + n
    flags = struct.unpack_from("<i", data, pos + 4)[0]
    if flags & 0b11:
        raise ValueError("read_fst: FSTs with attached symbol tables are not supported")
    start, num_states, num_arcs = struct.unpack_from("<qqq", data, pos + 16)
    pos += 40
    state_t = np.dtype([("final", weight), ("first", "<u4"), ("narcs", "<u4"),
                        ("ieps", "<u4"), ("oeps", "<u4")], align=True)
    arc_t = np.dtype([("i", "<i4"), ("o", "<i4"), ("w", weight), ("d", "<i4")], align=True)
    if pos + num_states * state_t.itemsize + num_arcs * arc_t.itemsize != len(data):
        raise ValueError("read_fst: unexpected ConstFst layout")
    states = np.frombuffer(data, state_t, num_states, pos)
    arcs = np.frombuffer(data, arc_t, num_arcs, pos + num_states * state_t.itemsize)
    return FstArrays(start=int(start), final=states["final"].astype(np.float64),
                     src=np.repeat(np.arange(num_states), states["narcs"].astype(np.int64)),
                     ilabel=arcs["i"].astype(np.int64), olabel=arcs["o"].astype(np.int64),
                     cost=arcs["w"].astype(np.float64), dst=arcs["d"].astype(np.int64))


def lattice_to_fst(lattice: Lattice, arc_weights: Optional[np.ndarray] = None,
                   arc_type: str = "log64") -> pynini.Fst:
    """The lattice as a pynini acceptor over mark ids + 1 (0 is ε). ``arc_weights`` are
    log-space scores; OpenFst costs are their negation."""
    weights = np.zeros(lattice.num_arcs) if arc_weights is None else np.asarray(arc_weights)
    fst = pynini.Fst(arc_type)
    fst.add_states(lattice.num_states)
    fst.set_start(0)
    one = pynini.Weight.one(arc_type)
    for s in np.flatnonzero(lattice.final):
        fst.set_final(int(s), one)
    for a in range(lattice.num_arcs):
        label = int(lattice.arc_mark[a]) + 1
        fst.add_arc(int(lattice.arc_src[a]), pynini.Arc(
            label, label, pynini.Weight(arc_type, -float(weights[a])), int(lattice.arc_dst[a])))
    return fst


def reverse_shortest_distance(lattice: Lattice, arc_weights: np.ndarray) -> np.ndarray:
    """OpenFst's backward scores β (log-space, (S,)) of a weighted lattice, in float64.

    OpenFst pushes the weights towards the start (a reverse ShortestDistance in the log64
    semiring, then reweighting c'(a) = c(a) + d(dst) − d(src) with d = −β); we read both
    FSTs' exact costs and solve for d. A new super-start keeps the lattice's start ordinary.
    """
    fst = lattice_to_fst(lattice, arc_weights)
    top = fst.add_state()
    fst.add_arc(top, pynini.Arc(0, 0, pynini.Weight.one("log64"), 0))
    fst.set_start(top)
    pushed = read_fst(pynini.push(fst, push_weights=True, delta=1e-15))
    orig = read_fst(fst)
    # Arcs come out grouped by source in insertion order, identically in both FSTs.
    first = np.searchsorted(orig.src, np.arange(lattice.num_states)).tolist()
    ocost, pcost, dst = orig.cost.tolist(), pushed.cost.tolist(), orig.dst.tolist()
    d = [0.0] * lattice.num_states
    for s in range(lattice.num_states - 1, -1, -1):  # topological order: dst > src
        if np.isfinite(orig.final[s]):
            d[s] = orig.final[s] - pushed.final[s]
        else:
            a = first[s]
            d[s] = ocost[a] + d[dst[a]] - pcost[a]
    return -np.asarray(d)
