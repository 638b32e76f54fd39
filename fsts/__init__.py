"""Reusable marked-FST topologies, written as plain Python over ``nfst.MarkedFST`` or as Pynini
grammars (``translit``)."""

from .cipher import cipher_mfst, substitution_ciphers
from .edit import deletion_insertion, deletion_insertion_copy
from .translit import rule_transliteration, transliteration_grammar

__all__ = [
    "cipher_mfst",
    "deletion_insertion",
    "deletion_insertion_copy",
    "rule_transliteration",
    "substitution_ciphers",
    "transliteration_grammar",
]
