"""Edit-operation topologies with one state (003 App. A)."""

from __future__ import annotations

from typing import Iterable

from nfst.fst.mfst import MarkedFST


def deletion_insertion(
    sigma: Iterable[str],
    delta: Iterable[str],
    *,
    delete: str = "<del>",
    insert: str = "<ins>",
    name: str = "del-ins",
) -> MarkedFST:
    """tr and scan: read an input symbol a (marks ``<del> a``) or write an output symbol b
    (marks ``<ins> b``), in any interleaving. Every alignment of x and y is one path."""
    T = MarkedFST(name)
    T.set_final(T.start)
    for a in sorted(set(sigma)):
        T.add_arc(T.start, T.start, input=[a], marks=[delete, a])
    for b in sorted(set(delta)):
        T.add_arc(T.start, T.start, output=[b], marks=[insert, b])
    return T


def deletion_insertion_copy(
    alphabet: Iterable[str],
    *,
    delete: str = "delete",
    insert: str = "insert",
    copy: str = "copy",
    name: str = "del-ins-copy",
) -> MarkedFST:
    """Noisy copy over one alphabet: ``copy a`` (a:a), ``delete a`` (a:ε), ``insert b`` (ε:b)."""
    T = MarkedFST(name)
    T.set_final(T.start)
    for a in sorted(set(alphabet)):
        T.add_arc(T.start, T.start, input=[a], output=[a], marks=[copy, a])
        T.add_arc(T.start, T.start, input=[a], marks=[delete, a])
        T.add_arc(T.start, T.start, output=[a], marks=[insert, a])
    return T
