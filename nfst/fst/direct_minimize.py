"""Steps 3–4 of the direct path (``nfst.fst.compile_direct``): from the trimmed product of a
batch of pairs, deterministic over marks, to the batch's minimal acceptor with each state's
height and position (``nfst.fst.direct_number`` numbers it per pair).

3. Heights h(s), the most arcs on a path to a dead end: Kahn's algorithm from the sinks, one
   frontier per height.
4. By increasing height (every arc enters a lower height), two things that need only the
   states below:
   - positions "as soon as possible": the cell of s advanced over the longest common prefix of
     the tagged symbol streams of every path from s to the end (003 §3). A path is its cell c_d
     on each diagonal d = i + j (a mark that carries a group of symbols skips diagonals; those
     get a code naming the group's start and shape, as OpenFst's group label does). With W(t)
     a witness path of t (that of its first arc) and u_a the cells of arc a's own symbols,

         e(s) = d(s)                                                   if s is final,
         e(s) = min( min_a e(dst a), first d where the u_a · W(dst a) disagree − 1 )  else,

     and the position is c_{e(s)} of W(s); the start's is (0, 0), since nothing is consumed
     before the first mark. A state whose one arc adds no symbol shares its target's W;
   - the minimal acceptor (Revuz 1992): s ≡ s' iff they have the same finality, position and
     set of (mark, class of target); equivalent states have equal heights, so one sort of
     each height's signatures finds its classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix


@dataclass
class Product:
    """The trimmed product of a batch: S states, A arcs sorted by source and mark."""

    src: np.ndarray
    dst: np.ndarray
    mark: np.ndarray
    arc_of: np.ndarray
    """(A,): the arc of T whose last mark this is, -1 inside a trie."""
    pair: np.ndarray
    """(S,): the pair of each state; ``si``, ``sj`` its cell, ``final`` whether STOP is legal."""
    si: np.ndarray
    sj: np.ndarray
    final: np.ndarray
    width: int
    """Diagonals of the widest pair: max |x| + |y| + 1."""


def offsets(keys: np.ndarray, n: int) -> np.ndarray:
    """(n + 1,) CSR offsets of sorted ``keys`` in [0, n): key k's entries are
    offsets[k]:offsets[k + 1]."""
    out = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=out[1:])
    return out


def rooted_graph(n: int, src: np.ndarray, dst: np.ndarray, roots: np.ndarray) -> csr_matrix:
    """The (n + 1)-node graph of arcs src -> dst (``src`` ascending) and a root n above
    ``roots``, for SciPy's searches: each node's arcs in their order. (Its data are float64,
    the searches' own type: a conversion would sort each row's targets by number.)"""
    src, dst = np.append(src, np.full(len(roots), n)), np.append(dst, roots)
    indptr = offsets(src, n + 1)
    return csr_matrix((np.ones(len(dst)), dst, indptr), shape=(n + 1, n + 1))


def gather(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR entries of ``rows``: (entry indices, position in ``rows`` of each)."""
    starts, counts = offsets[rows], offsets[rows + 1] - offsets[rows]
    owner = np.repeat(np.arange(len(rows)), counts)
    return np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts - starts, counts), owner


def heights(p: Product) -> tuple[np.ndarray, list[np.ndarray]]:
    """(S,) heights, and the states of each height (ascending ids)."""
    S = len(p.final)
    by_dst = np.argsort(p.dst, kind="stable")
    in_offsets = offsets(p.dst[by_dst], S)
    remaining = np.bincount(p.src, minlength=S)
    height = np.full(S, -1, dtype=np.int64)
    levels = []
    frontier = np.flatnonzero(remaining == 0)
    while len(frontier):
        height[frontier] = len(levels)
        levels.append(frontier)
        entries, _ = gather(in_offsets, frontier)
        sources, counts = np.unique(p.src[by_dst[entries]], return_counts=True)
        remaining[sources] -= counts
        frontier = sources[remaining[sources] == 0]
    return height, levels


