"""Compile T_{x,y} = x ∘ T ∘ y, determinized over marks and minimized (003 §3; docs/design.md §3).

Recipe:
1. Encode T as a pynini transducer whose input tape is the mark tape and whose output tape is a
   tagged symbol stream (``x:a`` for input symbol a, ``y:b`` for output symbol b). An MFST arc
   with k ≥ 1 marks and n symbols becomes a chain of k arcs, one symbol on each of the first
   ones; where n > k the last mark carries the rest as one group label (e.g. a pair mark
   ``a:b``), which the alignment acceptor reads as one move and positions never split.
2. Compose with the alignment acceptor A_{x,y}, the (|x|+1)(|y|+1) grid accepting every
   interleaving of tagged x and tagged y; the result is x ∘ T ∘ y with marks on the input tape.
3. Remove ε:ε arcs and determinize as a functional transducer (output strings are
   string-semiring weights, 003 fn. 3).
4. Contract the ε-input chains determinization leaves behind when a residual output must be
   delayed: their symbols belong to the preceding mark arc, or to STOP at a final state.
5. Positions (i, j) of a state: the symbols consumed by the tagged outputs of any path to it,
   plus the longest common prefix of every output still to come ("as soon as possible").
6. Minimize the mark acceptor, merging only states at equal positions.

Where T allows (no arc without marks, prefix-free mark strings at every state, no cycle of
arcs without symbols; see ``nfst.fst.direct_topology``), x ∘ T ∘ y is deterministic over marks
as built and the same lattice is compiled without OpenFst, many pairs at once
(:func:`compile_lattices`).

Steps 1–2 write T and A_{x,y} for OpenFst (``nfst.fst.compile_to_openfst``); steps 4–6 read
the determinized FST back into a :class:`Lattice` (``nfst.fst.compile_from_openfst``).

Determinization silently merges generating paths that share a mark string, so where T itself
lets two paths share one (checked once per MFST) the generating paths of each pair are
counted and compared with the lattice's paths.
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, Sequence

import numpy as np
import pynini

from ..errors import (
    AmbiguousMFSTError,
    CyclicLatticeError,
    LatticeTooLargeError,
    NfstError,
    NoPathError,
    UnknownSymbolError,
)
from .compile_direct import compile_direct
from .compile_from_openfst import LatticeReader
from .compile_to_openfst import CompileEncoding
from .direct_topology import direct_refusal
from .from_openfst import read_fst
from .lattice import Lattice
from .mfst import MarkedFST, Symbols, as_symbols


@dataclass(frozen=True)
class CompileOptions:
    max_states: int = 200_000
    """Refuse lattices (and intermediate FSTs) with more states than this."""
    allow_cyclic: bool = False
    """Return cyclic lattices (flagged by ``Lattice.acyclic``) instead of raising."""
    path: Literal["auto", "openfst"] = field(default="auto", repr=False)
    """``auto``: the direct path where T qualifies (``compile_path``), else OpenFst;
    ``openfst``: always OpenFst. Both give the same lattice, so the cache key (the repr)
    leaves it out."""


def compile_path(T: MarkedFST, options: CompileOptions = CompileOptions()) -> str:
    """Which path compiles T's lattices: ``direct`` or ``openfst``."""
    return "direct" if options.path == "auto" and direct_refusal(T) is None else "openfst"


def compile_lattices(
    T: MarkedFST,
    pairs: Sequence[tuple[Symbols, Symbols]],
    options: CompileOptions = CompileOptions(),
) -> list[Lattice | NfstError]:
    """T_{x,y} of each pair, or the error :func:`compile_lattice` would raise for it; on the
    direct path many pairs at a time."""
    pairs = [(as_symbols(x), as_symbols(y)) for x, y in pairs]
    if compile_path(T, options) == "openfst":
        return [_attempt(compile_lattice, T, x, y, options) for x, y in pairs]
    results: list[Lattice | NfstError] = [_attempt(_check_symbols, T, x, y) for x, y in pairs]
    # pairs of like sizes together: a batch's arrays are as wide as its longest pair
    known = sorted((k for k, r in enumerate(results) if r is None), key=lambda k: _cells(pairs[k]))
    batch, budget = [], 0
    for n, k in enumerate(known):  # batches of bounded size: memory grows with their cells
        batch.append(k)
        budget += _cells(pairs[k])
        if budget >= _BATCH_CELLS or n == len(known) - 1:
            for k_, r in zip(
                batch, compile_direct(T, [pairs[k_] for k_ in batch], options.max_states)
            ):
                results[k_] = r
            batch, budget = [], 0
    return results


def _cells(pair: tuple[Symbols, Symbols]) -> int:
    """The cells (|x|+1)(|y|+1) of a pair's grid."""
    return (len(pair[0]) + 1) * (len(pair[1]) + 1)


_BATCH_CELLS = 8_000
"""Grid cells (|x|+1)(|y|+1) of the pairs the direct path compiles at once."""


def _attempt(fn, *args):
    try:
        return fn(*args)
    except NfstError as exc:
        return exc


