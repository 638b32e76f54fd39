"""Step 5 of the direct path (``nfst.fst.compile_direct``): number each pair's minimal acceptor
as the OpenFst path numbers it, for a whole batch at once, and build its :class:`Lattice`.

The OpenFst path minimizes a topologically sorted FST in reverse, which leaves the states in
the reverse postorder of a depth-first search from the start, out-arcs taken in mark order.
One search covers the batch: a root above every pair's start, its arcs in pair order. The
pairs' graphs are disjoint, so each one's search is the one from its own start. The search is
compiled code (``scipy.sparse.csgraph``), which gives the search tree; the reverse postorder
is then a second search, of the tree alone, that takes each state's children last first: in a tree, the postorder reversed is the preorder with the children
reversed (the root, then its subtrees from the last to the first).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import depth_first_order

from .direct_minimize import Minimal
from .direct_product import Product, gather, offsets, rooted_graph
from .lattice import Lattice


def reverse_postorder(n: int, src: np.ndarray, dst: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """The nodes reached by a depth-first search from each of ``roots`` in turn (each node's
    out-arcs in the order given, ``src`` ascending): for each root, its nodes in reverse
    postorder. ``roots`` must lie in disjoint graphs, none reachable from another."""
    _, parent = _search(rooted_graph(n, src, dst, roots), n)
    # a search enters a node's children in the order of its arcs: the tree's arcs are the
    # graph's arcs u -> v with u the parent of v (the first of several such), in their order
    tree = np.flatnonzero(parent[dst] == src)
    first = np.full(n, len(src))
    np.minimum.at(first, dst[tree], tree)
    tree = tree[first[dst[tree]] == tree]
    up, child = src[tree], dst[tree]
    # each row reversed: the k-th of a row's entries goes to the row's end minus k
    counts = np.bincount(up, minlength=n)
    ends = np.cumsum(counts)
    reversed_rows = np.empty_like(child)
    reversed_rows[2 * ends[up] - counts[up] - 1 - np.arange(len(up))] = child
    tree = rooted_graph(n, up, reversed_rows, roots)
    flipped, _ = _search(tree, n)
    return flipped[1:]


def _search(graph, root: int) -> tuple[np.ndarray, np.ndarray]:
    """The depth-first search of ``graph`` from ``root``: the nodes in preorder, and each
    node's parent in the search tree (int64)."""
    preorder, parent = depth_first_order(graph, root, directed=True, return_predecessors=True)
    return preorder.astype(np.int64), parent.astype(np.int64)


def lattices(
    p: Product,
    minimal: Minimal,
    marks: tuple[str, ...],
    pairs,
    starts: np.ndarray,
    todo: np.ndarray,
    sizes: np.ndarray,
) -> dict[int, Lattice]:
    """The lattice of each pair in ``todo`` (its start state ``starts[k]``, its product's
    sizes ``sizes[k]`` = (states, arcs)) from the batch's minimal acceptor."""
    cls, rep = minimal.cls, minimal.representative
    n = len(rep)
    # class c's arcs are its representative's, in mark order: sorted by source as gathered
    entries, src = gather(offsets(p.src, len(p.final)), rep)
    mark, dst = p.mark[entries], cls[p.dst[entries]]
    order = reverse_postorder(n, src, dst, cls[starts[todo]])  # pair by pair, starts first
    pair = p.pair[rep]
    bounds = offsets(pair[order], len(pairs))
    new = np.empty(n, dtype=np.int64)  # a class's state number in the batch
    new[order] = np.arange(len(order))
    entries, src = gather(offsets(src, n), order)  # the arcs again, by their new source
    mark, dst = mark[entries], new[dst[entries]]
    arc_bounds = offsets(src, len(order))[bounds]
    pos_i, pos_j = minimal.positions
    positions = np.stack([pos_i[order], pos_j[order]], axis=1)
    positions[bounds[todo]] = 0  # nothing is consumed before the first mark
    final, height = p.final[rep][order], minimal.height[rep][order]
    out = {}
    for r in todo.tolist():
        states, arcs = slice(bounds[r], bounds[r + 1]), slice(arc_bounds[r], arc_bounds[r + 1])
        x, y = pairs[r]
        out[r] = Lattice(
            mark_vocab=marks,
            x=x,
            y=y,
            arc_src=src[arcs] - bounds[r],
            arc_dst=dst[arcs] - bounds[r],
            arc_mark=mark[arcs].copy(),
            final=final[states].copy(),
            positions=positions[states].copy(),
            height=height[states].copy(),
            states_before_min=int(sizes[r, 0]),
            arcs_before_min=int(sizes[r, 1]),
        )
    return out
