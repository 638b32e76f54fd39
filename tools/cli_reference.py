"""The command-line reference page, docs/cli.md, generated from the parser:

    python -m tools.cli_reference            # (re)writes docs/cli.md, from the checkout's root
    python -m tools.cli_reference -          # prints the page instead

The page holds every command of ``nfst.cli.build_parser()`` (its purpose, usage, arguments with
their defaults, examples) and the table of every ``--option`` key of the presets
(``nfst.experiment.options.describe_options``). It is committed, so that it reads right where the
repository is browsed; tests/test_cli_reference.py fails when it falls behind the code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

PAGE = Path("docs/cli.md")
INTRO = """\
# Command-line reference

`nfst COMMAND --help` prints the same for one command. Settings come, in increasing priority,
from the defaults, a TOML file given with `--config` (a table per command, e.g. `[run]`, and
shared keys at the top level; each key a flag's name, a list for a flag given more than once:
`run-dir = "runs/c"`, `option = ["sampler.steps=100"]`) and the command line. Every setting is
checked, wherever it comes from, before any work starts: bad input stops with one line saying
what is wrong and a hint, and exit status 2. A command interrupted by a signal exits with 128 +
its number, in whichever stage: 130 for SIGINT (Ctrl-C), 143 for SIGTERM; running it again
resumes ([Interrupting and resuming](pipeline.md#interrupting-and-resuming)). One whose output
goes to a reader that stops early (`nfst options | head -1`) stops quietly with 141, as if
killed by SIGPIPE.

```console
$ nfst --version
nfst 0.1.0
```

This page is generated from the parser by `python -m tools.cli_reference`; a test fails when
it falls behind the code.
"""


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _common(parser: argparse.ArgumentParser) -> list:
    """The arguments of the "common options" group, which every command has."""
    # argparse keeps no public list of a parser's arguments or groups
    return [
        a for g in parser._action_groups if g.title == "common options" for a in g._group_actions
    ]


def _arguments(parser: argparse.ArgumentParser, which: str = "own") -> list[str]:
    """A table of the command's own arguments, or (``which="common"``) of the common
    options, described once for all commands."""
    common = _common(parser)
    actions = (
        common
        if which == "common"
        else [a for a in parser._actions if all(a is not c for c in common)]
    )
    rows = ["| argument | meaning |", "|---|---|"]
    for action in actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
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

    _, parsers = build_parser()
    lines = [
        "## Common options",
        "",
        "Every command takes these:",
        "",
        *_arguments(next(iter(parsers.values())), "common"),
        "",
        "## Commands",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [
        f"| [`nfst {name}`](#nfst-{name}) | {_cell(p.description)} |" for name, p in parsers.items()
    ]
    for name, p in parsers.items():
        examples = (p.epilog or "").split("\n")[1:]
        own = _arguments(p)
        lines += [
            "",
            f"### nfst {name}",
            "",
            p.description or "",
            "",
            "```text",
            p.format_usage().strip(),
            "```",
            "",
        ]
        lines += own if len(own) > 2 else ["No arguments but the common options."]
        if examples:
            lines += ["", "Examples:", "", "```text", *(e.strip() for e in examples), "```"]
    return lines


def _options() -> list[str]:
    from nfst.experiment.options import describe_options
    from nfst.experiment.presets import PRESETS

    described = {name: describe_options(name) for name in PRESETS}
    values = {name: {key: value for key, value, _ in rows} for name, rows in described.items()}
    lines = [
        "## `--option` keys",
        "",
        "Every preset setting, its value in each preset, and its meaning "
        "(`nfst options --preset P` prints the same). Set one with "
        "`--option KEY=VALUE` on any command that trains or evaluates.",
        "",
        "| key | " + " | ".join(PRESETS) + " | meaning |",
        "|---|" + "---|" * len(PRESETS) + "---|",
    ]
    for key, _, meaning in next(iter(described.values())):
        cells = " | ".join(f"`{_cell(repr(values[p][key]))}`" for p in PRESETS)
        lines.append(f"| `{key}` | {cells} | {_cell(meaning)} |")
    return lines


def render() -> str:
    """The whole page."""
    return "\n".join([INTRO, *_commands(), "", *_options()]) + "\n"


def main(argv: list[str]) -> None:
    # The same page from any shell: the defaults without NFST_CACHE_DIR (nfst.cli reads it on
    # import), usage wrapped at 80 columns (argparse reads COLUMNS).
    os.environ.pop("NFST_CACHE_DIR", None)
    os.environ["COLUMNS"] = "80"
    text = render()
    if argv == ["-"]:
        sys.stdout.write(text)
    else:
        (Path(argv[0]) if argv else PAGE).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
