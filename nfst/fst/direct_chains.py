"""The direct path's product condensed to its core (``nfst.fst.direct_minimize`` minimizes
the core alone).

Most states of the trimmed product are *links*: not final, one out-arc (the inner nodes of the
tries, and the states with one live arc). From a link one path runs through links to the first
state that is not one, the *end* of its chain. A link's class in the minimal acceptor is fixed
by the mark string of its chain and the class of its end (a link and a core state never share a
class: they differ in finality or in their number of arcs), and its position is its end's
(its one future's common prefix runs on into the end's). So minimization takes the *core*
states, those final or with other than one out-arc, and each core arc as the chain it
enters, with

- the id of the chain's mark string from the arc on (:func:`string_ids`): equal ids, equal
  strings;
- its length, the arcs it spans (a height adds it);
- the witness codes its symbols write (``direct_minimize.CommonPrefixes``: arc a's symbols
  cross the diagonals d(s), ..., d(s) + |a_Σ| + |a_Δ| - 1 of its source s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .direct_product import Product, gather, groups, offsets, stable_order


@dataclass
class Chains:
    """Where each state's chain ends (a core state: itself), and each arc's string id."""

    link: np.ndarray
    """(S,) bool: not final, one out-arc."""
    end: np.ndarray
    """(S,): the core state each state's chain reaches ..."""
    length: np.ndarray
    """(S,): ... in this many arcs (a core state: 0)."""
    string: np.ndarray
    """(A,): the id of the mark string from each arc to its chain's end."""
    first_arc: np.ndarray
    """(S + 1,): CSR offsets of each state's out-arcs (a link's one arc: first_arc[s])."""

    @classmethod
    def of(cls, p: Product) -> "Chains":
        S = len(p.final)
        first_arc = offsets(p.src, S)
        link = (np.diff(first_arc) == 1) & ~p.final
        end = np.arange(S)
        end[link] = p.dst[first_arc[:-1][link]]
        length = link.astype(np.int64)
        on = np.flatnonzero(link[end])  # the states whose end is not yet found
        for _ in range(S.bit_length() + 1):  # pointer jumping: each pass doubles the span
            if not len(on):
                break
            length[on] += length[end[on]]
            end[on] = end[end[on]]
            on = on[link[end[on]]]
        else:  # a chain longer than S arcs: the product is not acyclic
            raise AssertionError("the direct path built a product with a cycle")
        return cls(link, end, length, string_ids(p, link, length, first_arc), first_arc)


def string_ids(p: Product, link, length, first_arc) -> np.ndarray:
    """(A,): an id per arc, equal for two arcs iff the mark strings from them to their chains'
    ends are equal; found by increasing length, a string of length k as its first mark and the
    id of the rest (the string of the link it enters)."""
    spans = 1 + length[p.dst]
    by_span = stable_order(spans)
    bounds = offsets(spans[by_span], int(spans.max(initial=0)) + 1)
    rest = first_arc[:-1][p.dst]  # the next arc of the chain, where p.dst is a link
    M = int(p.mark.max(initial=0)) + 1
    ids = np.empty(len(p.src), dtype=np.int64)
    low = taken = 0  # the ids of the strings one shorter are low, ..., taken - 1
    for k in range(1, len(bounds) - 1):
        arcs = by_span[bounds[k] : bounds[k + 1]]
        if not len(arcs):
            continue
        key = p.mark[arcs] + (0 if k == 1 else (ids[rest[arcs]] - low) * M)
        group, count = _ranks(key, M * max(1, taken - low), len(arcs))
        ids[arcs] = taken + group
        low, taken = taken, taken + count
    return ids


def _ranks(key: np.ndarray, size: int, n: int) -> tuple[np.ndarray, int]:
    """Each key's rank among the distinct keys (all below ``size``), and their number: by a
    table over 0, ..., size - 1 where it is not much longer than the ``n`` keys."""
    if size > 8 * n:
        group, distinct = groups(key)
        return group, len(distinct)
    present = np.zeros(size, dtype=bool)
    present[key] = True
    rank = np.cumsum(present) - 1
    return rank[key], int(rank[-1]) + 1


