"""The ``nfst`` command line: it parses the command line and calls the command's function
(``nfst.experiment.commands``; ``nfst bench``: ``nfst.bench``).

Settings come, in increasing priority, from the defaults, a TOML file (``--config FILE``, with a
table per subcommand, e.g. ``[stats]``, and shared keys at the top level; each key a flag's name,
read as the flag would be) and the command line.
Errors on bad input print one line and a hint; ``--debug`` shows the traceback. Old spellings
(:data:`RENAMED`) still work for one release, with a warning on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from typing import Callable, Optional

from .bench import BENCHMARKS, bench_command
from .errors import NfstError
from .experiment import commands
from .experiment.config import DEFAULT_SAMPLERS, check_samplers
from .experiment.presets import PRESETS
from .models.samplers import SAMPLERS

DEFAULT_CACHE = os.environ.get("NFST_CACHE_DIR", ".nfst-cache")
RENAMED = {"--out": "--run-dir", "--task": "the task as the first argument"}
"""Old spellings (until the next release) and what replaces them."""


def _add(p, *flags, help: str, **kw) -> None:
    """``p.add_argument`` with the default, where there is one, at the end of the help."""
    default = kw.get("default")
    if default is not None and default is not False and default != []:
        help += " (default: %(default)s)"
    p.add_argument(*flags, help=help, **kw)


class _Renamed(argparse.Action):
    """An old spelling of an option, hidden from the help. It sets the new one's value and is
    recorded in ``renamed``, to warn once parsing is over."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.renamed = [*getattr(namespace, "renamed", []), option_string]


class _Setting(argparse.Action):
    """A run setting (``--preset``, ``--seed``, ...), stored (``append``: appended) as argparse
    would, and its name recorded in ``given``: a stage command refuses one that differs from
    the run it continues (``nfst.experiment.commands.open_run``)."""

    def __init__(self, option_strings, dest, append: bool = False, **kw):
        super().__init__(option_strings, dest, **kw)
        self.append = append

    def __call__(self, parser, namespace, values, option_string=None):
        if self.append:
            values = [*getattr(namespace, self.dest), values]
        setattr(namespace, self.dest, values)
        namespace.given = {*getattr(namespace, "given", ()), self.dest}


def _integer(least: int = 1, most: Optional[int] = None) -> Callable[[str], int]:
    """An argparse type: an integer from ``least`` to ``most`` (None: no bound)."""
    what = f"an integer from {least} to {most:,}" if most else f"an integer of at least {least}"

    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least or (most is not None and value > most):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value
    return integer


COUNT, SEED, WORKERS = _integer(), _integer(0, 2 ** 32 - 1), _integer(1, 1024)
"""Counts and sizes; seeds; threads and processes (more would crash torch or the machine)."""


def _common(p) -> None:
    g = p.add_argument_group("common options")
    _add(g, "--config", metavar="FILE", help="TOML file of settings (CLI flags override it)")
    _add(g, "--data-dir", metavar="DIR", help="folder with the task data (default: "
                                                "$NFST_DATA_DIR)")
    _add(g, "--cache-dir", metavar="DIR", default=DEFAULT_CACHE,
         help="on-disk lattice cache ($NFST_CACHE_DIR sets the default)")
    _add(g, "--device", default="auto", help="cpu, cuda, cuda:N or auto (GPU if present)")
    _add(g, "--threads", type=WORKERS, default=1, help="torch intra-op threads on CPU (the "
         "small per-step ops of lattice passes run fastest single-threaded)")
    _add(g, "--quiet", action="store_true", help="no progress bars")
    _add(g, "--debug", action="store_true", help="show tracebacks on errors")


def _task(p, renamed: bool = False) -> None:
    p.add_argument("task", nargs="?", metavar="TASK", help="task name, required (`nfst tasks`)")
    if renamed:  # compile and stats took --task before
        p.add_argument("--task", dest="task_option", action=_Renamed)


def _data(p) -> None:
    _add(p, "--processes", type=WORKERS, default=2, help="parallel compile processes")
    _add(p, "--set", dest="task_settings", metavar="KEY=VALUE", action=_Setting, append=True,
         default=[],
         help="a task setting, e.g. --set train_size=500 (repeatable; docs/tasks.md)")


