"""The ``KEY=VALUE`` settings that change a task (``--set``) or a preset (``--option``), each
read once, in one way for both, where it is given: an :class:`Assignment`; an :class:`Option`,
checked against the preset's fields, which :func:`apply_overrides` sets. A preset's settings
are described where they are defined, by the docstring under each field of the config
dataclasses; :func:`describe_options` lists them (``nfst options``), with the choices a run
takes."""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import tomllib
import typing
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Optional, Sequence

from ..errors import RunConfigError
from ..runtime.settings import nearest, setting_value
from .presets import Preset, preset


@dataclass(frozen=True)
class Assignment:
    """A ``KEY=VALUE`` setting as given: a task setting (``--set``) or a preset setting
    (``--option``, :func:`parse_option`), its value read once. ``text`` is what was given,
    recorded as such (a run's ``config.json`` lists its options as texts)."""

    key: str
    value: Any
    text: str

    def __str__(self) -> str:
        return self.text


def parse_assignment(item: str, flag: str = "--option") -> Assignment:
    """``"sampler.steps=100"`` -> ``Assignment("sampler.steps", 100, "sampler.steps=100")``:
    the value is read as a TOML value (numbers, booleans, quoted strings, arrays), else taken
    as a bare string; ``None`` is None."""
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise RunConfigError(
            f"{flag} {item!r}: expected KEY=VALUE",
            f"e.g. {flag} train_size=500" if flag == "--set" else f"e.g. {flag} sampler.steps=100",
        )
    text = text.strip()
    if text == "None":
        return Assignment(key.strip(), None, item)
    try:
        return Assignment(key.strip(), tomllib.loads(f"v = {text}")["v"], item)
    except tomllib.TOMLDecodeError:
        return Assignment(key.strip(), text, item)


@dataclass(frozen=True)
class Option(Assignment):
    """A preset setting (``--option``) whose key a preset has and whose value its field
    accepts, held as the field holds it (:func:`parse_option`)."""


def parse_option(item: str) -> Option:
    """A preset setting (``--option``), its value as the field it sets holds it (an int given
    for a float a float, a list for a tuple a tuple): an error for a key that no preset has
    (with the nearest keys) or a value its field does not accept (``nfst.runtime.settings``).
    The fields' types are every preset's, so the preset need not be known yet."""
    option = parse_assignment(item)
    *path, name = option.key.split(".")
    holder = functools.reduce(lambda cls, part: cls and _nested(cls).get(part), path, Preset)
    if holder is None or name not in {f.name for f in dataclasses.fields(holder)}:
        near = nearest(option.key, [key for key, _ in _settings(preset("small"))])
        raise RunConfigError(
            f"--option {option.text!r}: the preset has no setting {option.key!r}"
            + (f"; the nearest: {', '.join(near)}" if near else ""),
            "`nfst options` lists every setting with its value and meaning",
        )
    try:
        return Option(option.key, setting_value(holder, name, option.value), option.text)
    except ValueError as exc:
        raise RunConfigError(
            f"--option {option.text!r}: {exc}",
            "e.g. sampler.lr=0.001, "
            "sampler.steps=100, sampler.sampler.dropout=0.1; `nfst "
            "options` lists every setting with its meaning",
        ) from None


def _nested(cls: type) -> dict[str, type]:
    """The fields of the config dataclass ``cls`` that hold config dataclasses, and their
    classes."""
    return {
        name: hint
        for name, hint in typing.get_type_hints(cls).items()
        if dataclasses.is_dataclass(hint)
    }


def as_options(items: Sequence[str | Option]) -> tuple[Option, ...]:
    """``items`` as options, each text read by :func:`parse_option` (Python callers may give
    texts where the command line gives options)."""
    return tuple(item if isinstance(item, Option) else parse_option(item) for item in items)


def merge_overrides(old: Sequence[Option], new: Sequence[Option]) -> tuple[Option, ...]:
    """The ``--option`` settings ``old`` with ``new`` after them, less the old ones whose key a
    new one sets again (they would be overridden anyway)."""
    keys = {option.key for option in new}
    return tuple(option for option in old if option.key not in keys) + tuple(new)


def apply_overrides(p: Preset, overrides: Sequence[str | Option]) -> Preset:
    """Set dotted fields of a preset, e.g. ``scorer.steps=50`` or ``sampler.sampler.d=32``."""
    for option in as_options(overrides):
        *path, name = option.key.split(".")
        setattr(functools.reduce(getattr, path, p), name, option.value)
    return p


def option_value(p: Preset, key: str) -> Any:
    """The value of the setting ``key`` (dotted, e.g. ``sampler.steps``) of a preset."""
    return functools.reduce(getattr, key.split("."), p)


def _settings(obj, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, the config dataclass that holds it) of every setting of a nest of config
    dataclasses, in field order: the fields that do not hold a dataclass themselves."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from _settings(value, f"{prefix}{f.name}.")
        else:
            yield prefix + f.name, obj


@functools.cache
def attribute_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (and of its bases), read from the source:
    the one place a setting is described. Whitespace is collapsed to single spaces."""
    docs = {}
    for klass in reversed(cls.__mro__[:-1]):  # bases first, so subclasses win
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for node, after in zip(body, body[1:]):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


NOT_ALONE: dict[tuple[str, str], Optional[str]] = {
    ("sampler.objective", "posterior"): "scorer.kind=ngram",
    ("sampler.objective", "nasmc"): None,
}
"""Choices of a setting that a run refuses alone (``nfst.experiment.config.check_run``): each
with the setting it needs beside it, or None where no run takes it (it is for training from
Python)."""


def describe_options(preset_name: str = "small") -> list[tuple[str, Any, str]]:
    """(key, value, meaning) of every ``--option`` key of the preset ``preset_name``, in field
    order: the value there, and the meaning from the config dataclass that holds it, with a
    choice's list of the choices a run takes (:data:`NOT_ALONE`)."""
    p = preset(preset_name)
    rows = []
    for key, holder in _settings(p):
        name = key.rpartition(".")[2]
        meaning = attribute_docs(type(holder)).get(name, "")
        rows.append(
            (
                key,
                getattr(holder, name),
                f"{meaning} {_choices(key, typing.get_type_hints(type(holder))[name])}".strip(),
            )
        )
    return rows


def _choices(key: str, hint) -> str:
    """The choices of the setting ``key``, annotated ``hint``, that a run takes, and those it
    takes only from Python; "" for a setting that is no choice."""
    if typing.get_origin(hint) is not Literal:
        return ""
    needs = {choice: NOT_ALONE.get((key, choice), "") for choice in typing.get_args(hint)}
    run = [
        repr(c) + (f" (with {need})" if need else "")
        for c, need in needs.items()
        if need is not None
    ]
    python = [repr(c) for c, need in needs.items() if need is None]
    return (
        f"Choices in a run: {', '.join(run)}"
        + (f"; from Python only: {', '.join(python)}" if python else "")
        + "."
    )
