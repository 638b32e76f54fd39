"""The arguments of each ``nfst`` command, in groups that commands share (``nfst.cli`` builds
its parsers from these).

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
from .experiment.config import DEFAULT_SAMPLERS, check_samplers
from .experiment.presets import PRESETS
from .models.samplers import SAMPLERS

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


def sampler_list(text: str) -> tuple[str, ...]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:  # a run of no samplers would train its scorer, then have nothing to do
        raise argparse.ArgumentTypeError("expected at least one sampler, e.g. swa,swp-prefix")
    return check_samplers(names)


def run(p, samplers: bool = True, new: bool = False, old_out: bool = True) -> None:
    """The options of a command on a run; ``new``: a stage command that may start the run;
    ``old_out``: --out still names the run directory (nfst sample's --out is its file)."""
    task(p, on_run=True)
    add(
        p,
        "--preset",
        default="small",
        choices=list(PRESETS),
        action=Setting,
        help="training sizes and hyperparameters (paper: 003 Table 3's, with the "
        "trigram-taught scorer of every preset; large: samplers trained until they stop "
        "improving; tiny: the whole pipeline in under a minute, a smoke test)",
    )
    add(
        p,
        "--seed",
        type=SEED,
        default=0,
        action=Setting,
        help="seeds data subsets, models and sampling",
    )
    add(
        p,
        "--run-dir",
        metavar="DIR",
        help="run directory (default: runs/TASK-PRESET-SEED); a "
        "command on a run recorded there takes the task, settings, samplers and data directory "
        "from it, and refuses a setting given that differs",
    )
    if old_out:
        p.add_argument("--out", dest="run_dir", action=Renamed)
    if new:
        add(
            p,
            "--new",
            action="store_true",
            help="start the run if the run directory "
            "records none (without it, a stage command continues a recorded run only)",
        )
    if samplers:
        add(
            p,
            "--samplers",
            default=",".join(DEFAULT_SAMPLERS),
            type=sampler_list,
            action=Setting,
            help=f"comma-separated samplers that the run trains and compares (a recorded run's "
            f"unless given), from: {', '.join(SAMPLERS)}",
        )
    data(p)
    add(
        p,
        "--option",
        dest="overrides",
        metavar="KEY=VALUE",
        action=Setting,
        append=True,
        default=[],
        help="a preset setting, dotted, e.g. --option sampler.steps=100 (repeatable; "
        "`nfst options` lists every key with its value and meaning)",
    )


def jobs(p) -> None:
    add(
        p,
        "--jobs",
        type=int,
        help="samplers trained at once, each in its own process (the "
        "same figures as one after another; default: the cores available)",
    )
    seeds(p)


def seeds(p) -> None:
    add(
        p,
        "--seeds",
        type=COUNT,
        default=1,
        action=Setting,
        help="train each sampler this many times, from training seed SEED and seeds hashed "
        "from (SEED, j), against the one frozen scorer; figures are means ± SE over "
        "seeds and pairs",
    )


def options(p) -> None:
    add(p, "--preset", default="small", choices=list(PRESETS), help="whose values to list")


def train_scorer(p) -> None:
    run(p, new=True)


def run_all(p) -> None:
    run(p)
    jobs(p)
    g = p.add_mutually_exclusive_group()
    add(
        g,
        "--from",
        dest="from_run",
        metavar="RUN",
        help="a new run on RUN's task, data, "
        "settings and frozen scorer (copied, never trained), with the --option settings "
        "given after RUN's (not the scorer's), and --seed if given: trains and compares "
        "samplers only (default --run-dir: beside RUN, named after it and the options)",
    )
    add(
        g,
        "--continue",
        dest="extend",
        action="store_true",
        help="train the run's samplers "
        "on from their checkpoints to a larger budget, given with --option sampler.steps=N "
        "or sampler.patience=N (recorded in place of the run's)",
    )


def reproduce(p) -> None:
    add(
        p,
        "--preset",
        default="small",
        choices=list(PRESETS),
        help="training sizes and hyperparameters of every task's run",
    )
    add(p, "--tasks", default="tr,scan,cipher", help="comma-separated tasks to run")
    add(p, "--seed", type=SEED, default=0, help="seeds data subsets, models and sampling")
    add(
        p,
        "--runs-dir",
        metavar="DIR",
        default="runs",
        help="where the runs go (one directory per task: TASK-PRESET-SEED)",
    )
    add(
        p,
        "--out",
        metavar="DIR",
        help="the merged report's folder (default: RUNS_DIR/reproduce-PRESET-SEED)",
    )
    data(p)
    add(
        p,
        "--option",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a preset setting for every task's run (repeatable; `nfst options`)",
    )
    jobs(p)


def sampler(p, new: bool = False, old_out: bool = True, **kw) -> None:
    run(p, samplers=False, new=new, old_out=old_out)
    add(
        p,
        "--sampler",
        choices=list(SAMPLERS),
        metavar="NAME",
        help=f"which sampler: {', '.join(SAMPLERS)}",
        **kw,
    )


def train_sampler(p) -> None:
    sampler(p, new=True, required=True)
    seeds(p)
    add(
        p,
        "--training-seed",
        type=SEED,
        metavar="S",
        help="train only the S-th training "
        "run (0 to SEEDS − 1; the default: every one): one (sampler, seed) per process, e.g. "
        "per task of a cluster's array job, several at once into one run directory",
    )


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


def sample(p) -> None:
    sampler(p, default="swp-prefix", old_out=False)
    add(p, "--x", help="input string, symbols separated by spaces")
    add(p, "--y", help="output string, symbols separated by spaces")
    add(
        p,
        "--split",
        choices=("train", "dev", "test"),
        help="instead of --x and --y: every "
        "pair of this split, written to --out as JSON lines (marks, log q, log p̃ of each)",
    )
    add(p, "--out", metavar="FILE", help="the JSON-lines file of --split")
    add(p, "-k", type=COUNT, default=8, help="number of samples (per pair)")
    add(p, "--dot", metavar="FILE", help="write the lattice as Graphviz DOT to this file")
    add(
        p,
        "--png",
        metavar="FILE",
        help="also render it to PNG (Graphviz's `dot` if installed, else networkx and matplotlib)",
    )