def _split(p) -> None:
    _task(p, renamed=True)
    _add(p, "--split", default="train", help="data split")
    _add(p, "--limit", type=COUNT, help="use at most this many pairs (seeded sample)")
    _data(p)


def _sampler_list(text: str) -> tuple[str, ...]:
    return check_samplers([n.strip() for n in text.split(",") if n.strip()])


def _run(p, samplers: bool = True, new: bool = False) -> None:
    """The options of a command on a run; ``new``: a stage command that may start the run."""
    _task(p)
    _add(p, "--preset", default="small", choices=list(PRESETS), action=_Setting,
         help="training sizes and hyperparameters (paper: 003 Table 3's, with the "
              "trigram-taught scorer of every preset; large: samplers trained until they stop "
              "improving; tiny: the whole pipeline in under a minute, a smoke test)")
    _add(p, "--seed", type=SEED, default=0, action=_Setting,
         help="seeds data subsets, models and sampling")
    _add(p, "--run-dir", metavar="DIR", help="run directory (default: runs/TASK-PRESET-SEED)")
    p.add_argument("--out", dest="run_dir", action=_Renamed)
    if new:
        _add(p, "--new", action="store_true", help="start the run if the run directory "
             "records none (without it, a stage command continues a recorded run only)")
    if samplers:
        _add(p, "--samplers", default=",".join(DEFAULT_SAMPLERS), type=_sampler_list,
             action=_Setting,
             help=f"comma-separated samplers to train and compare, from: {', '.join(SAMPLERS)}")
    _data(p)
    _add(p, "--option", dest="overrides", metavar="KEY=VALUE", action=_Setting, append=True,
         default=[],
         help="a preset setting, dotted, e.g. --option sampler.steps=100 (repeatable; "
              "`nfst options` lists every key with its value and meaning)")


def _jobs(p) -> None:
    _add(p, "--jobs", type=int, help="samplers trained at once, each in its own process (the "
         "same figures as one after another; default: the cores available)")


def _run_all(p) -> None:
    _run(p)
    _jobs(p)


def _reproduce(p) -> None:
    _add(p, "--preset", default="small", choices=list(PRESETS),
         help="training sizes and hyperparameters of every task's run")
    _add(p, "--tasks", default="tr,scan,cipher", help="comma-separated tasks to run")
    _add(p, "--seed", type=SEED, default=0, help="seeds data subsets, models and sampling")
    _add(p, "--runs-dir", metavar="DIR", default="runs",
         help="where the runs go (one directory per task: TASK-PRESET-SEED)")
    _add(p, "--out", metavar="DIR", help="the merged report's folder (default: "
                                         "RUNS_DIR/reproduce-PRESET-SEED)")
    _data(p)
    _add(p, "--option", dest="overrides", metavar="KEY=VALUE", action="append", default=[],
         help="a preset setting for every task's run (repeatable; `nfst options`)")
    _jobs(p)


def _sampler(p, new: bool = False, **kw) -> None:
    _run(p, samplers=False, new=new)
    _add(p, "--sampler", choices=list(SAMPLERS), metavar="NAME",
         help=f"which sampler: {', '.join(SAMPLERS)}", **kw)


def _stats(p) -> None:
    _split(p)
    _add(p, "--json", action="store_true", help="also print the figures as JSON")


def _bench(p) -> None:
    p.add_argument("name", choices=sorted(BENCHMARKS),
                   help="; ".join(f"{k}: {v[0]}" for k, v in sorted(BENCHMARKS.items())))
    _add(p, "--lattices", type=COUNT,
         help="number of lattices (backward, compile, step, rdp, estimates)")
    _add(p, "--run-dir", metavar="DIR", help="trained cipher run to use (abstract; default "
         "runs/cipher-small-0, trained there if missing)")


def _report(p) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help="run directories (e.g. one per task) to merge")
    _add(p, "--out", metavar="DIR", default="report", help="output folder")


def _sample(p) -> None:
    _sampler(p, default="swp-prefix")
    _add(p, "--x", required=True, help="input string, symbols separated by spaces")
    _add(p, "--y", required=True, help="output string, symbols separated by spaces")
    _add(p, "-k", type=COUNT, default=8, help="number of samples")
    _add(p, "--dot", metavar="FILE", help="write the lattice as Graphviz DOT to this file")
    _add(p, "--png", metavar="FILE", help="also render it to PNG (Graphviz's `dot` if "
                                           "installed, else networkx and matplotlib)")


