"""Small lattices shared by the tests of the DP and sampling code."""

from nfst.fsts import deletion_insertion, substitution_ciphers, cipher_mfst
from nfst import compile_lattice


def small_lattices():
    """A few del/ins and cipher lattices of different shapes (tens of paths each)."""
    T = deletion_insertion("ab", "cd")
    cipher = cipher_mfst(substitution_ciphers(list("abc"), 2, seed=1))
    return [compile_lattice(T, "ab", "c"), compile_lattice(T, "a", "dc"),
            compile_lattice(T, "", "d"), compile_lattice(cipher, "ab", "ba")]
