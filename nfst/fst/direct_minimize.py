"""Steps 3–4 of the direct path (``nfst.fst.compile_direct``): from the trimmed product of a
batch of pairs, deterministic over marks, to the batch's minimal acceptor with each state's
height and position (``nfst.fst.direct_number`` numbers it per pair).

3. The core (``nfst.fst.direct_chains``): the product without its links, the states that are
   not final and have one out-arc; each core arc stands for the chain of links it enters.
4. Layer by layer over the core (every arc enters a lower layer), three things that need only
   the states below:
   - heights h(s), the most arcs on a path to a dead end: the most over s's arcs of the
     chain's length plus its end's height;
   - positions "as soon as possible": the cell of s advanced over the longest common prefix of
     the tagged symbol streams of every path from s to the end (003 §3). A path is its cell c_d
     on each diagonal d = i + j (a mark that carries a group of symbols skips diagonals; those
     get a code naming the group's start and shape, as OpenFst's group label does). With W(t)
     a witness path of t (that of its first arc) and u_a the cells of chain a's symbols,

         e(s) = d(s)                                                   if s is final,
         e(s) = min( min_a e(end a), first d where the u_a · W(end a) disagree − 1 )  else,

     and the position is c_{e(s)} of W(s); the start's is (0, 0), since nothing is consumed
     before the first mark. A state whose one arc adds no symbol shares its target's W;
   - the minimal acceptor (Revuz 1992): s ≡ s' iff they have the same finality, position and
     sequence of (mark, class of target), for a core state the sequence of (string id, class
     of the end) of its chains; equivalent states lie in one layer, so one sort of each
     layer's signatures finds its classes.

   Then each link takes the class of its (string id, class of its end), the height of its end
   plus its chain's length, and its end's position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .direct_chains import Chains, Core, core
from .direct_product import Product, gather, groups, offsets


class CommonPrefixes:
    """The witness paths W(s) of the core states (rows over diagonals, shared where a state
    adds nothing) and the diagonal e(s) where the common prefix of s's paths ends."""

    def __init__(self, c: Core, width: int, codes: int):
        K = len(c.final)
        self.c, self.width = c, width
        # the narrowest type that holds every code: the rows are copied and compared whole
        kind = next(t for t in (np.int8, np.int16, np.int64) if codes < np.iinfo(t).max)
        self.witness = np.zeros((K, width), dtype=kind)
        self.row = np.arange(K)
        self.end = np.zeros(K, dtype=np.int64)
        self.diag = c.si + c.sj

    def position(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i = self.witness[self.row[states], self.end[states]].astype(np.int64)
        return i, self.end[states] - i

    def advance(self, level: slice, arcs: slice, owner, counts, first) -> None:
        """e and W of the states of one layer (``level``, their out-arcs ``arcs``, each arc's
        state in the level ``owner``), from those of the ends of their chains."""
        c, witness, row, reach_end = self.c, self.witness, self.row, self.end
        diag, width = self.diag[level], self.width
        witness_, row_ = witness[level], row[level]  # views: writing them writes the level's
        ends = diag.copy()
        if len(owner):
            targets = c.end[arcs]
            written = np.diff(c.write_offsets[arcs.start : arcs.stop + 1]) > 0
            many = counts[owner] > 1
            built = many | written  # arcs whose path u_a · W(end) is written out
            at_built = np.cumsum(built) - 1
            paths = witness[row[targets[built]]]
            entries, path = gather(c.write_offsets, arcs.start + np.flatnonzero(built))
            paths[path, c.column[entries]] = c.code[entries]
            e_arc = reach_end[targets]
            one = counts == 1
            ends[one] = e_arc[first[one]]
            shares = one & ~built[first]
            row_[shares] = row[targets[first[shares]]]
            owns = one & built[first]
            witness_[owns] = paths[at_built[first[owns]]]
            if many.any():  # states with several arcs: where their paths part
                several = counts > 1
                segments = np.cumsum(counts[several]) - counts[several]
                mine = at_built[first[owner[many]]]
                differs = (paths[at_built[many]] != paths[mine]) & (
                    np.arange(width) >= diag[owner[many]][:, None]
                )
                differs = np.logical_or.reduceat(differs, segments, axis=0)
                split = np.where(differs.any(1), differs.argmax(1) - 1, width)
                stay = np.minimum.reduceat(e_arc[many], segments)
                ends[several] = np.minimum(stay, split)
                witness_[several] = paths[at_built[first[several]]]
        final = np.flatnonzero(c.final[level])  # STOP is a future that consumes nothing
        ends[final] = diag[final]
        row_[final] = level.start + final
        witness_[final, diag[final]] = c.si[level][final]
        reach_end[level] = ends


@dataclass
class Minimal:
    """The minimal acceptor of a batch's product: its states are classes of product states."""

    cls: np.ndarray
    """(S,): each product state's class."""
    representative: np.ndarray
    """(C,): a product state of each class."""
    positions: tuple[np.ndarray, np.ndarray]
    """(C,) twice: each class's position (i, j)."""
    height: np.ndarray
    """(S,): each product state's height."""


def minimize(p: Product, top, max_i: int) -> Minimal:
    """Heights, positions and classes of the core, one layer at a time, then of the links."""
    chains = Chains.of(p)
    c = core(p, chains, top)
    K = len(c.final)
    out_offsets = offsets(c.src, K)
    degree = np.diff(out_offsets)
    prefixes = CommonPrefixes(c, p.width, max_i * top.num_shapes)
    cls = np.full(K, -1, dtype=np.int64)
    height = np.zeros(K, dtype=np.int64)
    representative, num_classes = [], 0
    for lo, hi in zip(c.levels[:-1], c.levels[1:]):  # a layer's states, and their arcs, in a row
        level, arcs = slice(lo, hi), slice(int(out_offsets[lo]), int(out_offsets[hi]))
        counts = degree[level]
        owner = np.repeat(np.arange(hi - lo), counts)
        first = np.cumsum(counts) - counts
        prefixes.advance(level, arcs, owner, counts, first)
        pos_i, pos_j = prefixes.position(np.arange(lo, hi))
        # (pair, finality, position) as one key, then the (string, class of end) of each arc
        signature = np.full((hi - lo, 1 + int(counts.max())), -1, dtype=np.int64)
        signature[:, 0] = ((c.pair[level] * 2 + c.final[level]) * p.width + pos_i) * p.width + pos_j
        if len(owner):
            signature[owner, 1 + np.arange(len(owner)) - first[owner]] = (
                c.string[arcs] * K + cls[c.end[arcs]]
            )
            spans = c.length[arcs] + height[c.end[arcs]]
            has = counts > 0
            height[level][has] = np.maximum.reduceat(spans, first[has])
        order = np.lexsort(signature.T[::-1])
        ranked = signature[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (ranked[1:] != ranked[:-1]).any(1)
        cls[level][order] = num_classes + np.cumsum(new) - 1
        representative.append(lo + order[new])
        num_classes += int(new.sum())
    rep = np.concatenate(representative) if representative else np.zeros(0, dtype=np.int64)
    return _with_links(p, chains, c, prefixes, cls, rep, height)


def _with_links(p, chains: Chains, c: Core, prefixes, cls, rep, height) -> Minimal:
    """The core's classes extended to the links: a link's class is its (string id, class of
    its end); its position is its end's, its height its end's plus its chain's length."""
    ends = c.number[chains.end]  # each product state's end, as a core state
    links = np.flatnonzero(chains.link)
    key = chains.string[chains.first_arc[links]] * len(rep) + cls[ends[links]]
    inverse, first = groups(key)
    every = np.empty(len(chains.link), dtype=np.int64)
    every[c.state] = cls
    every[links] = len(rep) + inverse
    representative = np.concatenate([c.state[rep], links[first]])
    return Minimal(
        cls=every,
        representative=representative,
        positions=prefixes.position(ends[representative]),
        height=chains.length + height[ends],
    )
