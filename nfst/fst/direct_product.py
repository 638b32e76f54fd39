"""The direct path's trimmed product (``nfst.fst.compile_direct``) and the CSR helpers its
steps share."""

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


def groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys in ascending order, as (each entry's group, an entry of each group)
    (np.unique without its stable sort: any entry may stand for its group)."""
    order = np.argsort(keys)
    ranked = keys[order]
    new = np.ones(len(keys), dtype=bool)
    new[1:] = ranked[1:] != ranked[:-1]
    group = np.empty(len(keys), dtype=np.int64)
    group[order] = np.cumsum(new) - 1
    return group, order[new]


def stable_order(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable") for non-negative keys, by radix sort where they fit in
    16 bits (heights, lengths: several times faster)."""
    if len(keys) and keys.max() < np.iinfo(np.int16).max:
        keys = keys.astype(np.int16)
    return np.argsort(keys, kind="stable")
