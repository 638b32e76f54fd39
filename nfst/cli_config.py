"""``nfst COMMAND --config FILE``: a TOML file's settings as arguments of the command, read as
the command line's own would be (``nfst.cli`` parses them before the command line's, which
overrides them): shared keys at the top level, a table per command (e.g. ``[stats]``), each key
a flag's name.
"""

from __future__ import annotations

import argparse
import tomllib

from .errors import NfstError


def config_arguments(args, parser: argparse.ArgumentParser) -> list[str]:
    """The settings of ``args.config`` (shared keys, then the command's table) as arguments of
    the command's ``parser``, to parse before the command line's own: argparse checks each as it
    checks the line (its type, its choices; ``limit = 1.5`` as ``--limit 1.5``), and a flag on
    the line overrides it. A key is a flag's name or its attribute (``run-dir`` or ``run_dir``,
    ``option`` or ``overrides``); a repeatable flag takes a list."""
    try:
        with open(args.config, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise NfstError(
            f"cannot read config {args.config}: {exc}", "check the path and TOML syntax"
        ) from None
    settings = {k: v for k, v in data.items() if not isinstance(v, dict)} | data.get(
        args.command, {}
    )
    actions = {}
    for action in parser._actions:  # argparse lists a parser's arguments nowhere public
        if action.dest not in ("help", "config"):
            for name in (action.dest, *action.option_strings):  # the first one wins
                actions.setdefault(name.lstrip("-").replace("-", "_"), action)
    unknown = sorted(key for key in settings if key.replace("-", "_") not in actions)
    if unknown:
        raise NfstError(
            f"{args.config}: unknown settings for `nfst {args.command}`: {', '.join(unknown)}",
            f"see `nfst {args.command} --help`",
        )
    arguments = []
    for key, value in settings.items():
        action = actions[key.replace("-", "_")]
        texts = _texts(
            action,
            value,
            f"{args.config}: {key} = {value!r}: expected",
            f"see `nfst {args.command} --help`",
        )
        if not action.option_strings:  # the task
            parser.set_defaults(**{action.dest: texts[0]})
        elif action.nargs == 0:  # a switch
            arguments += [action.option_strings[0]] if value else []
        else:
            flag = max(action.option_strings, key=len)
            arguments += [f"{flag}={text}" for text in texts]
    return arguments


def _texts(action: argparse.Action, value, error: str, hint: str) -> list[str]:
    """A ``--config`` value for ``action`` as the texts it would have on the command line: a
    switch takes true or false, a repeatable flag (a list by default) a list or one value, any
    other flag one string or number."""
    repeated = isinstance(action.default, list)
    values = value if repeated and isinstance(value, list) else [value]
    if action.nargs == 0:
        if type(value) is not bool:
            raise NfstError(f"{error} true or false", hint)
    elif any(type(v) not in (str, int, float) for v in values):
        raise NfstError(
            f"{error} a string or a number" + (", or a list of them" if repeated else ""), hint
        )
    return [str(v) for v in values]
