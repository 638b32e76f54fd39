"""Symbol ids of x and y, for the samplers that read them (SWA, SWS).

Ids 0, 1, 2 are padding, unknown symbols and the separator ``#``; the alphabet's symbols
follow. (A real symbol spelt ``#`` would share the separator's id: harmless, it is still one
learned embedding.)
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

PAD, UNKNOWN, SEPARATOR = "<pad>", "<unk>", "#"
SPECIAL_SYMBOLS = (PAD, UNKNOWN, SEPARATOR)


class SymbolTable:
    """Ids of the symbols of an alphabet (the MFST's input ∪ output alphabet)."""

    def __init__(self, symbols: Sequence[str]):
        self.symbols = tuple(symbols)
        self.index = {sym: i + len(SPECIAL_SYMBOLS) for i, sym in enumerate(self.symbols)}
        self.index[SEPARATOR] = SPECIAL_SYMBOLS.index(SEPARATOR)

    @property
    def size(self) -> int:
        """Number of ids: the size of a symbol embedding table."""
        return len(self.symbols) + len(SPECIAL_SYMBOLS)

    def ids(self, strings: Sequence[Sequence[str]], device: torch.device
            ) -> tuple[Tensor, list[int]]:
        """Padded ids (B, L) of symbol strings (``#`` is the separator, unknown symbols
        share one id, padding is 0) and their lengths."""
        unk = SPECIAL_SYMBOLS.index(UNKNOWN)
        lengths = [len(s) for s in strings]
        ids = torch.zeros(len(strings), max(1, max(lengths)), dtype=torch.long)
        for b, s in enumerate(strings):
            ids[b, :len(s)] = torch.tensor([self.index.get(c, unk) for c in s], dtype=torch.long)
        return ids.to(device), lengths
