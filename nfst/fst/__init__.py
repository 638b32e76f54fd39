"""Marked FSTs and their lattices.

- ``mfst``: the marked FST T (:class:`MarkedFST`, :class:`Arc`) and its rational operations;
- ``lattice``: the per-pair lattice T_{x,y} as flat arrays (:class:`Lattice`);
- ``compile``: compiling T_{x,y} (:func:`compile_lattice`): by ``compile_direct`` (no OpenFst,
  many pairs at once) where T qualifies (``direct_topology``), else through OpenFst, with its
  two halves ``compile_to_openfst`` (T and the alignment acceptor written for OpenFst) and
  ``compile_from_openfst`` (the determinized result read back as a Lattice);
- ``dataset``: compiling (and caching) whole datasets (:func:`compile_dataset`);
- ``history``: lattice states split by the marks read last, for n-gram scorers;
- ``mark_strings``: reading a mark string off T (every (x, y) of its paths: :class:`MarkReader`)
  and off a lattice (:func:`path_arcs`);
- OpenFst interop, one module per direction: ``from_openfst`` reads OpenFst and Pynini FSTs into
  nfst (:func:`read_fst`, :func:`from_pynini`), ``to_openfst`` writes nfst objects as OpenFst
  FSTs (:func:`to_pynini`, :func:`lattice_to_fst`), ``openfst_compose`` composes marked FSTs
  through OpenFst (:func:`compose_openfst`), and ``openfst_reference`` computes what OpenFst
  alone gives, for the benches and tests to compare against.
"""

from .compile import CompileOptions, compile_lattice
from .dataset import CompiledDataset, compile_dataset, minibatch
from .from_openfst import FstArrays, OutputMarks, from_pynini, read_fst
from .history import HistoryLattice, expand_history, start_history
from .lattice import Lattice
from .mfst import Arc, MarkedFST
from .openfst_compose import compose_openfst
from .openfst_reference import openfst_lattice, reverse_shortest_distance
from .to_openfst import lattice_to_fst, to_pynini

__all__ = [
    "Arc",
    "CompileOptions",
    "CompiledDataset",
    "FstArrays",
    "HistoryLattice",
    "Lattice",
    "MarkedFST",
    "OutputMarks",
    "compile_dataset",
    "compile_lattice",
    "compose_openfst",
    "expand_history",
    "from_pynini",
    "lattice_to_fst",
    "minibatch",
    "openfst_lattice",
    "read_fst",
    "reverse_shortest_distance",
    "start_history",
    "to_pynini",
]
