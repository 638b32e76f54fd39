"""The direct path's numbering (nfst.fst.direct_number) against a plain recursive depth-first
search; the lattices it builds are checked against the OpenFst path in test_compile_direct."""

import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nfst.fst.direct_number import reverse_postorder


def recursive_reverse_postorder(n, src, dst, roots) -> list[int]:
    """Each root's nodes in reverse postorder, by the textbook recursion."""
    out = [[] for _ in range(n)]
    for s, d in zip(src, dst):
        out[s].append(d)
    seen, order = [False] * n, []

    def visit(v, post):
        seen[v] = True
        for w in out[v]:
            if not seen[w]:
                visit(w, post)
        post.append(v)

    for root in roots:
        post = []
        visit(root, post)
        order += post[::-1]
    return order


@st.composite
def disjoint_dags(draw):
    """Disjoint DAGs, each with its root first and nodes it may not reach; each node's
    out-arcs in a drawn order (``src`` ascending, as the direct path gives them), two arcs
    sometimes sharing a target (two marks that lead to one state)."""
    n, arcs, roots = 0, [], []
    for _ in range(draw(st.integers(0, 4))):
        k = draw(st.integers(1, 9))
        roots.append(n)
        for u in range(k):
            targets = draw(st.lists(st.integers(u + 1, k), max_size=4))
            arcs += [(n + u, n + v) for v in targets if v < k]
        n += k
    src = np.asarray([s for s, _ in arcs], dtype=np.int64)
    dst = np.asarray([d for _, d in arcs], dtype=np.int64)
    return n, src, dst, np.asarray(roots, dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(disjoint_dags())
def test_reverse_postorder_is_the_recursive_searchs(graph):
    n, src, dst, roots = graph
    assert sys.getrecursionlimit() > n
    got = reverse_postorder(n, src, dst, roots).tolist()
    assert got == recursive_reverse_postorder(n, src, dst, roots.tolist())


def test_out_arcs_are_taken_in_their_order_not_by_target():
    # 0 -> 2 before 0 -> 1: 2 is entered first, so 1 finishes last and comes right after 0
    src, dst = np.array([0, 0, 1, 2]), np.array([2, 1, 3, 3])
    assert reverse_postorder(4, src, dst, np.array([0])).tolist() == [0, 1, 2, 3]
