"""Settings of config dataclasses, given as text (``--option``, ``--set``, ``--config``) or set in
Python: a value checked against what its field accepts (:func:`setting_value`), a whole config
checked field by field before any work starts (:func:`check_settings`), and the names nearest
to a misspelt one.

What a field accepts is declared once, on the field, by its type and its metadata:

- ``int``, ``float`` (an int is taken as a float; a bool is neither), ``str``, ``bool``,
  ``dict``; ``Optional[T]``: None too; ``Literal["a", "b"]``: one of those choices; a union
  (``int | Literal["auto"]``): what any of its types accepts;
  ``tuple[T, ...]``: a list or tuple of T (a TOML array), kept as a tuple;
- for numbers, a ``"range"`` in the metadata, an interval with ``inf`` for no end:
  ``dropout: float = field(default=0.3, metadata={"range": "[0, 1)"})``,
  ``lr: float = field(default=1e-3, metadata={"range": "(0, inf)"})``. An int setting without
  one is a count or a size, in ``[1, inf)``; ``metadata={"least": 0}`` is short for
  ``"[0, inf)"`` (a seed, a length that may be 0).

A float setting without a range takes any float, infinities and NaN included: every float
setting of a run has one (tests/runtime/test_settings.py checks it).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Sequence


def nearest(key: str, keys: Sequence[str]) -> list[str]:
    """Up to three of ``keys`` whose last dotted part is spelled like ``key``'s, the most similar
    whole key first (``sampler.stpes``: sampler.steps, scorer.steps, scorer.ngram.steps)."""

    def like(a, b):
        return difflib.SequenceMatcher(None, a, b).ratio()

    name = key.rpartition(".")[2]
    near = [k for k in keys if like(name, k.rpartition(".")[2]) >= 0.75]
    return sorted(near, key=lambda k: -like(key, k))[:3]


@dataclass(frozen=True)
class Interval:
    """The numbers from ``low`` to ``high``, each end in or out: ``Interval.parse("[0, 1)")``
    is 0 ≤ v < 1; ``"(0, inf)"`` is v > 0."""

    low: float
    high: float
    low_in: bool
    high_in: bool

    @classmethod
    def parse(cls, text: str) -> "Interval":
        text = text.strip()
        low, comma, high = text[1:-1].partition(",")
        if not comma or text[0] not in "[(" or text[-1] not in "])":
            raise ValueError(f"not an interval: {text!r} (e.g. '[0, 1)')")
        return cls(float(low), float(high), text[0] == "[", text[-1] == "]")

    def __contains__(self, value: float) -> bool:
        above = value >= self.low if self.low_in else value > self.low
        below = value <= self.high if self.high_in else value < self.high
        return above and below

    def described(self, what: str) -> str:
        """``what`` (a type's name, "int" or "float") in this interval, in words."""
        a = "an" if what[0] in "aeiou" else "a"
        low = f"{self.low:g}"
        if self.high != math.inf:
            return f"{a} {what} in {'[' if self.low_in else '('}{low}, {self.high:g}" + (
                "]" if self.high_in else ")"
            )
        if (self.low == 0 and not self.low_in) or (what == "int" and self.low == 1 and self.low_in):
            return f"a positive {what}"
        return f"{a} {what} of at least {low}" if self.low_in else f"{a} {what} above {low}"


def interval(field: dataclasses.Field, expected: type) -> Interval | None:
    """The range a number field's metadata declares (module docstring), or None."""
    if "range" in field.metadata:
        return Interval.parse(field.metadata["range"])
    if expected is int:
        return Interval(field.metadata.get("least", 1), math.inf, True, False)
    return None


def setting_value(cls: type, name: str, value: Any) -> Any:
    """``value`` for the field ``name`` of the dataclass ``cls``, as the field holds it: an int
    where a float is expected becomes a float, a list where a tuple is expected a tuple.
    ValueError saying what is expected where the field does not accept it (module docstring):
    another type, None where the field is not Optional, a choice not in its Literal, a number
    outside its range."""
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    expected = typing.get_type_hints(cls)[name]
    return _value(expected, interval(field, _number_type(expected)), value)


def _number_type(expected) -> type | None:
    """int or float: the field's type, or the one in its Optional[...] or tuple[..., ...]."""
    return next((t for t in (expected, *typing.get_args(expected)) if t in (int, float)), None)


def _value(expected, within: Interval | None, value: Any) -> Any:
    """``value`` as a field annotated ``expected`` holds it, with numbers ``within`` (None: any),
    or ValueError (:func:`setting_value`)."""
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        expected = ["None"] if type(None) in args else []
        for inner in (t for t in args if t is not type(None)):
            try:
                return _value(inner, within, value)
            except ValueError as exc:  # what each alternative expects, for the message
                expected.append(str(exc).removeprefix("expected ").rpartition(", got ")[0])
        raise ValueError(f"expected {' or '.join(expected)}, got {value!r}")
    if origin is typing.Literal:
        if value in args and type(value) in {type(a) for a in args}:
            return value
        raise ValueError(f"expected one of {', '.join(map(repr, args))}, got {value!r}")
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if isinstance(value, (list, tuple)):
            try:
                return tuple(_value(args[0], within, v) for v in value)
            except ValueError:
                pass
        raise ValueError(
            f"expected a list of {_described(args[0], within, plural=True)}, got {value!r}"
        )
    if not isinstance(expected, type):
        return value  # an annotation we do not check (a task's own settings may have any)
    number = float(value) if expected is float and type(value) is int else value
    if type(number) is not expected or (within is not None and number not in within):
        raise ValueError(f"expected {_described(expected, within)}, got {value!r}")
    return number


def _described(expected: type, within: Interval | None, plural: bool = False) -> str:
    if not isinstance(expected, type):
        return str(expected)
    text = (
        within.described(expected.__name__)
        if within is not None
        else f"{'an' if expected.__name__[0] in 'aeiou' else 'a'} {expected.__name__}"
    )
    return (
        text.partition(" ")[2].replace(expected.__name__, expected.__name__ + "s", 1)
        if plural
        else text
    )


def check_settings(config: Any, prefix: str = "") -> None:
    """Check every setting of the config dataclass ``config``, and of the config dataclasses
    it holds, against its field (module docstring). ValueError naming the first that its field
    does not accept by its dotted key, e.g. ``sampler.lr: expected a positive float, got
    -1.0``."""
    for field in dataclasses.fields(config):
        value, key = getattr(config, field.name), prefix + field.name
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_settings(value, key + ".")
            continue
        try:
            setting_value(type(config), field.name, value)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
