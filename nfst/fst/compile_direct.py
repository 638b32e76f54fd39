"""Compile T_{x,y} without OpenFst, for the MFSTs whose product with x and y is already
deterministic over marks (docs/design.md §3, "The direct path"). Many pairs at once.

Conditions on T (:func:`direct_refusal` names the first that fails):

1. every arc carries at least one mark;
2. at every state the arcs' mark strings are prefix-free: no two equal, none a proper prefix of
   another;
3. the arcs that read and write nothing form no cycle (else T_{x,y} is cyclic).

Spell the mark strings of each state's out-arcs through a trie rooted at the state: the trie
nodes v are T's states (the roots) and the proper prefixes; the last mark of arc a leads to the
root dst(a). The product over cells (i, j) of the (|x|+1)(|y|+1) grid

    (i, v, j) --ω--> (i, v', j)                     for a trie edge v --ω--> v' inside an arc,
    (i, v, j) --ω--> (i + |a_Σ|, dst(a), j + |a_Δ|)  for arc a's last mark ω, where
                                                    x[i:i+|a_Σ|] = a_Σ and y[j:j+|a_Δ|] = a_Δ,

is x ∘ T ∘ y with marks spelled one per arc; by condition 2 a mark prefix leads to one node
only, so the product is deterministic over marks as built, and T is unambiguous (two paths
never share a mark string). Symbols are consumed when an arc completes.

1. Reach: the arc-level product over (q, i, j), its arcs the arcs of T that match, searched
   forwards from (q0, 0, 0) and backwards from (F, |x|, |y|) (breadth-first frontiers).
2. Expand each live arc-level arc into its trie path; (state, mark) fixes an arc, so shared
   prefixes merge. The result is isomorphic to OpenFst's determinized x ∘ T ∘ y (a subset of
   that recipe holds the composed states of one trie node and cell), so ``states_before_min``
   and ``arcs_before_min`` count the same states and arcs as on the OpenFst path.
3. Heights h(s), the most arcs on a path to a dead end: Kahn's algorithm from the sinks, one
   frontier per height.
4. By increasing height, two things that need only the states below:
   - positions "as soon as possible": the cell of s advanced over the longest common prefix of
     the tagged symbol streams of every path from s to the end (003 §3). A path is its cell c_d
     on each diagonal d = i + j (a mark that carries a group of symbols skips diagonals; those
     get a code naming the group's start and shape, as OpenFst's group label does). With W(t)
     a witness path of t (that of its first arc) and u_a the cells of arc a's own symbols,

         e(s) = d(s)                                                   if s is final,
         e(s) = min( min_a e(dst a), first d where the u_a · W(dst a) disagree − 1 )  else,

     and the position is c_{e(s)} of W(s); the start's is (0, 0), since nothing is consumed
     before the first mark;
   - the minimal acceptor (Revuz 1992): s ≡ s' iff they have the same finality, position and
     set of (mark, class of target); equivalent states have equal heights, so one
     ``np.unique`` over each height's signatures finds its classes.
5. Number the classes as the OpenFst path does (it minimizes a topologically sorted FST in
   reverse): the reverse postorder of a depth-first search from the start, out-arcs by mark.
   Arcs are sorted by source and mark. The lattice is the OpenFst path's, array for array.

Steps 1–4 are array operations over every state of every pair in the batch, one frontier or
height at a time; step 5 is a Python loop per lattice.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import LatticeTooLargeError, NfstError, NoPathError
from .lattice import Lattice
from .mfst import MarkedFST

_MATCH_CELLS = 1 << 24
"""Arcs × cells of one pair's match table built at once (larger pairs go in slices)."""
_DENSE_CODES = 1 << 25
"""Product states are numbered through a table over all their codes up to this many."""


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
        num, width = len(arcs), max(len(a.marks) for a in arcs) if arcs else 1
        self.path = np.zeros((num, width), dtype=np.int64)
        """(A, K): the trie node each of the arc's marks leaves (the first is the arc's src)."""
        self.mark = np.zeros((num, width), dtype=np.int64)
        self.length = np.asarray([len(a.marks) for a in arcs], dtype=np.int64)
        self.src = np.asarray([a.src for a in arcs], dtype=np.int64)
        self.dst = np.asarray([a.dst for a in arcs], dtype=np.int64)
        self.di = np.asarray([len(a.input) for a in arcs], dtype=np.int64)
        self.dj = np.asarray([len(a.output) for a in arcs], dtype=np.int64)
        child: dict[tuple[int, int], int] = {}
        nodes = T.num_states
        for a, arc in enumerate(arcs):
            node = arc.src
            for t, m in enumerate(arc.marks):
                self.path[a, t], self.mark[a, t] = node, mark_id[m]
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
                self.group_shape[a] = shapes.setdefault((nx - gx, n - (k - 1) - (nx - gx)),
                                                        len(shapes))
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
            if v[:len(u)] == u:
                relation = "twice" if u == v else "one a prefix of the other"
                return (f"{name}: state {q} has arcs with mark strings {' '.join(u)!r} and "
                        f"{' '.join(v)!r} ({relation})")
    silent = {q: [a.dst for a in T.arcs if a.src == q and not a.input and not a.output]
              for q in range(T.num_states)}
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
    arc_id = np.asarray([index.setdefault(getattr(a, tape), len(index)) for a in arcs],
                        dtype=np.int64)
    return [np.asarray([ids[s] for s in string], dtype=np.int64) for string in index], arc_id


