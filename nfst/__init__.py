"""nfst: path inference in neural finite-state transducers."""

from .errors import (AmbiguousMFSTError, CorruptCacheError, CyclicLatticeError, InvalidMFSTError,
                     LatticeTooLargeError, NfstError, NoPathError, UnknownSymbolError)
from .fst import (Arc, CompileOptions, Lattice, MarkedFST, OutputMarks, compile_lattice,
                  compose_openfst, from_pynini, to_pynini)

__all__ = [
    "AmbiguousMFSTError", "Arc", "CompileOptions", "CorruptCacheError", "CyclicLatticeError",
    "InvalidMFSTError", "Lattice", "LatticeTooLargeError", "MarkedFST", "NfstError",
    "NoPathError", "OutputMarks", "UnknownSymbolError", "compile_lattice", "compose_openfst",
    "from_pynini", "to_pynini",
]