@dataclass(frozen=True)
class Command:
    help: str
    arguments: Callable  # adds the command's arguments to its parser
    function: Callable  # does it, given the parsed options
    examples: str


COMMANDS: dict[str, Command] = {
    "tasks": Command("list the registered tasks", lambda p: None, commands.tasks, "nfst tasks"),
    "compile": Command("compile (and cache) the lattices of a task split", _split,
                       commands.compile_split, "nfst compile cipher\n"
                       "nfst compile tr --split dev --data-dir DATA --processes 4"),
    "stats": Command("lattice statistics of a task split beside the paper's", _stats,
                     commands.stats, "nfst stats cipher --limit 200\n"
                     "nfst stats tr --split dev --limit 500 --json"),
    "options": Command("list the --option keys of a preset with their values and meanings",
                       lambda p: _add(p, "--preset", default="small", choices=list(PRESETS),
                                      help="whose values to list"),
                       commands.options, "nfst options\nnfst options --preset paper"),
    "bench": Command("run a benchmark; prints one JSON object as its last line", _bench,
                     bench_command, "nfst bench backward --lattices 64\n"
                     "nfst bench abstract --run-dir runs/cipher-small-0"),
    "run": Command("the whole pipeline for a task: compile, train, evaluate, SMC, report",
                   _run_all, commands.run, "nfst run cipher --preset small\n"
                   "nfst run tr --data-dir DATA --samplers swa,swp-prefix --run-dir runs/tr\n"
                   "nfst run cipher --option sampler.steps=100 --option scorer.kind=ngram"),
    "reproduce": Command("003's comparison: run tr, scan and cipher at a preset, then merge "
                         "them into one report", _reproduce, commands.reproduce,
                         "nfst reproduce --preset small --data-dir DATA\n"
                         "nfst reproduce --preset large --data-dir DATA --jobs 2"),
    "train-scorer": Command("train (or reuse) the frozen LSTM scorer of a run",
                            lambda p: _run(p, samplers=False, new=True), commands.train_scorer,
                            "nfst train-scorer cipher --run-dir runs/c --new"),
    "train-sampler": Command("train (or reuse) one sampler of a run",
                             lambda p: _sampler(p, new=True, required=True),
                             commands.train_sampler,
                             "nfst train-sampler cipher --sampler swp-prefix --run-dir runs/c"),
    "evaluate": Command("partial KL, ESS and expected length of a run's samplers",
                        lambda p: _run(p, new=True), commands.evaluate,
                        "nfst evaluate cipher --run-dir runs/c\n"
                        "nfst evaluate cipher --samplers swa,swp --run-dir runs/new --new"),
    "smc": Command("particle smoothing with a run's best sampler: offset KL against M",
                   lambda p: _run(p, new=True), commands.smc, "nfst smc cipher --run-dir runs/c"),
    "report": Command("merge runs into report.md with tables and plots", _report,
                      commands.report, "nfst report runs/cipher-small-0\n"
                      "nfst report runs/tr-small-0 runs/scan-small-0 runs/cipher-small-0 "
                      "--out report"),
    "sample": Command("sample alignments of one pair; draw its lattice", _sample,
                      commands.sample, "nfst sample cipher --run-dir runs/c --sampler swa "
                      "--x 'n l c i u' --y 'h o s' --png lattice.png"),
}


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors as NfstError: one line and a hint, like other bad input."""

    def error(self, message: str):
        command = self.prog.partition(" ")[2]  # "nfst sample" -> "sample"
        raise NfstError(f"{command}: {message}" if command else message,
                        f"see `{self.prog} --help`")


def _version() -> str:
    try:
        return metadata.version("nfst")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and each command's own."""
    parser = _Parser(prog="nfst", description="Path inference in neural finite-state "
                     "transducers.", epilog="`nfst COMMAND --help` describes a command.")
    parser.add_argument("--version", action="version", version=f"nfst {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parsers = {}
    for name, command in COMMANDS.items():
        p = parsers[name] = sub.add_parser(
            name, help=command.help, description=command.help,
            epilog="examples:\n" + "\n".join(f"  {line}" for line in command.examples.split("\n")),
            formatter_class=argparse.RawDescriptionHelpFormatter)
        command.arguments(p)
        _common(p)
    return parser, parsers


def _config_arguments(args, parser: argparse.ArgumentParser) -> list[str]:
    """The settings of ``args.config`` (shared keys, then the command's table) as arguments of
    the command's ``parser``, to parse before the command line's own: argparse checks each as it
    checks the line (its type, its choices; ``limit = 1.5`` as ``--limit 1.5``), and a flag on
    the line overrides it. A key is a flag's name or its attribute (``run-dir`` or ``run_dir``,
    ``option`` or ``overrides``); a repeatable flag takes a list."""
    try:
        with open(args.config, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise NfstError(f"cannot read config {args.config}: {exc}",
                        "check the path and TOML syntax")
    settings = {k: v for k, v in data.items() if not isinstance(v, dict)} | \
        data.get(args.command, {})
    actions = {}
    for action in parser._actions:  # argparse lists a parser's arguments nowhere public
        if action.dest not in ("help", "config"):
            for name in (action.dest, *action.option_strings):  # the first one wins
                actions.setdefault(name.lstrip("-").replace("-", "_"), action)
    unknown = sorted(key for key in settings if key.replace("-", "_") not in actions)
    if unknown:
        raise NfstError(f"{args.config}: unknown settings for `nfst {args.command}`: "
                        f"{', '.join(unknown)}", f"see `nfst {args.command} --help`")
    arguments = []
    for key, value in settings.items():
        action = actions[key.replace("-", "_")]
        texts = _config_texts(action, value, f"{args.config}: {key} = {value!r}: expected",
                              f"see `nfst {args.command} --help`")
        if not action.option_strings:  # the task
            parser.set_defaults(**{action.dest: texts[0]})
        elif action.nargs == 0:  # a switch
            arguments += [action.option_strings[0]] if value else []
        else:
            flag = max(action.option_strings, key=len)
            arguments += [f"{flag}={text}" for text in texts]
    return arguments


def _config_texts(action: argparse.Action, value, error: str, hint: str) -> list[str]:
    """A ``--config`` value for ``action`` as the texts it would have on the command line: a
    switch takes true or false, a repeatable flag (a list by default) a list or one value, any
    other flag one string or number."""
    repeated = isinstance(action.default, list)
    values = value if repeated and isinstance(value, list) else [value]
    if action.nargs == 0:
        if type(value) is not bool:
            raise NfstError(f"{error} true or false", hint)
    elif any(type(v) not in (str, int, float) for v in values):
        raise NfstError(f"{error} a string or a number"
                        + (", or a list of them" if repeated else ""), hint)
    return [str(v) for v in values]


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """The parsed command line, with the settings of ``--config`` and old spellings applied;
    warns (stderr) of each old spelling used."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, parsers = build_parser()
    args = parser.parse_args(argv)
    if args.config:
        at = argv.index(args.command) + 1
        args = parser.parse_args(argv[:at] + _config_arguments(args, parsers[args.command])
                                 + argv[at:])
    renamed = getattr(args, "renamed", [])
    if getattr(args, "task_option", None):
        if args.task:
            raise NfstError(f"{args.command}: the task is given twice ({args.task} and "
                            f"--task {args.task_option})", "give it once, first")
        args.task = args.task_option
    if "task" in args and args.task is None:
        raise NfstError(f"{args.command}: the following arguments are required: TASK",
                        f"see `nfst {args.command} --help`")
    for old in dict.fromkeys(renamed):
        print(f"nfst: warning: {old} is deprecated (until the next release); use "
              f"{RENAMED[old]}", file=sys.stderr)
    return args


def main(argv: Optional[list[str]] = None) -> int:
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parse_args(argv)
        logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                            format="%(levelname)s %(name)s: %(message)s")
        commands.execute(COMMANDS[args.command].function, args)
        return 0
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except NfstError as exc:
        if debug:
            raise
        print(f"nfst: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path given that cannot be read or written
        if debug:
            raise
        print(f"nfst: error: {exc}\n  hint: check the paths given: a folder missing, a file "
              "where a folder belongs, no permission (--debug shows where)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nfst: interrupted\n  hint: run the same command again: finished stages, "
              "checkpoints and cached lattices are kept", file=sys.stderr)
        return 130
    except Exception as exc:  # an nfst bug, not bad input
        if debug:
            raise
        print(f"nfst: internal error: {type(exc).__name__}: {exc}\n  hint: rerun with --debug "
              "for the traceback, and please report it", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