@dataclass
class Core:
    """The core states, numbered layer by layer (the frontiers of Kahn's algorithm from the
    sinks: every arc enters a lower layer), and their arcs sorted by source and mark, each
    the chain it enters."""

    state: np.ndarray
    """(K,): the product state of each core state; ``pair``, ``si``, ``sj``, ``final`` its."""
    pair: np.ndarray
    si: np.ndarray
    sj: np.ndarray
    final: np.ndarray
    levels: list[int]
    """Each layer's first core state, and K last."""
    src: np.ndarray
    """(E,): each core arc's source; ``end`` its chain's end, ``string`` its string id,
    ``length`` the arcs its chain spans."""
    end: np.ndarray
    string: np.ndarray
    length: np.ndarray
    write_offsets: np.ndarray
    """(E + 1,) CSR offsets into ``column`` and ``code``: the witness codes of each core arc's
    chain, the diagonal each is written at."""
    column: np.ndarray
    code: np.ndarray
    number: np.ndarray
    """(S,): each product state's core number (-1 for a link)."""


def core(p: Product, chains: Chains, top) -> Core:
    """The core of ``p``, layer by layer."""
    link = chains.link
    states = np.flatnonzero(~link)
    number = np.full(len(link), -1, dtype=np.int64)
    number[states] = np.arange(len(states))
    arcs = np.flatnonzero(~link[p.src])  # sorted by source and mark, as p's
    src, end = number[p.src[arcs]], number[chains.end[p.dst[arcs]]]
    layer = _layers(len(states), src, end)
    order = stable_order(layer)
    number[states[order]] = np.arange(len(states))
    by_source, _ = gather(offsets(src, len(states)), order)
    arcs = arcs[by_source]
    write_offsets, column, code = _writes(p, chains, top, arcs)
    return Core(
        state=states[order],
        pair=p.pair[states[order]],
        si=p.si[states[order]],
        sj=p.sj[states[order]],
        final=p.final[states[order]],
        levels=offsets(layer[order], int(layer.max(initial=-1)) + 1).tolist(),
        src=number[p.src[arcs]],
        end=number[chains.end[p.dst[arcs]]],
        string=chains.string[arcs],
        length=1 + chains.length[p.dst[arcs]],
        write_offsets=write_offsets,
        column=column,
        code=code,
        number=number,
    )


def _layers(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(n,): each node's layer in Kahn's algorithm from the sinks of the DAG src -> dst."""
    by_dst = np.argsort(dst, kind="stable")
    in_offsets = offsets(dst[by_dst], n)
    remaining = np.bincount(src, minlength=n)
    layer = np.full(n, -1, dtype=np.int64)
    frontier, k = np.flatnonzero(remaining == 0), 0
    while len(frontier):
        layer[frontier] = k
        entries, _ = gather(in_offsets, frontier)
        sources, counts = np.unique(src[by_dst[entries]], return_counts=True)
        remaining[sources] -= counts
        frontier, k = sources[remaining[sources] == 0], k + 1
    return layer


def _writes(p: Product, chains: Chains, top, arcs: np.ndarray):
    """The witness codes of the chains that ``arcs`` enter, as CSR over ``arcs``: a symbol
    of T's arc a, its k-th from source s, is written at diagonal d(s) + k as x's offset after
    the symbols before it, or inside a group (more symbols than marks) as the group's code."""
    units = np.where(p.arc_of >= 0, top.di[p.arc_of] + top.dj[p.arc_of], 0)  # per product arc
    found, owners = [], []
    owner, step = np.arange(len(arcs)), arcs
    while True:  # one step along every chain, keeping the arcs with symbols
        some = units[step] > 0
        found.append(step[some])
        owners.append(owner[some])
        on = chains.link[p.dst[step]]
        if not on.any():
            break
        owner, step = owner[on], chains.first_arc[p.dst[step[on]]]
    steps, owner = np.concatenate(found), np.concatenate(owners)
    n = units[steps]
    symbol = np.repeat(np.arange(len(steps)), n)
    k = np.arange(len(symbol)) - np.repeat(np.cumsum(n) - n, n)
    s, a, owner = p.src[steps][symbol], p.arc_of[steps][symbol], owner[symbol]
    i0 = p.si[s]
    code = np.where(
        top.unit_skip[a, k],
        -1 - (i0 + top.group_dx[a]) * top.num_shapes - top.group_shape[a],
        i0 + top.unit_dx[a, k],
    )
    order = np.argsort(owner, kind="stable")
    return offsets(owner[order], len(arcs)), (i0 + p.sj[s] + k)[order], code[order]
