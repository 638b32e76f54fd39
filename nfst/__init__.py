"""nfst: path inference in neural finite-state transducers.

``nfst.evaluate_all`` (``nfst.evaluate``), ``nfst.save_sampler``, ``nfst.load_sampler``,
``nfst.save_scorer`` and ``nfst.load_scorer`` (``nfst.models.files``) and ``nfst.open_run`` (a
run directory's stages, ``nfst.experiment.Run.open``) are imported on first use, so that
``import nfst`` and the packages beneath evaluation (``nfst.fst``, ``nfst.fsts``,
``nfst.tasks``) do not load them.
"""

from .errors import (AmbiguousMFSTError, CorruptCacheError, CyclicLatticeError, InvalidMFSTError,
                     LatticeTooLargeError, NfstError, NoPathError, UnknownSymbolError)
from .fst import (Arc, CompileOptions, Lattice, MarkedFST, OutputMarks, compile_lattice,
                  compose_openfst, from_pynini, to_pynini)

_MODEL_FILES = ("load_sampler", "load_scorer", "save_sampler", "save_scorer")


def __getattr__(name: str):
    if name in _MODEL_FILES:
        from .models import files
        return getattr(files, name)
    if name == "evaluate_all":
        from .evaluate import evaluate_all
        return evaluate_all
    if name == "open_run":
        from .experiment import Run
        return Run.open
    raise AttributeError(f"module 'nfst' has no attribute {name!r}")


__all__ = [
    "AmbiguousMFSTError", "Arc", "CompileOptions", "CorruptCacheError", "CyclicLatticeError",
    "InvalidMFSTError", "Lattice", "LatticeTooLargeError", "MarkedFST", "NfstError",
    "NoPathError", "OutputMarks", "UnknownSymbolError", "compile_lattice", "compose_openfst",
    "evaluate_all", "from_pynini", "load_sampler", "load_scorer", "open_run", "save_sampler",
    "save_scorer", "to_pynini",
]
