"""nfst: path inference in neural finite-state transducers."""

from .errors import (AmbiguousMFSTError, CorruptCacheError, CyclicLatticeError, InvalidMFSTError,
                     LatticeTooLargeError, NfstError, NoPathError, UnknownSymbolError)
from .fst.compile import CompileOptions, compile_lattice
from .fst.lattice import Lattice
from .fst.mfst import Arc, MarkedFST
from .fst.pynini_io import OutputMarks

__all__ = [
    "AmbiguousMFSTError", "Arc", "CompileOptions", "CorruptCacheError", "CyclicLatticeError",
    "InvalidMFSTError", "Lattice", "LatticeTooLargeError", "MarkedFST", "NfstError",
    "NoPathError", "OutputMarks", "UnknownSymbolError", "compile_lattice",
]
