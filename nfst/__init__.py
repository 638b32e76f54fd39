"""nfst: path inference in neural finite-state transducers.

``nfst.evaluate_all`` (``nfst.evaluate``) is imported on first use, so that ``import nfst``
and the packages beneath evaluation (``nfst.fst``, ``nfst.tasks``) do not load it.
"""

from .errors import (AmbiguousMFSTError, CorruptCacheError, CyclicLatticeError, InvalidMFSTError,
                     LatticeTooLargeError, NfstError, NoPathError, UnknownSymbolError)
from .fst import (Arc, CompileOptions, Lattice, MarkedFST, OutputMarks, compile_lattice,
                  compose_openfst, from_pynini, to_pynini)


def __getattr__(name: str):
    if name == "evaluate_all":
        from .evaluate import evaluate_all
        return evaluate_all
    raise AttributeError(f"module 'nfst' has no attribute {name!r}")


__all__ = [
    "AmbiguousMFSTError", "Arc", "CompileOptions", "CorruptCacheError", "CyclicLatticeError",
    "InvalidMFSTError", "Lattice", "LatticeTooLargeError", "MarkedFST", "NfstError",
    "NoPathError", "OutputMarks", "UnknownSymbolError", "compile_lattice", "compose_openfst",
    "evaluate_all", "from_pynini", "to_pynini",
]
