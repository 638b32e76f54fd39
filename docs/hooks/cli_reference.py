"""MkDocs hook: the CLI reference page, generated from the parser at every build.

A page holding the line ``<!-- cli-reference -->`` gets, in its place, every command of
``nfst.cli.build_parser()`` (its purpose, usage, arguments with their defaults, examples) and
the table of every ``--option`` key of the presets (``nfst.experiment.config.describe_options``),
so the reference cannot fall behind the code.
"""

from __future__ import annotations

import argparse

MARKER = "<!-- cli-reference -->"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    """The command's own arguments (the common options are described once, above)."""
    # argparse keeps no public list of a parser's arguments or groups
    common = {id(a) for g in parser._action_groups if g.title == "common options"
              for a in g._group_actions}
    rows = ["| argument | meaning |", "|---|---|"]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction) \
                or id(action) in common:
            continue
        flags = ", ".join(action.option_strings) or action.metavar or action.dest
        if action.option_strings and action.nargs != 0:
            flags += f" {action.metavar or action.dest.upper()}"
        meaning = (action.help or "") % {"default": action.default}
        if action.choices and "{" not in meaning:
            meaning += f" (one of: {', '.join(map(str, action.choices))})"
        rows.append(f"| `{_cell(flags)}` | {_cell(meaning)} |")
    return rows


def _commands() -> list[str]:
    from nfst.cli import build_parser

    parser, parsers = build_parser()
    lines = ["## Commands", "", "| command | what it does |", "|---|---|"]
    lines += [f"| [`nfst {name}`](#nfst-{name}) | {_cell(p.description)} |"
              for name, p in parsers.items()]
    for name, p in parsers.items():
        examples = (p.epilog or "").split("\n")[1:]
        lines += ["", f"### nfst {name}", "", p.description or "", "",
                  "```text", p.format_usage().strip(), "```", "", *_arguments(p)]
        if examples:
            lines += ["", "Examples:", "", "```text", *(e.strip() for e in examples), "```"]
    return lines


def _options() -> list[str]:
    from nfst.experiment.config import describe_options
    from nfst.experiment.presets import PRESETS

    values = {name: {key: value for key, value, _ in describe_options(name)} for name in PRESETS}
    lines = ["## `--option` keys", "",
             "Every preset setting, its value in each preset, and its meaning "
             "(`nfst options --preset P` prints the same). Set one with "
             "`--option KEY=VALUE` on any command that trains or evaluates.", "",
             "| key | " + " | ".join(PRESETS) + " | meaning |",
             "|---|" + "---|" * len(PRESETS) + "---|"]
    for key, _, meaning in describe_options(next(iter(PRESETS))):
        cells = " | ".join(f"`{_cell(repr(values[p][key]))}`" for p in PRESETS)
        lines.append(f"| `{key}` | {cells} | {_cell(meaning)} |")
    return lines


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, "\n".join(_commands() + [""] + _options()))
