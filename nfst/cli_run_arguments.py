"""The arguments of the ``nfst`` commands on a run (``run``, ``reproduce``, ``train-scorer``,
``train-sampler``, ``evaluate``, ``smc``, ``sample``): where the run is, its preset and seed, its
samplers and their training seeds, its ``--option`` settings (the other commands' arguments,
and the pieces all are built from: ``nfst.cli_arguments``).
"""

from __future__ import annotations

import argparse

from .cli_arguments import COUNT, SEED, Renamed, Setting, add, data, task
from .experiment.config import DEFAULT_SAMPLERS, check_samplers
from .experiment.presets import PRESETS
from .models.samplers import SAMPLERS


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
