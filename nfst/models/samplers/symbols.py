"""A sampler's vocabulary: what its ids mean, saved with it (``nfst.models.files``).

Marks Ω have ids 0..V-1 in the order of the MFST's mark alphabet (``lattice.mark_vocab``,
V = ``size``). The samplers that read x and y (SWA, SWS, SWP-SWS) also embed their symbols:
ids 0, 1, 2 are padding, unknown symbols and the separator ``#``; the MFST's input alphabet
then its output alphabet follow, in that order (a symbol of both tapes takes its output id, so
x and y share its embedding; a real symbol spelt ``#`` shares the separator's id: harmless, it
is still one learned embedding). :meth:`Vocabulary.of` is the one way to build it from an MFST,
so a sampler trained in a script and one trained by ``nfst run`` give each symbol the same id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import torch
from torch import Tensor

if TYPE_CHECKING:
    from ...fst.mfst import MarkedFST

PAD, UNKNOWN, SEPARATOR = "<pad>", "<unk>", "#"
SPECIAL_SYMBOLS = (PAD, UNKNOWN, SEPARATOR)


@dataclass(frozen=True)
class Vocabulary:
    """The marks of a task (ids of a sampler's mark embeddings and outputs) and the symbols of
    x and y (ids of its symbol embeddings); see the module docstring."""

    marks: tuple[str, ...]
    """The mark alphabet Ω, in id order (``lattice.mark_vocab``)."""
    symbols: tuple[str, ...] = ()
    """The input alphabet then the output alphabet; empty for samplers that read neither."""
    index: dict[str, int] = field(init=False, repr=False, compare=False)
    """Symbol → id (module docstring)."""

    def __post_init__(self):
        object.__setattr__(self, "marks", tuple(self.marks))
        object.__setattr__(self, "symbols", tuple(self.symbols))
        index = {sym: i + len(SPECIAL_SYMBOLS) for i, sym in enumerate(self.symbols)}
        index[SEPARATOR] = SPECIAL_SYMBOLS.index(SEPARATOR)
        object.__setattr__(self, "index", index)

    @classmethod
    def of(cls, T: "MarkedFST") -> "Vocabulary":
        """The vocabulary of every lattice of ``T``: its mark alphabet, and its input
        alphabet followed by its output alphabet."""
        return cls(T.mark_alphabet, T.input_alphabet + T.output_alphabet)

    @property
    def size(self) -> int:
        """V, the number of marks."""
        return len(self.marks)

    @property
    def num_symbol_ids(self) -> int:
        """Number of symbol ids: the size of a symbol embedding table."""
        return len(self.symbols) + len(SPECIAL_SYMBOLS)

    def symbol_ids(
        self, strings: Sequence[Sequence[str]], device: torch.device
    ) -> tuple[Tensor, list[int]]:
        """Padded ids (B, L) of symbol strings (``#`` is the separator, unknown symbols
        share one id, padding is 0) and their lengths."""
        unk = SPECIAL_SYMBOLS.index(UNKNOWN)
        lengths = [len(s) for s in strings]
        ids = torch.zeros(len(strings), max(1, max(lengths)), dtype=torch.long)
        for b, s in enumerate(strings):
            ids[b, : len(s)] = torch.tensor([self.index.get(c, unk) for c in s], dtype=torch.long)
        return ids.to(device), lengths
