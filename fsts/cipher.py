"""The cipher topology (003 App. A): choose one of several substitution ciphers, encipher, then
pass the result through a noisy copy. Marks concatenate through the composition, so enciphering
a as b then copying b is the mark string ``replace a b copy b``."""

from __future__ import annotations

import random
from typing import Sequence

from nfst.fst.mfst import MarkedFST

from .edit import deletion_insertion_copy


def substitution_ciphers(alphabet: Sequence[str], count: int, seed: int) -> list[dict[str, str]]:
    """``count`` random permutations of the alphabet, each by a Fisher–Yates shuffle."""
    rng = random.Random(seed)
    ciphers = []
    for _ in range(count):
        image = list(alphabet)
        for i in range(len(image) - 1, 0, -1):
            j = rng.randint(0, i)
            image[i], image[j] = image[j], image[i]
        ciphers.append(dict(zip(alphabet, image)))
    return ciphers


def cipher_selector(ciphers: Sequence[dict[str, str]], *, replace: str = "replace") -> MarkedFST:
    """ε arcs marked ``cipher_i`` from the start into state i, where a:c_i(a) loops carry the
    marks ``replace a c_i(a)``."""
    T = MarkedFST("ciphers")
    for i, cipher in enumerate(ciphers):
        q = T.add_state(final=True)
        T.add_arc(T.start, q, marks=[f"cipher_{i}"])
        for a, b in sorted(cipher.items()):
            T.add_arc(q, q, input=[a], output=[b], marks=[replace, a, b])
    return T


def cipher_mfst(ciphers: Sequence[dict[str, str]]) -> MarkedFST:
    """``cipher_selector(ciphers) ∘ deletion_insertion_copy``, marks concatenated."""
    alphabet = sorted({b for c in ciphers for b in c.values()})
    T = cipher_selector(ciphers).compose(deletion_insertion_copy(alphabet))
    T.name = "cipher"
    return T
