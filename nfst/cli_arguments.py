"""The arguments of the ``nfst`` commands, in groups that commands share (``nfst.cli`` builds
its parsers from these): the groups of every command (``common``, the task, its data), those of
the commands not on a run (``compile``, ``stats``, ``options``, ``bench``, ``report``,
``compare``) and what all are built from; the commands on a run take theirs from
``nfst.cli_run_arguments``.

A run setting (``--preset``, ``--seed``, ...) and a path a recorded run remembers
(``--data-dir``, ``--cache-dir``) are stored by :class:`Setting`, which notes that it was
given: a stage command continues the run its directory records, takes from the record what
was not given, and refuses a given setting that differs (``nfst.experiment.commands``).
"""

from __future__ import annotations

import argparse
import os
from typing import Callable, Optional

from .bench import BENCHMARKS
from .experiment.presets import PRESETS

DEFAULT_CACHE = os.environ.get("NFST_CACHE_DIR", ".nfst-cache")


def add(p, *flags, help: str, **kw) -> None:
    """``p.add_argument`` with the default, where there is one, at the end of the help."""
    default = kw.get("default")
    if default is not None and default is not False and default != []:
        help += " (default: %(default)s)"
    p.add_argument(*flags, help=help, **kw)


class Renamed(argparse.Action):
    """An old spelling of an option, hidden from the help. It sets the new one's value and is
    recorded in ``renamed``, to warn once parsing is over."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.renamed = [*getattr(namespace, "renamed", []), option_string]


class Setting(argparse.Action):
    """A run setting (``--preset``, ``--seed``, ...) or a path a run records (``--data-dir``),
    stored (``append``: appended) as argparse would, and its name recorded in ``given``: a
    stage command takes from the run it continues what was not given, and refuses a given
    setting that differs (``nfst.experiment.opening.open_run``)."""

    def __init__(self, option_strings, dest, append: bool = False, **kw):
        super().__init__(option_strings, dest, **kw)
        self.append = append

    def __call__(self, parser, namespace, values, option_string=None):
        if self.append:
            values = [*getattr(namespace, self.dest), values]
        setattr(namespace, self.dest, values)
        namespace.given = {*getattr(namespace, "given", ()), self.dest}


def integer(least: int = 1, most: Optional[int] = None) -> Callable[[str], int]:
    """An argparse type: an integer from ``least`` to ``most`` (None: no bound)."""
    what = f"an integer from {least} to {most:,}" if most else f"an integer of at least {least}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least or (most is not None and value > most):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


COUNT, SEED, WORKERS = integer(), integer(0, 2**32 - 1), integer(1, 1024)
"""Counts and sizes; seeds; threads and processes (more would crash torch or the machine)."""


def common(p) -> None:
    g = p.add_argument_group("common options")
    add(g, "--config", metavar="FILE", help="TOML file of settings (CLI flags override it)")
    add(
        g,
        "--data-dir",
        metavar="DIR",
        action=Setting,
        help="folder with the task data (default: a recorded run's, else $NFST_DATA_DIR)",
    )
    add(
        g,
        "--cache-dir",
        metavar="DIR",
        default=DEFAULT_CACHE,
        action=Setting,
        help="on-disk lattice cache (a recorded run's unless given; $NFST_CACHE_DIR sets the "
        "default)",
    )
    add(g, "--device", default="auto", help="cpu, cuda, cuda:N or auto (GPU if present)")
    add(
        g,
        "--threads",
        type=WORKERS,
        default=1,
        help="torch intra-op threads on CPU (the "
        "small per-step ops of lattice passes run fastest single-threaded)",
    )
    add(g, "--quiet", action="store_true", help="no progress bars")
    add(g, "--debug", action="store_true", help="show tracebacks on errors")


def task(p, renamed: bool = False, on_run: bool = False) -> None:
    """TASK; ``on_run``: a command on a run, where the run directory may give it instead."""
    p.add_argument(
        "task",
        nargs="?",
        metavar="TASK",
        help="task name (`nfst tasks`), "
        + ("optional with the --run-dir of a recorded run" if on_run else "required"),
    )
    if renamed:  # compile and stats took --task before
        p.add_argument("--task", dest="task_option", action=Renamed)


def data(p) -> None:
    add(p, "--processes", type=WORKERS, default=2, help="parallel compile processes")
    add(
        p,
        "--set",
        dest="task_settings",
        metavar="KEY=VALUE",
        action=Setting,
        append=True,
        default=[],
        help="a task setting, e.g. --set train_size=500 (repeatable; docs/tasks.md)",
    )


def split(p) -> None:
    task(p, renamed=True)
    add(p, "--split", default="train", help="data split")
    add(p, "--limit", type=COUNT, help="use at most this many pairs (seeded sample)")
    data(p)


def options(p) -> None:
    add(p, "--preset", default="small", choices=list(PRESETS), help="whose values to list")


def stats(p) -> None:
    split(p)
    add(p, "--json", action="store_true", help="also print the figures as JSON")


def bench(p) -> None:
    p.add_argument(
        "name",
        choices=sorted(BENCHMARKS),
        help="; ".join(f"{k}: {v[0]}" for k, v in sorted(BENCHMARKS.items())),
    )
    add(
        p,
        "--lattices",
        type=COUNT,
        help="number of lattices (backward, compile, step, rdp, estimates)",
    )
    add(
        p,
        "--run-dir",
        metavar="DIR",
        help="trained cipher run to use (abstract; default "
        "runs/cipher-small-0, trained there if missing)",
    )


def report(p) -> None:
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_DIR",
        help="run directories to merge, a column each: one per task, or several "
        "of one task (named by directory and the settings that differ)",
    )
    add(p, "--out", metavar="DIR", default="report", help="output folder")


def compare(p) -> None:
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_DIR",
        help="two or more run directories (their results.json, or their finished evaluate stage)",
    )
    add(
        p,
        "--json",
        action="store_true",
        help="print the comparison as one JSON object instead of tables",
    )
