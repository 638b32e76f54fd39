"""nfst: path inference in neural finite-state transducers.

``nfst.evaluate_all`` (``nfst.evaluate``), ``nfst.save_sampler``, ``nfst.load_sampler``,
``nfst.save_scorer`` and ``nfst.load_scorer`` (``nfst.models.files``) and :func:`open_run` (a
run directory's stages) are imported on first use, so that ``import nfst`` and the packages
beneath evaluation (``nfst.fst``, ``nfst.fsts``, ``nfst.tasks``) do not load them. Type
checkers and IDEs see them through the imports under ``TYPE_CHECKING``, ``dir(nfst)`` through
:func:`__dir__`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .errors import (
    AmbiguousMFSTError,
    CorruptCacheError,
    CyclicLatticeError,
    InvalidMFSTError,
    LatticeTooLargeError,
    NfstError,
    NoPathError,
    UnknownSymbolError,
)
from .fst import (
    Arc,
    CompileOptions,
    Lattice,
    MarkedFST,
    OutputMarks,
    compile_lattice,
    compose_openfst,
    from_pynini,
    to_pynini,
)

if TYPE_CHECKING:
    from .evaluate import evaluate_all
    from .experiment import Run
    from .models.files import load_sampler, load_scorer, save_sampler, save_scorer

_LAZY = {
    "evaluate_all": "nfst.evaluate",
    "load_sampler": "nfst.models.files",
    "load_scorer": "nfst.models.files",
    "save_sampler": "nfst.models.files",
    "save_scorer": "nfst.models.files",
}
"""Name -> the module it is imported from on first use."""


def open_run(run_dir: str | os.PathLike, **kwargs: Any) -> Run:
    """The run recorded in ``run_dir`` with its stages as methods (``scorer()``,
    ``sampler(name)``, ``lattices(split)``, ``evaluation()``, ...): ``nfst.experiment.Run.open``,
    whose ``kwargs`` are the constructor's (``device``, ``quiet``, ``data_dir``, ...)."""
    from .experiment import Run

    return Run.open(run_dir, **kwargs)


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nfst' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, those imported on first use included, and the module's dunders (not
    the helpers it imports: ``os``, ``Any``, ...)."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})


__all__ = [
    "AmbiguousMFSTError",
    "Arc",
    "CompileOptions",
    "CorruptCacheError",
    "CyclicLatticeError",
    "InvalidMFSTError",
    "Lattice",
    "LatticeTooLargeError",
    "MarkedFST",
    "NfstError",
    "NoPathError",
    "OutputMarks",
    "UnknownSymbolError",
    "compile_lattice",
    "compose_openfst",
    "evaluate_all",
    "from_pynini",
    "load_sampler",
    "load_scorer",
    "open_run",
    "save_sampler",
    "save_scorer",
    "to_pynini",
]
