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
    """A string uses a symbol that is not in the MFST's input or output alphabet."""

    hint = "add arcs for the symbol to the MFST, or clean the data"


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

    hint = "it is rebuilt automatically; delete the file if this repeats"
