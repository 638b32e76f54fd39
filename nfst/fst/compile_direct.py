"""Compile T_{x,y} without OpenFst, for the MFSTs whose product with x and y is already
deterministic over marks (docs/design.md §3, "The direct path"). Many pairs at once.

For the MFSTs that qualify (``nfst.fst.direct_topology``: every arc marked, mark strings
prefix-free at each state, no cycle of arcs without symbols), spell the mark strings of each
state's out-arcs through a trie rooted at the state (nodes v: T's states and the proper
prefixes; the last mark of arc a leads to the root dst(a)). The product over the cells (i, j)
of the (|x|+1)(|y|+1) grid

    (i, v, j) --ω--> (i, v', j)                     for a trie edge v --ω--> v' inside an arc,
    (i, v, j) --ω--> (i + |a_Σ|, dst(a), j + |a_Δ|)  for arc a's last mark ω, where
                                                    x[i:i+|a_Σ|] = a_Σ and y[j:j+|a_Δ|] = a_Δ,

is x ∘ T ∘ y with marks spelled one per arc; a mark prefix leads to one node only, so the
product is deterministic over marks as built, and T is unambiguous (two paths never share a
mark string). Symbols are consumed when an arc completes.

1. Reach: the arc-level product over (q, i, j), its arcs the arcs of T that match, searched
   forwards from (q0, 0, 0) and backwards from (F, |x|, |y|).
2. Expand each live arc-level arc into its trie path; (state, mark) fixes an arc, so shared
   prefixes merge. ``states_before_min`` and ``arcs_before_min`` count this trimmed product:
   OpenFst's determinized x ∘ T ∘ y up to state numbers, but for copies OpenFst may add of a
   state that an arc with several delayed symbols enters (equal counts on tr, scan, cipher).
3–4. Heights, positions and the minimal acceptor of the product's core, then of its chains of
   one-arc states: ``nfst.fst.direct_minimize`` (the chains: ``nfst.fst.direct_chains``).
5. The OpenFst path's numbering: ``nfst.fst.direct_number``. The lattice is the OpenFst
   path's, array for array.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order

from ..errors import LatticeTooLargeError, NfstError, NoPathError
from .direct_minimize import minimize
from .direct_number import lattices
from .direct_product import Product, gather, offsets
from .direct_topology import DirectTopology
from .lattice import Lattice
from .mfst import MarkedFST

_MATCH_CELLS = 1 << 24
"""Arcs × input offsets of the pairs whose matching arcs are found at once."""


def _matches(
    strings: list[np.ndarray], texts: list[tuple[str, ...]], ids: dict[str, int]
) -> np.ndarray:
    """(B, U, L + 1) bool, L the longest text: whether string u occurs in text b at each
    offset (never past the text's end)."""
    L = max(len(t) for t in texts)
    padded = np.full((len(texts), L + max(map(len, strings), default=0)), -1, dtype=np.int64)
    for b, text in enumerate(texts):
        padded[b, : len(text)] = [ids[symbol] for symbol in text]
    lengths = np.asarray([len(t) for t in texts])
    out = np.zeros((len(texts), len(strings), L + 1), dtype=bool)
    for n in {len(s) for s in strings}:
        rows = np.asarray([u for u, s in enumerate(strings) if len(s) == n])
        if n == 0:  # the empty string occurs at every offset up to the end
            out[:, rows] = (np.arange(L + 1) <= lengths[:, None])[:, None]
        else:  # a window with padding never matches
            windows = np.lib.stride_tricks.sliding_window_view(padded, n, axis=1)[:, : L + 1]
            patterns = np.stack([strings[u] for u in rows])
            out[:, rows] = (windows[:, None] == patterns[None, :, None]).all(-1)
    return out


def _reach(num: int, src: np.ndarray, dst: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """(num,) bool: the nodes reachable from ``sources`` along arcs src -> dst (a breadth-first
    search from a node above the sources; SciPy groups the arcs by source in linear time)."""
    rows, cols = np.append(src, np.full(len(sources), num)), np.append(dst, sources)
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(num + 1, num + 1)).tocsr()
    seen = np.zeros(num + 1, dtype=bool)
    seen[breadth_first_order(graph, num, directed=True, return_predecessors=False)] = True
    return seen[:num]


def compile_direct(
    T: MarkedFST, pairs: Sequence[tuple[tuple[str, ...], tuple[str, ...]]], max_states: int
) -> list[Lattice | NfstError]:
    """T_{x,y} of each pair (symbols known to T), or the error that pair raises (NoPathError,
    LatticeTooLargeError when the product has more than ``max_states`` states). T must
    qualify (:func:`direct_refusal`)."""
    top = DirectTopology.of(T)
    assert top.refusal is None, top.refusal
    if not len(pairs):
        return []
    wheres = [f"{T.name} on x={' '.join(x)!r}, y={' '.join(y)!r}" for x, y in pairs]
    X = np.asarray([len(x) + 1 for x, _ in pairs], dtype=np.int64)
    Y = np.asarray([len(y) + 1 for _, y in pairs], dtype=np.int64)
    live, has_path = _live_arcs(top, pairs, X, Y)
    product, starts = _spell(top, live, has_path, X, Y)
    sizes = np.stack(
        [
            np.bincount(product.pair, minlength=len(pairs)),
            np.bincount(product.pair[product.src], minlength=len(pairs)),
        ],
        axis=1,
    )
    results: list[Lattice | NfstError] = [
        NoPathError(f"{where}: no generating path")
        if not ok
        else LatticeTooLargeError(
            f"{where}: T_{{x,y}} has {n} states before minimization > max_states={max_states}"
        )
        if n > max_states
        else None
        for where, ok, n in zip(wheres, has_path, sizes[:, 0].tolist())
    ]
    todo = np.flatnonzero([r is None for r in results])
    minimal = minimize(product, top, int(X.max()))
    for r, lattice in lattices(product, minimal, top.marks, pairs, starts, todo, sizes).items():
        results[r] = lattice
    return results


def _live_arcs(top: DirectTopology, pairs, X: np.ndarray, Y: np.ndarray):
    """Step 1: (pair, arc, i, j) of every arc of the arc-level product on a path from
    (q0, 0, 0) to (F, |x|, |y|), and whether each pair has such a path. States are coded
    base[b] + q·cells + i·Y + j."""
    cells = X * Y
    base = np.concatenate([[0], np.cumsum(top.num_states * cells)])
    found = []
    by_input = np.argsort(top.in_id, kind="stable")  # T's arcs by their input string
    with_input = offsets(top.in_id[by_input], len(top.in_strings))
    step = max(1, _MATCH_CELLS // max(1, len(top.src) * int(X.max())))
    for lo in range(0, len(pairs), step):  # slices of pairs: arcs × offsets stay bounded
        some = pairs[lo : lo + step]
        mx = _matches(top.in_strings, [x for x, _ in some], top.inputs)
        my = _matches(top.out_strings, [y for _, y in some], top.outputs)
        bx, ux, i = np.nonzero(mx)  # where each input string matches: the arcs that read it ...
        entries, owner = gather(with_input, ux)
        bx, a, i = bx[owner], by_input[entries], i[owner]
        by, uy, jy = np.nonzero(my)  # ... times where their output matches
        width = len(top.out_strings)
        in_rows = offsets(by * width + uy, len(some) * width)
        entries, owner = gather(in_rows, bx * width + top.out_id[a])
        found.append(np.stack([bx[owner] + lo, a[owner], i[owner], jy[entries]]))
    b, a, i, j = np.concatenate(found, axis=1)
    src = base[b] + top.src[a] * cells[b] + i * Y[b] + j
    dst = base[b] + top.dst[a] * cells[b] + (i + top.di[a]) * Y[b] + j + top.dj[a]
    starts = base[:-1]
    finals = (
        base[:-1, None] + np.flatnonzero(top.is_final)[None] * cells[:, None] + cells[:, None] - 1
    )
    forward = _reach(int(base[-1]), src, dst, starts)
    backward = _reach(int(base[-1]), dst, src, finals.ravel())
    live = forward[src] & backward[dst]
    return (b[live], a[live], i[live], j[live]), backward[starts]


def _spell(top: DirectTopology, live, has_path: np.ndarray, X: np.ndarray, Y: np.ndarray):
    """Step 2: the live arcs spelled through their tries, as a :class:`Product`, and each
    pair's start state (-1 where it has no path). A state is coded base[b] + node·cells + i·Y
    + j; the states with out-arcs are numbered in the order of their codes, then the others
    (final states, roots of T's tries)."""
    b, a, i, j = live
    cells = X * Y
    base = np.concatenate([[0], np.cumsum(top.num_nodes * cells)])
    spelled, owner = gather(top.spelled, a)  # each spelled mark, and its live arc
    last = np.zeros(len(owner), dtype=bool)
    last[np.cumsum(top.length[a]) - 1] = True
    s_code = (base[b] + i * Y[b] + j)[owner] + top.path[spelled] * cells[b][owner]
    mark = top.mark[spelled]
    key = s_code * len(top.marks) + mark
    order = np.argsort(key, kind="stable")
    ranked, ranked_key = s_code[order], key[order]
    source = np.empty(len(key), dtype=np.int64)  # each spelled mark's state, numbered
    starts_run = np.ones(len(key), dtype=bool)
    starts_run[1:] = ranked[1:] != ranked[:-1]
    source[order] = np.cumsum(starts_run) - 1
    keep = np.ones(len(key), dtype=bool)  # arcs that share a trie edge, once
    keep[1:] = ranked_key[1:] != ranked_key[:-1]
    keep = order[keep]
    # a mark inside an arc leads to the next mark's state; an arc's last to a root
    roots = _Roots(top, base, cells, ranked[starts_run], b[owner][order][starts_run])
    target = np.empty(len(key), dtype=np.int64)
    target[:-1] = source[1:]
    ends = np.flatnonzero(last)
    onward = roots.code(b, top.dst[a], (i + top.di[a]) * Y[b] + j + top.dj[a])[owner[ends]]
    start_codes = roots.code(np.flatnonzero(has_path), 0, 0)
    numbers = roots.number(np.concatenate([onward, start_codes]))
    target[ends] = numbers[: len(ends)]
    starts = np.full(len(X), -1, dtype=np.int64)
    starts[has_path] = numbers[len(ends) :]
    pair, node, c = roots.states()
    final = (
        (node < top.num_states)
        & top.is_final[np.minimum(node, top.num_states - 1)]
        & (c == cells[pair] - 1)
    )
    si, sj = np.divmod(c, Y[pair])
    product = Product(
        src=source[keep],
        dst=target[keep],
        mark=mark[keep],
        arc_of=np.where(last, a[owner], -1)[keep],
        pair=pair,
        si=si,
        sj=sj,
        final=final,
        width=int((X + Y).max()) - 1,
    )
    return product, starts


class _Roots:
    """The states of a batch's product: those with out-arcs (``codes`` ascending, ``pairs``
    theirs) numbered first, then the roots only arcs enter, numbered as they are met."""

    def __init__(self, top: DirectTopology, base, cells, codes, pairs):
        self.top, self.cells = top, cells
        self.root_base = np.concatenate([[0], np.cumsum(top.num_states * cells)])
        node, c = np.divmod(codes - base[pairs], cells[pairs])
        self.pair, self.node, self.c = [pairs], [node], [c]
        self.table = np.full(int(self.root_base[-1]), -1, dtype=np.int64)
        is_root = node < top.num_states
        self.table[self.code(pairs[is_root], node[is_root], c[is_root])] = np.flatnonzero(is_root)
        self.size = len(codes)

    def code(self, pairs, node, cell) -> np.ndarray:
        """The root (pair, T's state, cell)'s index into the table."""
        return self.root_base[pairs] + node * self.cells[pairs] + cell

    def number(self, codes: np.ndarray) -> np.ndarray:
        """The states of root ``codes``, numbering those not yet numbered."""
        missing = np.unique(codes[self.table[codes] < 0])
        pairs = np.searchsorted(self.root_base, missing, side="right") - 1
        node, c = np.divmod(missing - self.root_base[pairs], self.cells[pairs])
        self.table[missing] = self.size + np.arange(len(missing))
        self.size += len(missing)
        self.pair.append(pairs), self.node.append(node), self.c.append(c)
        return self.table[codes]

    def states(self):
        """(S,) thrice: each state's pair, node and cell."""
        return tuple(np.concatenate(v) for v in (self.pair, self.node, self.c))
