"""Brute-force references for the tests: enumerate MFST paths directly, no automata library."""

from __future__ import annotations

from nfst import MarkedFST


def generating_paths(T: MarkedFST, x: tuple, y: tuple, max_arcs: int = 40):
    """Every generating path of (x, y) as (mark string, tagged stream); raises on runaway ε loops.
    Symbols that ride on one mark together form one tuple in the stream."""
    out = {q: T.out_arcs(q) for q in range(T.num_states)}
    found = []

    def walk(q, i, j, marks, stream, depth):
        if depth > max_arcs:
            raise RecursionError("ε loop: infinitely many generating paths")
        if q in T.finals and i == len(x) and j == len(y):
            found.append((marks, stream))
        for a in out[q]:
            if (
                tuple(x[i : i + len(a.input)]) != a.input
                or tuple(y[j : j + len(a.output)]) != a.output
            ):
                continue
            tagged = tuple("x:" + s for s in a.input) + tuple("y:" + s for s in a.output)
            k = len(a.marks)
            if len(tagged) > k:  # the last mark carries the rest as one unit
                tagged = tagged[: k - 1] + (tagged[k - 1 :],)
            walk(
                a.dst,
                i + len(a.input),
                j + len(a.output),
                marks + a.marks,
                stream + tagged,
                depth + 1,
            )

    walk(T.start, 0, 0, (), (), 0)
    return found


def path_marks(T: MarkedFST, max_marks: int):
    """Mark strings of T's successful paths, with repeats, and whether paths with more than
    ``max_marks`` marks were cut off (so the list is complete when the flag is False)."""
    out = {q: T.out_arcs(q) for q in range(T.num_states)}
    found, cut = [], False

    def walk(q, marks):
        nonlocal cut
        if q in T.finals:
            found.append(marks)
        for a in out[q]:
            if len(marks) + len(a.marks) > max_marks:
                cut = True
            else:
                walk(a.dst, marks + a.marks)

    walk(T.start, ())
    return found, cut


def asap_positions(paths, prefix: tuple) -> tuple[int, int]:
    """(i, j) consumed "as soon as possible" after a mark prefix: the counts of x and y symbols
    in the longest common prefix of the tagged streams of every path extending it. Symbols ride
    on mark arcs, so nothing is consumed before the first mark."""
    if not prefix:
        return 0, 0
    streams = [s for m, s in paths if m[: len(prefix)] == prefix]
    common = 0
    while all(len(s) > common for s in streams) and len({s[common] for s in streams}) == 1:
        common += 1
    head = [t for unit in streams[0][:common] for t in ((unit,) if isinstance(unit, str) else unit)]
    return sum(t.startswith("x:") for t in head), sum(t.startswith("y:") for t in head)


def walk_marks(lattice, marks: tuple) -> list[int]:
    """The lattice states visited when reading ``marks`` from the start (raises if illegal)."""
    offsets = lattice.arc_offsets
    s, states = 0, [0]
    for m in marks:
        arcs = range(offsets[s], offsets[s + 1])
        (a,) = [a for a in arcs if lattice.mark_vocab[lattice.arc_mark[a]] == m]
        s = int(lattice.arc_dst[a])
        states.append(s)
    return states


def lattice_paths(lattice) -> list[list[int]]:
    """Every path of a lattice as its list of arc ids (STOP implied at the end)."""
    offsets = lattice.arc_offsets
    paths, stack = [], [(0, [])]
    while stack:
        s, arcs = stack.pop()
        if lattice.final[s]:
            paths.append(arcs)
        for a in range(offsets[s], offsets[s + 1]):
            stack.append((int(lattice.arc_dst[a]), arcs + [a]))
    return paths


def chi_square_critical(dof: int, z: float = 3.09) -> float:
    """Upper quantile of χ²(dof) by the Wilson–Hilferty approximation (z=3.09: p ≈ 0.001)."""
    c = 2.0 / (9.0 * dof)
    return dof * (1 - c + z * c**0.5) ** 3


def path_triples(T: MarkedFST, max_marks: int) -> list[tuple[tuple, tuple, tuple]]:
    """(input, output, marks) of every successful path of T with at most ``max_marks`` marks,
    sorted, with repeats (every arc must carry a mark, so the walk ends)."""
    out = {q: T.out_arcs(q) for q in range(T.num_states)}
    found = []

    def walk(q, i, o, m):
        if q in T.finals:
            found.append((i, o, m))
        for a in out[q]:
            assert a.marks, "path_triples needs a mark on every arc"
            if len(m) + len(a.marks) <= max_marks:
                walk(a.dst, i + a.input, o + a.output, m + a.marks)

    walk(T.start, (), (), ())
    return sorted(found)
