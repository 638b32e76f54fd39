"""Small lattices shared by the tests."""

from __future__ import annotations

import torch

from nfst import compile_lattice
from nfst.dp.batch import LatticeBatch
from nfst.fsts import cipher_mfst, deletion_insertion, substitution_ciphers

CIPHER = cipher_mfst(substitution_ciphers(list("abc"), 2, seed=1))


def small_lattices():
    """A few del/ins and cipher lattices of different shapes (tens of paths each)."""
    T = deletion_insertion("ab", "cd")
    return [compile_lattice(T, "ab", "c"), compile_lattice(T, "a", "dc"),
            compile_lattice(T, "", "d"), compile_lattice(CIPHER, "ab", "ba")]


def del_ins_lattices():
    """Three del/ins lattices sharing one mark vocabulary (3, 3 and 1 paths)."""
    return small_lattices()[:3]


def cipher_lattice():
    """A cipher lattice: 16 paths of two different lengths."""
    return small_lattices()[3]


def small_batch(device: torch.device | str = "cpu") -> LatticeBatch:
    """Cipher lattices of 16, 5, 32 and 8 paths, all over the same 9-mark vocabulary."""
    pairs = [("ab", "ba"), ("a", "b"), ("abc", "ca"), ("ab", "c")]
    return LatticeBatch([compile_lattice(CIPHER, x, y) for x, y in pairs], device)


def symbols_of(lattices):
    return sorted({s for lat in lattices for s in lat.x + lat.y})
