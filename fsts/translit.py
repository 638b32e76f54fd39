"""A transliteration topology written with Pynini rewrite rules: romanized Urdu to Urdu script.

The grammar, over Unicode code points (``token_type="utf8"``), with each mark written on the
output tape as a bracketed symbol ``[@name]`` (read by ``OutputMarks``):

1. ``[<ur>][@script]`` first: the script tag y starts with (see ``tasks/tr.py``);
2. context rules, one optional ``cdrewrite`` each (``CONTEXT_RULES``), e.g. a word-final ``e``
   is bari ye ``ے``, ``h`` after a stop is do-chashmi he ``ھ``; the rule that fired is the mark
   (``ctx:final_e``);
3. then, left to right, one of: a letter rule (``LETTER_RULES``, digraphs included, marked
   ``sh>ش``), the output of a context rule passed on whole, the deletion of a Latin letter
   (``del:a``) or the insertion of an Urdu letter (``ins:ب``), so that every pair aligns.

Each mark carries the letters its rule reads and writes, so a path's mark string names every
rule that fired, in order.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pynini

from nfst.fst.from_openfst import OutputMarks, from_pynini
from nfst.fst.mfst import MarkedFST

SCRIPT_TAG = "<ur>"
LETTER_RULES: Sequence[tuple[str, str]] = (
    ("a", "ا"),
    ("a", "ع"),
    ("aa", "ا"),
    ("b", "ب"),
    ("p", "پ"),
    ("t", "ت"),
    ("t", "ٹ"),
    ("t", "ط"),
    ("s", "س"),
    ("s", "ص"),
    ("s", "ث"),
    ("j", "ج"),
    ("ch", "چ"),
    ("h", "ہ"),
    ("h", "ح"),
    ("kh", "خ"),
    ("d", "د"),
    ("d", "ڈ"),
    ("z", "ز"),
    ("z", "ذ"),
    ("z", "ض"),
    ("z", "ظ"),
    ("r", "ر"),
    ("r", "ڑ"),
    ("sh", "ش"),
    ("gh", "غ"),
    ("f", "ف"),
    ("q", "ق"),
    ("k", "ک"),
    ("g", "گ"),
    ("l", "ل"),
    ("m", "م"),
    ("n", "ن"),
    ("w", "و"),
    ("v", "و"),
    ("o", "و"),
    ("u", "و"),
    ("y", "ی"),
    ("i", "ی"),
    ("e", "ی"),
)
"""(Latin, Urdu) correspondences in any context; the mark is ``latin>urdu``."""
STOPS = ("b", "p", "t", "d", "k", "g", "j", "c")
CONTEXT_RULES: Sequence[tuple[str, str, str, str, str]] = (
    ("initial_aa", "aa", "آ", "[BOS]", ""),
    ("final_e", "e", "ے", "", "[EOS]"),
    ("final_a", "a", "ہ", "", "[EOS]"),
    ("final_n", "n", "ں", "", "[EOS]"),
    ("aspirate", "h", "ھ", "|".join(STOPS), ""),
)
"""(name, Latin, Urdu, left context, right context): Latin → Urdu in that context, marked
``ctx:name``. A context is a union of letters written ``"a|b"``, or ``[BOS]`` / ``[EOS]``."""


def _u(text: str) -> pynini.Fst:
    return pynini.accep(text, token_type="utf8")


def _context(text: str) -> pynini.Fst | str:
    return text if text.startswith("[") or not text else pynini.union(*map(_u, text.split("|")))


def transliteration_grammar(latin: Iterable[str], urdu: Iterable[str]) -> pynini.Fst:
    """The Pynini transducer of the module docstring; ``latin`` and ``urdu`` are the letters
    that may be deleted and inserted."""
    latin, urdu = sorted(set(latin)), sorted(set(urdu) - {SCRIPT_TAG})
    fired = [(_u(lat), _u(f"{ur}[@ctx:{name}]")) for name, lat, ur, _, _ in CONTEXT_RULES]
    sigma = pynini.union(*map(_u, latin), *(out for _, out in fired)).optimize()
    sigma_star = pynini.closure(sigma).optimize()
    cascade = pynini.closure(pynini.union(*map(_u, latin))).optimize()  # x is Latin
    for (_, _, _, left, right), (lat, out) in zip(CONTEXT_RULES, fired):
        rule = pynini.cdrewrite(
            pynini.cross(lat, out), _context(left), _context(right), sigma_star, mode="opt"
        )
        cascade = (cascade @ rule).optimize()
    moves = pynini.union(
        *(pynini.cross(_u(lat), _u(f"{ur}[@{lat}>{ur}]")) for lat, ur in LETTER_RULES),
        *(out for _, out in fired),  # a context rule's output, passed on whole
        *(pynini.cross(_u(a), _u(f"[@del:{a}]")) for a in latin),
        *(pynini.cross(_u(""), _u(f"{b}[@ins:{b}]")) for b in urdu),
    )
    tag = pynini.cross(_u(""), _u(f"[{SCRIPT_TAG}][@script]"))
    return (tag + (cascade @ moves.closure())).optimize()


def rule_transliteration(
    latin: Iterable[str], urdu: Iterable[str], name: str = "tr-rules"
) -> MarkedFST:
    """The grammar as a marked FST (marks on the output tape)."""
    return from_pynini(transliteration_grammar(latin, urdu), marks=OutputMarks(), name=name)
