"""The ``nfst`` command line: it parses the command line and calls the command's function
(``nfst.experiment.commands``; ``nfst bench``: ``nfst.bench``).

Settings come, in increasing priority, from the defaults, a TOML file (``--config FILE``, with a
table per subcommand, e.g. ``[stats]``, and shared keys at the top level; each key a flag's name,
read as the flag would be: ``nfst.cli_config``) and the command line.
Errors on bad input print one line and a hint and exit with status 2; ``--debug`` shows the
traceback. A command stopped by SIGINT or SIGTERM exits with 128 + the signal's number (130,
143: ``nfst.runtime.interrupt``), in whichever stage it was; one whose reader closed the pipe
(``nfst options | head -1``) stops quietly with 141, as if killed by SIGPIPE. Old spellings
(:data:`RENAMED`) still work for one release, with a warning on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Callable, Optional

from . import cli_arguments as arguments
from . import cli_run_arguments as run_arguments
from .bench import bench_command
from .cli_config import config_arguments
from .errors import Interrupted, NfstError
from .experiment import commands
from .experiment.opening import RunRequest
from .experiment.options import parse_assignment, parse_option
from .runtime.interrupt import exit_status

RENAMED = {"--out": "--run-dir", "--task": "the task as the first argument"}
"""Old spellings (until the next release) and what replaces them."""


@dataclass(frozen=True)
class Command:
    help: str
    arguments: Callable  # adds the command's arguments to its parser
    function: Callable  # does it, given the RunRequest and the command's own flags
    examples: str


COMMANDS: dict[str, Command] = {
    "tasks": Command("list the registered tasks", lambda p: None, commands.tasks, "nfst tasks"),
    "compile": Command(
        "compile (and cache) the lattices of a task split",
        arguments.split,
        commands.compile_split,
        "nfst compile cipher\nnfst compile tr --split dev --data-dir DATA --processes 4",
    ),
    "stats": Command(
        "lattice statistics of a task split beside the paper's",
        arguments.stats,
        commands.stats,
        "nfst stats cipher --limit 200\nnfst stats tr --split dev --limit 500 --json",
    ),
    "options": Command(
        "list the --option keys of a preset with their values and meanings",
        arguments.options,
        commands.options,
        "nfst options\nnfst options --preset paper",
    ),
    "bench": Command(
        "run a benchmark; prints one JSON object as its last line",
        arguments.bench,
        bench_command,
        "nfst bench backward --lattices 64\nnfst bench abstract --run-dir runs/cipher-small-0",
    ),
    "run": Command(
        "the whole pipeline for a task: compile, train, evaluate, SMC, report",
        run_arguments.run_all,
        commands.run,
        "nfst run cipher --preset small\n"
        "nfst run tr --data-dir DATA --samplers swa,swp-prefix --run-dir runs/tr\n"
        "nfst run cipher --option sampler.steps=100 --option scorer.kind=ngram\n"
        "nfst run --from runs/cipher-small-0 --run-dir runs/lr --option "
        "sampler.lr=0.01\n"
        "nfst run --run-dir runs/lr --continue --option sampler.steps=400",
    ),
    "reproduce": Command(
        "003's comparison: run tr, scan and cipher at a preset, then merge them into one report",
        run_arguments.reproduce,
        commands.reproduce,
        "nfst reproduce --preset small --data-dir DATA\n"
        "nfst reproduce --preset large --data-dir DATA --jobs 2",
    ),
    "train-scorer": Command(
        "train (or reuse) the frozen LSTM scorer of a run",
        run_arguments.train_scorer,
        commands.train_scorer,
        "nfst train-scorer cipher --run-dir runs/c --new --samplers swa,swp",
    ),
    "train-sampler": Command(
        "train (or reuse) one sampler of a run, and add it to the run's samplers",
        run_arguments.train_sampler,
        commands.train_sampler,
        "nfst train-sampler --run-dir runs/c --sampler swp-prefix\n"
        "nfst train-sampler --run-dir runs/c --sampler swp --seeds 3 "
        "--training-seed 2",
    ),
    "evaluate": Command(
        "partial KL, ESS and expected length of a run's samplers",
        run_arguments.run,
        commands.evaluate,
        "nfst evaluate --run-dir runs/c\nnfst evaluate --run-dir runs/c --samplers swa,swp",
    ),
    "smc": Command(
        "particle smoothing with a run's reference sampler: offset KL against M",
        run_arguments.run,
        commands.smc,
        "nfst smc --run-dir runs/c",
    ),
    "report": Command(
        "merge runs into report.md with tables and plots",
        arguments.report,
        commands.report,
        "nfst report runs/cipher-small-0\n"
        "nfst report runs/tr-small-0 runs/scan-small-0 runs/cipher-small-0 "
        "--out report",
    ),
    "compare": Command(
        "compare the samplers of runs: paired gaps between runs that share a "
        "frozen scorer, ± SE over seeds and test pairs",
        arguments.compare,
        commands.compare,
        "nfst compare runs/cipher-small-0 runs/cipher-lr01\n"
        "nfst compare runs/a runs/b runs/c --json",
    ),
    "sample": Command(
        "sample alignments of one pair (and draw its lattice) or of a split",
        run_arguments.sample,
        commands.sample,
        "nfst sample --run-dir runs/c "
        "--sampler swa --x 'n l c i u' --y 'h o s' --png lattice.png\n"
        "nfst sample --run-dir runs/c --sampler swp --split test --out test.jsonl",
    ),
}


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors as NfstError: one line and a hint, like other bad input."""

    def error(self, message: str):
        command = self.prog.partition(" ")[2]  # "nfst sample" -> "sample"
        raise NfstError(
            f"{command}: {message}" if command else message, f"see `{self.prog} --help`"
        )


