"""Reusable marked-FST topologies, written as plain Python over ``nfst.MarkedFST``."""

from .cipher import cipher_mfst, substitution_ciphers
from .edit import deletion_insertion, deletion_insertion_copy

__all__ = ["cipher_mfst", "deletion_insertion", "deletion_insertion_copy", "substitution_ciphers"]
