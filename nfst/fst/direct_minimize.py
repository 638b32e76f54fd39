"""Steps 3–5 of the direct path (``nfst.fst.compile_direct``): from the trimmed product of a
batch of pairs, deterministic over marks, to each pair's minimal lattice, numbered as the
OpenFst path numbers it.

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
5. Number each lattice's classes as the OpenFst path does (it minimizes a topologically sorted
   FST in reverse): the reverse postorder of a depth-first search from the start, out-arcs by
   mark. The search walks chains (a class whose one out-arc enters a class with one in-arc is
   always followed by it), found for the whole batch by pointer doubling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lattice import Lattice


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


def gather(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR entries of ``rows``: (entry indices, position in ``rows`` of each)."""
    starts, counts = offsets[rows], offsets[rows + 1] - offsets[rows]
    owner = np.repeat(np.arange(len(rows)), counts)
    return np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts - starts, counts), owner


def heights(p: Product) -> tuple[np.ndarray, list[np.ndarray]]:
    """(S,) heights, and the states of each height (ascending ids)."""
    S = len(p.final)
    by_dst = np.argsort(p.dst, kind="stable")
    in_offsets = np.searchsorted(p.dst[by_dst], np.arange(S + 1))
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
        small = max_i * top.num_shapes < np.iinfo(np.int16).max  # codes fit in 16 bits
        self.witness = np.zeros((S, p.width), dtype=np.int16 if small else np.int64)
        self.row = np.arange(S)
        self.end = np.zeros(S, dtype=np.int64)
        self.diag = p.si + p.sj

    def position(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i = self.witness[self.row[states], self.end[states]].astype(np.int64)
        return i, self.end[states] - i

    def advance(self, level, entries, owner, counts, first) -> None:
        """e and W of the states of one height, from those of their targets."""
        p, top, witness, row, diag, reach_end = (
            self.p,
            self.top,
            self.witness,
            self.row,
            self.diag,
            self.end,
        )
        src, dst, arc_of, final, si, width = p.src, p.dst, p.arc_of, p.final, p.si, p.width
        columns = np.arange(width)
        ends = diag[level].copy()
        if len(entries):
            a_ = arc_of[entries]
            units = np.where(a_ >= 0, top.di[a_] + top.dj[a_], 0)
            many = counts[owner] > 1
            built = many | (units > 0)  # arcs whose path u_a · W(dst) is written out
            at_built = np.cumsum(built) - 1
            paths = witness[row[dst[entries[built]]]]
            with_units = np.flatnonzero(units[built] > 0)
            a_u = a_[built][with_units]
            d0 = diag[src[entries[built][with_units]]]
            i0 = si[src[entries[built][with_units]]][:, None]
            code = np.where(
                top.unit_skip[a_u],
                -1
                - (i0 + top.group_dx[a_u][:, None]) * top.num_shapes
                - top.group_shape[a_u][:, None],
                i0 + top.unit_dx[a_u],
            )
            r_, col = np.nonzero(np.arange(code.shape[1]) < units[built][with_units][:, None])
            paths[with_units[r_], d0[r_] + col] = code[r_, col]
            e_arc = reach_end[dst[entries]]
            one = counts == 1
            ends[one] = e_arc[first[one]]
            shares = one & ~built[first]
            row[level[shares]] = row[dst[entries[first[shares]]]]
            owns = one & built[first]
            witness[level[owns]] = paths[at_built[first[owns]]]
            if many.any():  # states with several arcs: where their paths part
                several = counts > 1
                segments = np.cumsum(counts[several]) - counts[several]
                mine = at_built[first[owner[many]]]
                differs = (paths[at_built[many]] != paths[mine]) & (
                    columns >= diag[level][owner[many]][:, None]
                )
                differs = np.logical_or.reduceat(differs, segments, axis=0)
                split = np.where(differs.any(1), differs.argmax(1) - 1, width)
                stay = np.minimum.reduceat(e_arc[many], segments)
                ends[several] = np.minimum(stay, split)
                witness[level[several]] = paths[at_built[first[several]]]
        ends_final = final[level]  # STOP is a future that consumes nothing
        ends[ends_final] = diag[level][ends_final]
        row[level[ends_final]] = level[ends_final]
        witness[level[ends_final], diag[level][ends_final]] = si[level][ends_final]
        reach_end[level] = ends


def classes(
    p: Product, top, max_i: int
) -> tuple[np.ndarray, np.ndarray, CommonPrefixes, np.ndarray]:
    """Each state's class (global ids), each class's representative state, the common
    prefixes (positions), and the heights."""
    S = len(p.final)
    height, levels = heights(p)
    out_offsets = np.searchsorted(p.src, np.arange(S + 1))
    degree = np.diff(out_offsets)
    prefixes = CommonPrefixes(p, top, max_i)
    cls = np.full(S, -1, dtype=np.int64)
    representative, num_classes = [], 0
    for level in levels:
        entries, owner = gather(out_offsets, level)
        counts = degree[level]
        first = np.cumsum(counts) - counts
        prefixes.advance(level, entries, owner, counts, first)
        pos_i, pos_j = prefixes.position(level)
        signature = np.full((len(level), 3 + int(counts.max())), -1, dtype=np.int64)
        signature[:, 0] = p.pair[level]
        signature[:, 1] = p.final[level]
        signature[:, 2] = pos_i * p.width + pos_j
        if len(entries):
            signature[owner, 3 + np.arange(len(entries)) - first[owner]] = (
                p.mark[entries] * S + cls[p.dst[entries]]
            )
        order = np.lexsort(signature.T[::-1])
        ranked = signature[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (ranked[1:] != ranked[:-1]).any(1)
        cls[level[order]] = num_classes + np.cumsum(new) - 1
        representative.append(level[order[new]])
        num_classes += int(new.sum())
    rep = np.concatenate(representative) if representative else np.zeros(0, dtype=np.int64)
    return cls, rep, prefixes, height


def lattices(
    p: Product, top, max_i: int, pairs, starts: np.ndarray, todo: np.ndarray, sizes: np.ndarray
) -> dict[int, Lattice]:
    """The lattice of each pair in ``todo`` (whose start state is ``starts[k]``, its product
    sizes ``sizes[k]`` = (states, arcs)), numbered by depth-first search."""
    cls, rep, prefixes, height = classes(p, top, max_i)
    num_classes = len(rep)
    pos_i, pos_j = prefixes.position(rep)
    is_rep = np.zeros(len(p.final), dtype=bool)
    is_rep[rep] = True
    kept = is_rep[p.src]
    c_src, c_mark, c_dst = cls[p.src[kept]], p.mark[kept], cls[p.dst[kept]]
    class_pair = p.pair[rep]
    order = np.lexsort((c_mark, c_src, class_pair[c_src]))
    c_src, c_mark, c_dst = c_src[order], c_mark[order], c_dst[order]
    by_pair = np.argsort(class_pair, kind="stable")
    class_bounds = np.searchsorted(class_pair[by_pair], np.arange(len(pairs) + 1))
    local = np.empty(num_classes, dtype=np.int64)  # a class's index among its pair's
    local[by_pair] = np.arange(num_classes) - class_bounds[class_pair[by_pair]]
    arc_bounds = np.searchsorted(class_pair[c_src], np.arange(len(pairs) + 1))
    head, depth, tail = _chains(c_src, c_dst, num_classes)
    final, height = p.final[rep], height[rep]
    out = {}
    for r, start in zip(todo.tolist(), starts[todo].tolist()):
        classes_ = by_pair[class_bounds[r] : class_bounds[r + 1]]
        lo, hi = arc_bounds[r], arc_bounds[r + 1]
        out[r] = _number(
            top.marks,
            pairs[r],
            classes_,
            local[cls[start]],
            local[c_src[lo:hi]],
            c_mark[lo:hi],
            local[c_dst[lo:hi]],
            local[head[classes_]],
            depth[classes_],
            local[tail[classes_]],
            final,
            pos_i,
            pos_j,
            height,
            int(sizes[r, 0]),
            int(sizes[r, 1]),
        )
    return out


def _chains(src: np.ndarray, dst: np.ndarray, n: int):
    """Per class: the head of its chain, its depth there, and (for heads) the chain's tail."""
    link = (np.bincount(src, minlength=n)[src] == 1) & (np.bincount(dst, minlength=n)[dst] == 1)
    head, depth = np.arange(n), np.zeros(n, dtype=np.int64)
    head[dst[link]], depth[dst[link]] = src[link], 1
    while not np.array_equal(head[head], head):  # pointer doubling up to the head
        depth, head = depth + depth[head], head[head]
    tail = np.arange(n)
    is_tail = np.ones(n, dtype=bool)
    is_tail[src[link]] = False
    tail[head[is_tail]] = np.flatnonzero(is_tail)
    return head, depth, tail


def _number(
    marks,
    pair,
    classes,
    start,
    s,
    mark,
    d,
    head,
    depth,
    tail,
    final,
    pos_i,
    pos_j,
    height,
    states_before,
    arcs_before,
) -> Lattice:
    """One pair's lattice from its classes (global ids, ascending), its class arcs in local ids
    (sorted by source and mark), its start, and each class's chain (head, depth; the tail of
    a head's chain): states in the reverse postorder of a depth-first search from the start,
    in which a chain's classes follow each other from head to tail."""
    n = len(classes)
    offsets = np.searchsorted(s, np.arange(n + 1)).tolist()
    targets = d.tolist()  # a chain's tail's targets are heads
    begin, end = offsets[:-1], offsets[1:]
    backwards = targets[::-1]  # a tail's targets, last first: popped in mark order
    total = len(targets)
    last = tail.tolist()
    seen = bytearray(n)
    stack, post = [int(start)], []
    while stack:
        q = stack.pop()
        if q < 0:  # all of chain ~q's targets are done
            post.append(~q)
        elif not seen[q]:
            seen[q] = 1
            stack.append(~q)
            t = last[q]
            stack.extend(backwards[total - end[t] : total - begin[t]])
    rank = np.zeros(n, dtype=np.int64)
    rank[post] = np.arange(len(post) - 1, -1, -1)
    new = np.empty(n, dtype=np.int64)
    new[np.lexsort((depth, rank[head]))] = np.arange(n)
    s, d = new[s], new[d]
    by_source = np.lexsort((mark, s))
    old = np.empty(n, dtype=np.int64)
    old[new] = classes
    positions = np.stack([pos_i[old], pos_j[old]], axis=1)
    positions[0] = 0  # nothing is consumed before the first mark
    x, y = pair
    return Lattice(
        mark_vocab=marks,
        x=x,
        y=y,
        arc_src=s[by_source],
        arc_dst=d[by_source],
        arc_mark=mark[by_source],
        final=final[old].copy(),
        positions=positions,
        height=height[old].copy(),
        states_before_min=states_before,
        arcs_before_min=arcs_before,
    )
