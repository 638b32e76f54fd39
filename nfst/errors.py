"""Typed errors. Each names the offending input and says what to do about it."""


class NfstError(Exception):
    """Base class of every error nfst raises on bad input."""

    hint: str = ""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint or self.hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}\n  hint: {self.hint}" if self.hint else text


class UnknownSymbolError(NfstError):
    """A string uses a symbol that is not in the MFST's input or output alphabet: ``symbols``
    of the ``tape`` ("input" or "output")."""

    hint = "add arcs for the symbol to the MFST, or clean the data"

    def __init__(
        self, message: str, hint: str = "", *, tape: str = "", symbols: tuple[str, ...] = ()
    ):
        super().__init__(message, hint)
        self.tape, self.symbols = tape, symbols


class NoPathError(NfstError):
    """No generating path of the MFST yields the pair (x, y)."""

    hint = "the topology cannot align this pair; skip it or widen the MFST"


class AmbiguousMFSTError(NfstError):
    """Two generating paths of (x, y) share a mark string (003 §3 assumes they never do)."""

    hint = "give the paths distinct marks, e.g. mark each edit with its symbols"


class CyclicLatticeError(NfstError):
    """The lattice has a cycle; the backward algorithm and SWP need acyclic lattices."""

    hint = "pass allow_cyclic=True to keep it for samplers that do not need acyclicity"


class LatticeTooLargeError(NfstError):
    """The lattice exceeds the configured size limit."""

    hint = "raise max_states, or drop long pairs from the data"


class InvalidMFSTError(NfstError):
    """The MFST itself is malformed (bad state ids, arcs we cannot encode, ...)."""


class CorruptCacheError(NfstError):
    """A cached file or checkpoint does not pass its integrity check."""

    hint = (
        "delete the file: a missing lattice cache is rebuilt, and a missing model or "
        "checkpoint retrained"
    )


class DataError(NfstError):
    """A data file is missing, empty or malformed."""

    hint = "give --data-dir DIR, or set NFST_DATA_DIR, to the folder holding the data"


class TaskError(NfstError):
    """An unknown task, split or setting, or a task file that does not load."""

    hint = "`nfst tasks` lists the tasks and their splits; docs/tasks.md their settings"


class PathTooLongError(NfstError):
    """A walker was still going after the length cap."""

    hint = (
        "raise the cap (--option sampler.sampler.max_length=N), or drop pairs with very "
        "long lattices; a cyclic lattice has paths of every length"
    )


class TrainingDivergedError(NfstError):
    """The loss or its gradient became NaN or infinite."""

    hint = (
        "lower the learning rate or the gradient clip, or resume from the last checkpoint "
        "with another seed"
    )


class Interrupted(NfstError):
    """Stopped by SIGINT/SIGTERM after writing a checkpoint."""

    hint = "run the same command again to resume from the checkpoint"


class RunConfigError(NfstError):
    """A run directory holds a run made with other settings, or a setting is malformed."""

    hint = "use another --run-dir, or delete the old run"


class ReportError(NfstError):
    """A run directory has no results to report."""

    hint = "give run directories that `nfst run` or `nfst evaluate` wrote"
