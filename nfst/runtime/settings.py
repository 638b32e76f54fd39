"""Settings given as text (``--option``, ``--set``): a value checked against the annotation of
the config dataclass field it sets, and the names nearest to a misspelt one.

Integer settings are counts and sizes (steps, pairs, dimensions, ...), so they must be at least
1, unless their field says otherwise in its metadata: ``field(default=0, metadata={"least":
0})`` (a seed, a length that may be 0).
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from typing import Any, Sequence


def nearest(key: str, keys: Sequence[str]) -> list[str]:
    """Up to three of ``keys`` whose last dotted part is spelled like ``key``'s, the most similar
    whole key first (``sampler.stpes``: sampler.steps, scorer.steps, scorer.ngram.steps)."""
    def like(a, b):
        return difflib.SequenceMatcher(None, a, b).ratio()
    name = key.rpartition(".")[2]
    near = [k for k in keys if like(name, k.rpartition(".")[2]) >= 0.75]
    return sorted(near, key=lambda k: -like(key, k))[:3]


def setting_value(cls: type, name: str, value: Any) -> Any:
    """``value`` for the field ``name`` of the dataclass ``cls``, in the field's type: an int
    where a float is expected becomes a float. ValueError saying what is expected otherwise:
    another type, None where the field is not Optional, or an int below the field's least."""
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    expected, optional = typing.get_type_hints(cls)[name], False
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        if value is None and type(None) in typing.get_args(expected):
            return None
        inner = [t for t in typing.get_args(expected) if t is not type(None)]
        expected, optional = (inner[0], True) if len(inner) == 1 else (Any, False)
    if not isinstance(expected, type):
        return value  # an annotation we do not check (a task's own settings may have any)
    if expected is float and type(value) is int:
        return float(value)
    least = field.metadata.get("least", 1)
    if type(value) is not expected or (expected is int and value < least):
        what = _described(expected, least)
        raise ValueError(f"expected {'None or ' if optional else ''}{what}, got {value!r}")
    return value


def _described(expected: type, least: int) -> str:
    if expected is int:
        return "a positive int" if least == 1 else f"an int of at least {least}"
    return f"{'an' if expected.__name__[0] in 'aeiou' else 'a'} {expected.__name__}"