def _check_symbols(T: MarkedFST, x: tuple[str, ...], y: tuple[str, ...]) -> None:
    """UnknownSymbolError if x or y has a symbol that T's input or output alphabet lacks."""
    inputs, outputs = T.derived(
        "alphabets", lambda T: (frozenset(T.input_alphabet), frozenset(T.output_alphabet))
    )
    where = f"{T.name} on x={' '.join(x)!r}, y={' '.join(y)!r}"
    for tape, string, alphabet in (("input", x, inputs), ("output", y, outputs)):
        unknown = sorted(set(string) - alphabet)
        if unknown:
            raise UnknownSymbolError(
                f"{where}: {tape} symbols {unknown} are not in the MFST's {tape} alphabet",
                tape=tape,
                symbols=tuple(unknown),
            )


def compile_lattice(
    T: MarkedFST, x: Symbols, y: Symbols, options: CompileOptions = CompileOptions()
) -> Lattice:
    """Build the lattice T_{x,y} of every mark string of a generating path of (x, y).

    Raises UnknownSymbolError, NoPathError, AmbiguousMFSTError, CyclicLatticeError (unless
    ``options.allow_cyclic``) or LatticeTooLargeError; see ``nfst.errors``.
    """
    x, y = as_symbols(x), as_symbols(y)
    if compile_path(T, options) == "direct":
        _check_symbols(T, x, y)
        (result,) = compile_direct(T, [(x, y)], options.max_states)
        if isinstance(result, NfstError):
            raise result
        return result
    enc = CompileEncoding.of(T)
    where = f"{T.name} on x={' '.join(x)!r}, y={' '.join(y)!r}"
    _check_symbols(T, x, y)

    composed = pynini.compose(enc.fst, enc.alignment_acceptor(x, y), connect=True)
    if composed.num_states() == 0:
        raise NoPathError(f"{where}: no generating path")
    if composed.num_states() > options.max_states:
        raise LatticeTooLargeError(
            f"{where}: x∘T∘y has {composed.num_states()} states > max_states={options.max_states}"
        )
    props = composed.properties(pynini.ACYCLIC | pynini.EPSILONS, True)
    acyclic = bool(props & pynini.ACYCLIC)
    num_generating = None  # counted where T itself might let two paths share marks
    if acyclic and not enc.unambiguous:
        composed.topsort()
        num_generating = _count_paths(composed)
    if props & pynini.EPSILONS:
        composed.rmepsilon()
        if not acyclic and composed.properties(pynini.ACYCLIC, True) == pynini.ACYCLIC:
            raise AmbiguousMFSTError(
                f"{where}: T has a cycle of ε arcs without marks, so "
                "infinitely many paths share each mark string"
            )
    if not acyclic and not options.allow_cyclic:
        raise CyclicLatticeError(
            f"{where}: the lattice is cyclic (T has a loop that reads and writes nothing but marks)"
        )

    try:
        with _openfst_messages() as messages:
            det = pynini.determinize(composed, nstate=options.max_states + 1)
    except pynini.FstOpError as exc:
        raise AmbiguousMFSTError(
            f"{where}: determinization failed; T is not functional (two paths share a mark string)"
        ) from exc
    if messages:  # OpenFst sometimes only complains on stderr and returns a broken FST
        raise AmbiguousMFSTError(
            f"{where}: determinization failed; T is not functional (OpenFst: {messages[0]})"
        )
    if det.num_states() > options.max_states:
        raise LatticeTooLargeError(
            f"{where}: determinized lattice exceeds max_states={options.max_states}"
        )
    if det.properties(pynini.ERROR, True) == pynini.ERROR:
        raise AmbiguousMFSTError(f"{where}: determinization failed (non-functional)")
    if acyclic:
        det.topsort()
    lattice, distinct = LatticeReader(det, enc, where).lattice(x, y, acyclic)
    if num_generating is not None and distinct is not None:
        if distinct != num_generating:
            raise AmbiguousMFSTError(
                f"{where}: {num_generating} generating paths but only "
                f"{distinct} distinct mark strings"
            )
    return lattice


_stderr_sink = None


@contextmanager
def _openfst_messages():
    """Collect what OpenFst writes to the C-level stderr meanwhile, as a list of lines."""
    global _stderr_sink
    if _stderr_sink is None:  # one file for the process, reused by every call
        _stderr_sink = tempfile.TemporaryFile()
        atexit.register(_stderr_sink.close)
    _stderr_sink.seek(0)
    _stderr_sink.truncate()
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(_stderr_sink.fileno(), 2)
    try:
        yield lines
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        _stderr_sink.seek(0)
        lines += _stderr_sink.read().decode(errors="replace").splitlines()


def _count_paths(fst: pynini.Fst) -> int:
    """Exact number of successful paths of a topologically sorted, connected FST."""
    arrays = read_fst(fst)
    dst = arrays.dst.tolist()
    offsets = np.searchsorted(arrays.src, np.arange(len(arrays.final) + 1)).tolist()
    count = np.isfinite(arrays.final).astype(np.int64).tolist()  # Python ints: no overflow
    for s in range(len(count) - 1, -1, -1):
        for t in dst[offsets[s] : offsets[s + 1]]:
            count[s] += count[t]
    return count[arrays.start]