def _version() -> str:
    try:
        return metadata.version("nfst")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and each command's own."""
    parser = _Parser(
        prog="nfst",
        description="Path inference in neural finite-state transducers.",
        epilog="`nfst COMMAND --help` describes a command.",
    )
    parser.add_argument("--version", action="version", version=f"nfst {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parsers = {}
    for name, command in COMMANDS.items():
        p = parsers[name] = sub.add_parser(
            name,
            help=command.help,
            description=command.help,
            epilog="examples:\n" + "\n".join(f"  {line}" for line in command.examples.split("\n")),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.arguments(p)
        arguments.common(p)
    return parser, parsers


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """The parsed command line, with the settings of ``--config`` and old spellings applied;
    warns (stderr) of each old spelling used."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, parsers = build_parser()
    args = parser.parse_args(argv)
    if args.config:
        at = argv.index(args.command) + 1
        args = parser.parse_args(
            argv[:at] + config_arguments(args, parsers[args.command]) + argv[at:]
        )
    renamed = getattr(args, "renamed", [])
    if getattr(args, "task_option", None):
        if args.task:
            raise NfstError(
                f"{args.command}: the task is given twice ({args.task} and "
                f"--task {args.task_option})",
                "give it once, first",
            )
        args.task = args.task_option
    if "task" in args and args.task is None and "run_dir" not in args:  # a run may give it
        raise NfstError(
            f"{args.command}: the following arguments are required: TASK",
            f"see `nfst {args.command} --help`",
        )
    for old in dict.fromkeys(renamed):
        print(
            f"nfst: warning: {old} is deprecated (until the next release); use {RENAMED[old]}",
            file=sys.stderr,
        )
    return args


PARSING = ("config", "debug", "renamed", "task_option")
"""What the parser records that no command takes: the config file read, ``--debug`` (read by
:func:`main`) and the old spellings used (warned of)."""


def request_of(args: argparse.Namespace) -> tuple[RunRequest, dict]:
    """What the parsed command line ``args`` asks of a run, its ``--option`` and ``--set``
    settings read once (an error for one that is not ``KEY=VALUE``, or an ``--option`` that no
    preset has or whose field refuses its value), and the command's own flags."""
    flags = {k: v for k, v in vars(args).items() if k not in PARSING}
    fields = {f.name for f in dataclasses.fields(RunRequest)}
    asked = {k: flags.pop(k) for k in fields & set(flags)}
    asked["given"] = frozenset(asked.get("given", ()))
    asked["overrides"] = tuple(map(parse_option, asked.get("overrides", ())))
    asked["task_settings"] = tuple(
        parse_assignment(item, "--set") for item in asked.get("task_settings", ())
    )
    return RunRequest(**asked), flags


def main(argv: Optional[list[str]] = None) -> int:
    """Run the command ``argv`` (default: the program's arguments); its exit status."""
    try:
        status = _command(argv)
        sys.stdout.flush()  # a closed pipe raises here rather than as the interpreter exits
    except BrokenPipeError:  # the reader stopped early: `nfst compare A B | head -1`
        # the interpreter flushes stdout again as it exits: into /dev/null, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE  # 141, as a command killed by SIGPIPE exits
    return status


def _command(argv: Optional[list[str]]) -> int:
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parse_args(argv)
        logging.basicConfig(
            level=logging.WARNING if args.quiet else logging.INFO,
            format="%(levelname)s %(name)s: %(message)s",
        )
        commands.execute(COMMANDS[args.command].function, *request_of(args))
        return 0
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except Interrupted as exc:  # by a signal, after a training loop's checkpoint
        print(f"nfst: {exc}", file=sys.stderr)
        return exit_status()
    except NfstError as exc:
        if debug:
            raise
        print(f"nfst: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path given that cannot be read or written
        if debug or isinstance(exc, BrokenPipeError):  # the latter: main's
            raise
        print(
            f"nfst: error: {exc}\n  hint: check the paths given: a folder missing, a file "
            "where a folder belongs, no permission (--debug shows where)",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(
            "nfst: interrupted\n  hint: run the same command again: finished stages, "
            "checkpoints and cached lattices are kept",
            file=sys.stderr,
        )
        return exit_status()
    except Exception as exc:  # an nfst bug, not bad input
        if debug:
            raise
        print(
            f"nfst: internal error: {type(exc).__name__}: {exc}\n  hint: rerun with --debug "
            "for the traceback, and please report it",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
