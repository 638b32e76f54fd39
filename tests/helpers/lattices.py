"""Small lattices shared by the tests."""

from __future__ import annotations

import numpy as np
import torch

from nfst import Lattice, compile_lattice
from nfst.dp.batch import LatticeBatch
from nfst.fsts import cipher_mfst, deletion_insertion, substitution_ciphers
from nfst.models.samplers import Vocabulary

CIPHER = cipher_mfst(substitution_ciphers(list("abc"), 2, seed=1))


def small_lattices():
    """A few del/ins and cipher lattices of different shapes (tens of paths each)."""
    T = deletion_insertion("ab", "cd")
    return [
        compile_lattice(T, "ab", "c"),
        compile_lattice(T, "a", "dc"),
        compile_lattice(T, "", "d"),
        compile_lattice(CIPHER, "ab", "ba"),
    ]


def del_ins_lattices():
    """Three del/ins lattices sharing one mark vocabulary (3, 3 and 1 paths)."""
    return small_lattices()[:3]


def cipher_lattice():
    """A cipher lattice: 16 paths of two different lengths."""
    return small_lattices()[3]


def stop_among_arcs_lattice():
    """0 -a-> 1 -b-> 2 and 0 -b-> 2, states 1 and 2 final (del_ins_lattices' vocabulary): at
    state 1, STOP competes with an out-arc."""
    vocab = del_ins_lattices()[0].mark_vocab
    a, b = vocab.index("a"), vocab.index("b")
    return Lattice(
        mark_vocab=vocab,
        x=("a",),
        y=("b",),
        arc_src=np.array([0, 0, 1]),
        arc_dst=np.array([1, 2, 2]),
        arc_mark=np.array([a, b, b]),
        final=np.array([False, True, True]),
        positions=np.zeros((3, 2), dtype=np.int64),
        height=np.array([2, 1, 0]),
    )


def small_batch(device: torch.device | str = "cpu") -> LatticeBatch:
    """Cipher lattices of 16, 5, 32 and 8 paths, all over the same 9-mark vocabulary."""
    pairs = [("ab", "ba"), ("a", "b"), ("abc", "ca"), ("ab", "c")]
    return LatticeBatch([compile_lattice(CIPHER, x, y) for x, y in pairs], device)


def vocabulary_of(lattices) -> Vocabulary:
    """The lattices' marks, and the symbols of their x and y (sorted): a sampler's vocabulary
    for lattices built without their MFST at hand (``Vocabulary.of(T)`` otherwise)."""
    symbols = sorted({s for lat in lattices for s in lat.x + lat.y})
    return Vocabulary(lattices[0].mark_vocab, symbols)