class CommonPrefixes:
    """The witness paths W(s) (rows over diagonals, shared where a state adds nothing) and the
    diagonal e(s) where the common prefix of s's paths ends."""

    def __init__(self, p: Product, top, max_i: int):
        S = len(p.final)
        self.p, self.top = p, top
        # the narrowest type that holds every code: the rows are copied and compared whole
        codes = max_i * top.num_shapes
        kind = next(t for t in (np.int8, np.int16, np.int64) if codes < np.iinfo(t).max)
        self.witness = np.zeros((S, p.width), dtype=kind)
        self.row = np.arange(S)
        self.end = np.zeros(S, dtype=np.int64)
        self.diag = p.si + p.sj

    def position(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i = self.witness[self.row[states], self.end[states]].astype(np.int64)
        return i, self.end[states] - i

    def advance(self, level: slice, arcs: slice, owner, counts, first) -> None:
        """e and W of the states of one height (``level``, their out-arcs ``arcs``, each
        arc's state in the level ``owner``), from those of their targets."""
        p, top, witness, row, reach_end = self.p, self.top, self.witness, self.row, self.end
        diag, si, width = self.diag[level], p.si[level], p.width
        witness_, row_ = witness[level], row[level]  # views: writing them writes the level's
        ends = diag.copy()
        if len(owner):
            a_, targets = p.arc_of[arcs], p.dst[arcs]
            units = np.where(a_ >= 0, top.di[a_] + top.dj[a_], 0)
            many = counts[owner] > 1
            built = many | (units > 0)  # arcs whose path u_a · W(dst) is written out
            at_built = np.cumsum(built) - 1
            paths = witness[row[targets[built]]]
            with_units = np.flatnonzero(units[built] > 0)
            a_u = a_[built][with_units]
            mine_u = owner[built][with_units]
            d0, i0 = diag[mine_u], si[mine_u][:, None]
            code = np.where(
                top.unit_skip[a_u],
                -1
                - (i0 + top.group_dx[a_u][:, None]) * top.num_shapes
                - top.group_shape[a_u][:, None],
                i0 + top.unit_dx[a_u],
            )
            r_, col = np.nonzero(np.arange(code.shape[1]) < units[built][with_units][:, None])
            paths[with_units[r_], d0[r_] + col] = code[r_, col]
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
        final = np.flatnonzero(p.final[level])  # STOP is a future that consumes nothing
        ends[final] = diag[final]
        row_[final] = level.start + final
        witness_[final, diag[final]] = si[final]
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
    """Heights, positions and classes, one height at a time (on the product renumbered so that
    each height's states are contiguous: the loop then reads memory in order)."""
    S = len(p.final)
    height, levels = heights(p)
    by_height = np.concatenate(levels) if levels else np.zeros(0, dtype=np.int64)
    number = np.empty(S, dtype=np.int64)
    number[by_height] = np.arange(S)
    p = _renumbered(p, by_height, number)
    bounds = np.cumsum([0] + [len(level) for level in levels]).tolist()
    out_offsets = offsets(p.src, S)
    degree = np.diff(out_offsets)
    prefixes = CommonPrefixes(p, top, max_i)
    cls = np.full(S, -1, dtype=np.int64)
    representative, num_classes = [], 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):  # a height's states, and their arcs, in a row
        level, arcs = slice(lo, hi), slice(int(out_offsets[lo]), int(out_offsets[hi]))
        counts = degree[level]
        owner = np.repeat(np.arange(hi - lo), counts)
        first = np.cumsum(counts) - counts
        prefixes.advance(level, arcs, owner, counts, first)
        pos_i, pos_j = prefixes.position(level)
        # (pair, finality, position) as one key, then the (mark, class of target) of each arc
        signature = np.full((hi - lo, 1 + int(counts.max())), -1, dtype=np.int64)
        signature[:, 0] = ((p.pair[level] * 2 + p.final[level]) * p.width + pos_i) * p.width + pos_j
        if len(owner):
            signature[owner, 1 + np.arange(len(owner)) - first[owner]] = (
                p.mark[arcs] * S + cls[p.dst[arcs]]
            )
        order = np.lexsort(signature.T[::-1])
        ranked = signature[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (ranked[1:] != ranked[:-1]).any(1)
        cls[level][order] = num_classes + np.cumsum(new) - 1
        representative.append(lo + order[new])
        num_classes += int(new.sum())
    rep = np.concatenate(representative) if representative else np.zeros(0, dtype=np.int64)
    return Minimal(cls[number], by_height[rep], prefixes.position(rep), height)


def _renumbered(p: Product, order: np.ndarray, new: np.ndarray) -> Product:
    """p with state order[k] numbered k (``new`` the inverse), arcs sorted by source and mark:
    each state's arcs, in their order, taken in the new order of the states."""
    by_source, _ = gather(offsets(p.src, len(order)), order)
    return Product(
        src=new[p.src[by_source]],
        dst=new[p.dst[by_source]],
        mark=p.mark[by_source],
        arc_of=p.arc_of[by_source],
        pair=p.pair[order],
        si=p.si[order],
        sj=p.sj[order],
        final=p.final[order],
        width=p.width,
    )