def _matches(strings: list[np.ndarray], text: np.ndarray) -> np.ndarray:
    """(U, |text| + 1) bool: whether string u occurs in ``text`` at each offset."""
    out = np.zeros((len(strings), len(text) + 1), dtype=bool)
    for n in {len(s) for s in strings}:
        rows = np.asarray([u for u, s in enumerate(strings) if len(s) == n])
        if n == 0:
            out[rows] = True
        elif n <= len(text):
            windows = np.lib.stride_tricks.sliding_window_view(text, n)
            patterns = np.stack([strings[u] for u in rows])
            out[rows, :len(windows)] = (windows[None] == patterns[:, None]).all(-1)
    return out


def _gather(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR entries of ``rows``: (entry indices, position in ``rows`` of each)."""
    starts, counts = offsets[rows], offsets[rows + 1] - offsets[rows]
    owner = np.repeat(np.arange(len(rows)), counts)
    return np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts - starts, counts), owner


def _reach(num: int, src: np.ndarray, dst: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """(num,) bool: the nodes reachable from ``sources`` along arcs src -> dst (one sweep over
    the arcs per step of the longest path)."""
    seen = np.zeros(num, dtype=bool)
    seen[sources] = True
    while True:
        new = dst[seen[src] & ~seen[dst]]
        if not len(new):
            return seen
        seen[new] = True


def _index(total: int, *codes: np.ndarray):
    """The distinct codes (sorted, each < ``total``) and a function giving a code's index
    among them: a table over every code where it fits in memory, else a sort."""
    if total <= _DENSE_CODES:
        present = np.zeros(total, dtype=bool)
        for c in codes:
            present[c] = True
        distinct = np.flatnonzero(present)
        table = np.empty(total, dtype=np.int64)  # read only where a code is present
        table[distinct] = np.arange(len(distinct))
        return distinct, lambda c: table[c]
    distinct = np.unique(np.concatenate(codes))
    return distinct, lambda c: np.searchsorted(distinct, c)


def compile_direct(T: MarkedFST, pairs: Sequence[tuple[tuple[str, ...], tuple[str, ...]]],
                   max_states: int) -> list[Lattice | NfstError]:
    """T_{x,y} of each pair (symbols known to T), or the error that pair raises (NoPathError,
    LatticeTooLargeError when the product has more than ``max_states`` states). T must
    qualify (:func:`direct_refusal`)."""
    top = DirectTopology.of(T)
    assert top.refusal is None, top.refusal
    results: list[Lattice | NfstError | None] = [None] * len(pairs)
    rows = np.arange(len(pairs))
    wheres = [f"{T.name} on x={' '.join(x)!r}, y={' '.join(y)!r}" for x, y in pairs]
    if not len(pairs):
        return []
    X = np.asarray([len(x) + 1 for x, _ in pairs], dtype=np.int64)
    Y = np.asarray([len(y) + 1 for _, y in pairs], dtype=np.int64)
    cells = X * Y

    # 1. the arc-level product, coded base[b] + q·cells + i·Y + j
    base = np.concatenate([[0], np.cumsum(top.num_states * cells)])
    found = []  # (pair, arc, i, j) of every arc that matches
    for b, (x, y) in enumerate(pairs):
        mx = _matches(top.in_strings, np.asarray([top.inputs[s] for s in x], dtype=np.int64))
        my = _matches(top.out_strings, np.asarray([top.outputs[s] for s in y], dtype=np.int64))
        step = max(1, _MATCH_CELLS // int(cells[b]))
        for lo in range(0, len(top.src), step):
            arcs = slice(lo, lo + step)
            a, i, j = np.nonzero(mx[top.in_id[arcs]][:, :, None] & my[top.out_id[arcs]][:, None])
            found.append(np.stack([np.full(len(a), b), a + lo, i, j]))
    b, a, i, j = np.concatenate(found, axis=1) if found else np.zeros((4, 0), dtype=np.int64)
    src = base[b] + top.src[a] * cells[b] + i * Y[b] + j
    dst = base[b] + top.dst[a] * cells[b] + (i + top.di[a]) * Y[b] + j + top.dj[a]
    starts = base[:-1]
    finals = (base[:-1, None] + np.flatnonzero(top.is_final)[None] * cells[:, None]
              + cells[:, None] - 1)
    forward = _reach(int(base[-1]), src, dst, starts)
    backward = _reach(int(base[-1]), dst, src, finals.ravel())
    has_path = backward[starts]
    for r in rows[~has_path]:
        results[r] = NoPathError(f"{wheres[r]}: no generating path")
    live = forward[src] & backward[dst]
    b, a, i, j = b[live], a[live], i[live], j[live]

    # 2. spell each live arc through its trie path; (state, mark) fixes the arc
    base = np.concatenate([[0], np.cumsum(top.num_nodes * cells)])
    K = top.path.shape[1]
    t = np.arange(K)
    spelled = t < top.length[a][:, None]
    last = t == top.length[a][:, None] - 1
    cell = (i * Y[b] + j)[:, None]
    s_code = base[b][:, None] + top.path[a] * cells[b][:, None] + cell
    within = base[b][:, None] + np.roll(top.path[a], -1, axis=1) * cells[b][:, None] + cell
    onward = (base[b] + top.dst[a] * cells[b] + (i + top.di[a]) * Y[b] + j + top.dj[a])[:, None]
    d_code = np.where(last, onward, within)[spelled]
    s_code, mark = s_code[spelled], top.mark[a][spelled]
    arc_of = np.where(last, a[:, None], -1)[spelled]  # the T arc a last mark completes
    M = len(top.marks)
    _, first = np.unique(s_code * M + mark, return_index=True)
    s_code, mark, d_code, arc_of = s_code[first], mark[first], d_code[first], arc_of[first]
    state_codes, index = _index(int(base[-1]), s_code, d_code, base[:-1][has_path])
    src, dst = index(s_code), index(d_code)
    S = len(state_codes)
    pair = np.searchsorted(base, state_codes, side="right") - 1
    node, c = np.divmod(state_codes - base[pair], cells[pair])
    si, sj = np.divmod(c, Y[pair])
    final = (node < top.num_states) & top.is_final[np.minimum(node, top.num_states - 1)] \
        & (c == cells[pair] - 1)
    states_of = np.bincount(pair, minlength=len(pairs))
    arcs_of = np.bincount(pair[src], minlength=len(pairs))
    for r in np.flatnonzero(states_of > max_states):
        results[r] = LatticeTooLargeError(f"{wheres[r]}: T_{{x,y}} has {states_of[r]} states "
                                          f"before minimization > max_states={max_states}")

    # 3. heights, one frontier per height from the sinks
    out_offsets = np.searchsorted(src, np.arange(S + 1))
    by_dst = np.argsort(dst, kind="stable")
    in_offsets = np.searchsorted(dst[by_dst], np.arange(S + 1))
    degree = np.diff(out_offsets)
    remaining = degree.copy()
    height = np.full(S, -1, dtype=np.int64)
    levels = []
    frontier = np.flatnonzero(remaining == 0)
    while len(frontier):
        height[frontier] = len(levels)
        levels.append(frontier)
        entries, _ = _gather(in_offsets, frontier)
        sources, counts = np.unique(src[by_dst[entries]], return_counts=True)
        remaining[sources] -= counts
        frontier = sources[remaining[sources] == 0]

    # 4. positions and classes, by increasing height
    diag = si + sj
    width = int((X + Y).max()) - 1
    small = int(X.max()) * top.num_shapes < np.iinfo(np.int16).max  # codes fit in 16 bits
    witness = np.zeros((S, width), dtype=np.int16 if small else np.int64)
    row = np.arange(S)  # the witness row of s: its own, or its target's when s adds nothing
    reach_end = np.zeros(S, dtype=np.int64)  # e(s): the diagonal where the common prefix ends
    cls = np.full(S, -1, dtype=np.int64)
    representative = []
    num_classes = 0
    columns = np.arange(width)
    for level in levels:
        entries, owner = _gather(out_offsets, level)
        counts = degree[level]
        first = np.cumsum(counts) - counts
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
            code = np.where(top.unit_skip[a_u],
                            -1 - (i0 + top.group_dx[a_u][:, None]) * top.num_shapes
                            - top.group_shape[a_u][:, None], i0 + top.unit_dx[a_u])
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
                differs = (paths[at_built[many]] != paths[mine]) \
                    & (columns >= diag[level][owner[many]][:, None])
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
        signature = np.full((len(level), 3 + int(counts.max())), -1, dtype=np.int64)
        signature[:, 0] = pair[level]
        signature[:, 1] = final[level]
        signature[:, 2] = ends * (width + 1) + witness[row[level], ends]
        if len(entries):
            signature[owner, 3 + np.arange(len(entries)) - first[owner]] = \
                mark[entries] * S + cls[dst[entries]]
        order = np.lexsort(signature.T[::-1])
        ranked = signature[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (ranked[1:] != ranked[:-1]).any(1)
        cls[level[order]] = num_classes + np.cumsum(new) - 1
        representative.append(level[order[new]])
        num_classes += int(new.sum())
    rep = np.concatenate(representative) if representative else np.zeros(0, dtype=np.int64)
    pos_i = witness[row[rep], reach_end[rep]]
    pos_j = reach_end[rep] - pos_i

    # 5. per lattice: number the classes by depth-first search, as the OpenFst path does
    is_rep = np.zeros(S, dtype=bool)
    is_rep[rep] = True
    kept = is_rep[src]
    c_src, c_mark, c_dst = cls[src[kept]], mark[kept], cls[dst[kept]]
    order = np.lexsort((c_mark, c_src, pair[rep][c_src]))
    c_src, c_mark, c_dst = c_src[order], c_mark[order], c_dst[order]
    class_pair = pair[rep]
    by_pair = np.argsort(class_pair, kind="stable")
    class_bounds = np.searchsorted(class_pair[by_pair], np.arange(len(pairs) + 1))
    local = np.empty(num_classes, dtype=np.int64)  # a class's index among its pair's
    local[by_pair] = np.arange(num_classes) - class_bounds[class_pair[by_pair]]
    arc_bounds = np.searchsorted(class_pair[c_src], np.arange(len(pairs) + 1))
    start_class = cls[index(base[:-1][has_path])]
    final, height = final[rep], height[rep]
    # Chains: a class whose one out-arc enters a class with one in-arc is followed by it in
    # any depth-first search, so the search walks whole chains: (head, depth in the chain).
    link = (np.bincount(c_src, minlength=num_classes)[c_src] == 1) \
        & (np.bincount(c_dst, minlength=num_classes)[c_dst] == 1)
    head, depth = np.arange(num_classes), np.zeros(num_classes, dtype=np.int64)
    head[c_dst[link]], depth[c_dst[link]] = c_src[link], 1
    while not np.array_equal(head[head], head):  # pointer doubling up to the head
        depth, head = depth + depth[head], head[head]
    tail = np.arange(num_classes)
    is_tail = np.ones(num_classes, dtype=bool)
    is_tail[c_src[link]] = False
    tail[head[is_tail]] = np.flatnonzero(is_tail)
    for k, r in enumerate(rows[has_path]):
        if results[r] is not None:
            continue
        classes = by_pair[class_bounds[r]:class_bounds[r + 1]]
        lo, hi = arc_bounds[r], arc_bounds[r + 1]
        results[r] = _number(top.marks, pairs[r], classes, local[start_class[k]],
                             local[c_src[lo:hi]], c_mark[lo:hi], local[c_dst[lo:hi]],
                             local[head[classes]], depth[classes], local[tail[classes]],
                             final, pos_i, pos_j, height, int(states_of[r]),
                             int(arcs_of[r]))
    return results


def _number(marks, pair, classes, start, s, mark, d, head, depth, tail, final, pos_i, pos_j,
            height, states_before, arcs_before) -> Lattice:
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
            stack.extend(backwards[total - end[t]:total - begin[t]])
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
    return Lattice(mark_vocab=marks, x=x, y=y, arc_src=s[by_source], arc_dst=d[by_source],
                   arc_mark=mark[by_source], final=final[old].copy(), positions=positions,
                   height=height[old].copy(), states_before_min=states_before,
                   arcs_before_min=arcs_before)
