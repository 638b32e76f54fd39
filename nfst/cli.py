"""The ``nfst`` command line. Each subcommand is a thin layer over a library function.

Settings come, in increasing priority, from the defaults, a TOML file (``--config FILE``, with a
table per subcommand, e.g. ``[stats]``, and shared keys at the top level) and the command line.
Errors on bad input print one line and a hint; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tomllib
from typing import Callable, Optional

from .errors import NfstError

DEFAULT_CACHE = os.environ.get("NFST_CACHE_DIR", ".nfst-cache")


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("common options")
    g.add_argument("--config", metavar="FILE", help="TOML file of settings (CLI flags override it)")
    g.add_argument("--data-dir", help="folder with the task data (default: $NFST_DATA_DIR)")
    g.add_argument("--cache-dir", default=DEFAULT_CACHE,
                   help="on-disk lattice cache (default: $NFST_CACHE_DIR or .nfst-cache)")
    g.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (GPU if present)")
    g.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads on CPU (default 1: the small per-step ops of "
                        "lattice passes run fastest single-threaded)")
    g.add_argument("--quiet", action="store_true", help="no progress bars")
    g.add_argument("--debug", action="store_true", help="show tracebacks on errors")


def _task_args(p: argparse.ArgumentParser, split: str = "train") -> None:
    p.add_argument("--task", default="cipher", help="task name (see `nfst tasks`)")
    p.add_argument("--split", default=split, help="data split")
    p.add_argument("--limit", type=int, help="use at most this many pairs (seeded sample)")
    _data_args(p)


def _data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--processes", type=int, default=2, help="parallel compile processes")
    p.add_argument("--set", dest="task_settings", metavar="KEY=VALUE", action="append",
                   default=[], help="a task setting, e.g. --set train_size=500 (repeatable)")


def _get_task(args):
    from .experiment.config import parse_settings
    from .tasks import get_task
    return get_task(args.task, **parse_settings(args.task_settings))


# -- subcommands ------------------------------------------------------------------------------
def _add_tasks(p):
    pass


def _run_tasks(args):
    from .tasks import get_task, task_names
    for name in task_names():
        task = get_task(name)
        print(f"{name:10s} splits: {', '.join(task.splits)}")


def _add_compile(p):
    _task_args(p)


def _run_compile(args):
    from .fst.dataset import compile_dataset
    task = _get_task(args)
    pairs = task.subset(task.pairs(args.split, args.data_dir), args.limit, f"cli:{args.split}")
    data = compile_dataset(task.mfst(args.data_dir), pairs, cache_dir=args.cache_dir,
                           processes=args.processes, progress=not args.quiet)
    n = len(data.lattices)
    states = sum(lat.num_states for lat in data.lattices) / max(n, 1)
    print(f"{args.task}/{args.split}: {n} lattices compiled ({data.cache_hits} from the cache "
          f"{args.cache_dir}), {len(data.skipped)} pairs skipped, {states:.1f} states on average")


def _add_stats(p):
    _task_args(p)
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")


def _run_stats(args):
    from .experiment.stats import format_stats_table, task_stats
    stats = task_stats(_get_task(args), args.split, args.limit, data_dir=args.data_dir,
                       cache_dir=args.cache_dir, processes=args.processes,
                       progress=not args.quiet)
    print(format_stats_table(stats))
    if args.json:
        print(json.dumps(stats))


def _add_bench(p):
    from .bench import BENCHMARKS
    p.add_argument("name", choices=sorted(BENCHMARKS),
                   help="; ".join(f"{k}: {v[0]}" for k, v in sorted(BENCHMARKS.items())))
    p.add_argument("--lattices", type=int, help="number of lattices (backward, compile, step, rdp, estimates)")
    p.add_argument("--run-dir", help="trained cipher run to use (abstract; default "
                   "runs/cipher-small-0, trained there if missing)")


def _run_bench(args):
    from .bench import run_benchmark
    run_benchmark(args.name, lattices=args.lattices, device=args.device, run_dir=args.run_dir,
                  cache_dir=args.cache_dir)


def _run_args(p: argparse.ArgumentParser, samplers: bool = True) -> None:
    from .experiment.config import DEFAULT_SAMPLERS
    from .experiment.presets import PRESETS
    p.add_argument("task", help="task name (see `nfst tasks`)")
    p.add_argument("--preset", default="small", choices=list(PRESETS),
                   help="training sizes and hyperparameters (paper: 003 Table 3)")
    p.add_argument("--seed", type=int, default=0, help="seeds data subsets, models and sampling")
    p.add_argument("--out", help="run directory (default runs/TASK-PRESET-SEED)")
    if samplers:
        p.add_argument("--samplers", default=",".join(DEFAULT_SAMPLERS),
                       help="comma-separated samplers to train and compare")
    _data_args(p)
    p.add_argument("--option", dest="overrides", metavar="KEY=VALUE", action="append",
                   default=[], help="a preset setting, dotted, e.g. --option sampler.steps=100 "
                                    "or --option scorer.hidden=128 (repeatable)")


def _make_run(args, samplers=None):
    """The run in ``--out`` if it exists (its recorded settings win), else a new one."""
    from .experiment.config import DEFAULT_SAMPLERS, RunConfig, parse_settings
    from .experiment.run import Run
    if args.command != "run" and args.out and os.path.exists(os.path.join(args.out, "config.json")):
        return Run.open(args.out, data_dir=args.data_dir, cache_dir=args.cache_dir,
                        device=args.device, processes=args.processes, quiet=args.quiet)
    if samplers is None:
        samplers = tuple(n.strip() for n in args.samplers.split(",") if n.strip()) \
            if hasattr(args, "samplers") else DEFAULT_SAMPLERS
    config = RunConfig(task=args.task, preset=args.preset, seed=args.seed, samplers=samplers,
                       task_settings=parse_settings(args.task_settings),
                       overrides=tuple(args.overrides))
    return Run(config, args.out, data_dir=args.data_dir, cache_dir=args.cache_dir,
               device=args.device, processes=args.processes, quiet=args.quiet)


def _run_run(args):
    run = _make_run(args)
    report = run.run()
    print(f"report: {report}")


def _add_train_scorer(p):
    _run_args(p, samplers=False)


def _run_train_scorer(args):
    run = _make_run(args)
    run.scorer()
    print(f"scorer: {run.dir / 'scorer.pt'}")


def _add_train_sampler(p):
    _run_args(p, samplers=False)
    from .models.samplers import SAMPLERS
    p.add_argument("--sampler", required=True, choices=list(SAMPLERS), help="which sampler")


def _run_train_sampler(args):
    run = _make_run(args, samplers=(args.sampler,))
    run.sampler(args.sampler)
    print(f"sampler: {run.dir / 'samplers' / (args.sampler + '.pt')}")


def _add_evaluate(p):
    _run_args(p)


def _run_evaluate(args):
    from .evaluate.samplers import format_table
    run = _make_run(args)
    print(format_table(run.evaluation()))
    print(f"written: {run.dir / 'stages' / 'evaluate.json'}")


def _add_smc(p):
    _run_args(p)


def _run_smc(args):
    from .evaluate.smc import format_table
    run = _make_run(args)
    result = run.smoothing()
    print(f"{result['pairs']} test pairs, proposal {result['sampler']}")
    for metric in ("offset_kl", "dedup_ess", "log_z_var"):
        print(format_table(result, metric))
    print(f"written: {run.dir / 'stages' / 'smc.json'}")


def _add_report(p):
    p.add_argument("runs", nargs="+", help="run directories (e.g. one per task) to merge")
    p.add_argument("--out", default="report", help="output folder (default ./report)")


def _run_report(args):
    from .experiment.report import write_report
    print(f"report: {write_report(args.runs, args.out)}")


def _add_sample(p):
    _run_args(p, samplers=False)
    p.add_argument("--sampler", default="swp-prefix", help="which trained sampler to use")
    p.add_argument("--x", required=True, help="input string, symbols separated by spaces")
    p.add_argument("--y", required=True, help="output string, symbols separated by spaces")
    p.add_argument("-k", type=int, default=8, help="number of samples")
    p.add_argument("--dot", help="write the lattice as Graphviz DOT to this file")
    p.add_argument("--png", help="also render it to PNG (Graphviz's `dot` if installed, "
                                   "else networkx and matplotlib)")


def _run_sample(args):
    from .experiment.sample import sample_pair
    for flag, text in (("--x", args.x), ("--y", args.y)):
        if not text.split():
            raise NfstError(f"{flag} is empty", f"give the string as symbols separated by "
                                                f"spaces, e.g. {flag} 'a b c'")
    print(sample_pair(_make_run(args, samplers=(args.sampler,)), args.sampler, args.x.split(),
                      args.y.split(), args.k, dot=args.dot, png=args.png))


COMMANDS: dict[str, tuple[str, Callable, Callable]] = {
    "tasks": ("list the registered tasks", _add_tasks, _run_tasks),
    "compile": ("compile (and cache) the lattices of a task split", _add_compile, _run_compile),
    "stats": ("lattice statistics of a task split beside the paper's", _add_stats, _run_stats),
    "bench": ("run a benchmark; prints one JSON object as its last line", _add_bench, _run_bench),
    "run": ("the whole pipeline for a task: compile, train, evaluate, SMC, report",
            _run_args, _run_run),
    "train-scorer": ("train (or reuse) the frozen LSTM scorer of a run", _add_train_scorer,
                     _run_train_scorer),
    "train-sampler": ("train (or reuse) one sampler of a run", _add_train_sampler,
                      _run_train_sampler),
    "evaluate": ("partial KL, ESS and expected length of a run's samplers", _add_evaluate,
                 _run_evaluate),
    "smc": ("particle smoothing with a run's best sampler: offset KL against M", _add_smc,
            _run_smc),
    "report": ("merge runs into report.md with tables and plots", _add_report, _run_report),
    "sample": ("sample alignments of one pair; draw its lattice", _add_sample, _run_sample),
}


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors as NfstError: one line and a hint, like other bad input."""

    def error(self, message: str):
        command = self.prog.partition(" ")[2]  # "nfst sample" -> "sample"
        raise NfstError(f"{command}: {message}" if command else message,
                        f"see `{self.prog} --help`")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nfst", description="Path inference in neural finite-state transducers.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, add, _) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add(p)
        _common(p)
    return parser


def _config_defaults(path: str, command: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise NfstError(f"cannot read config {path}: {exc}", "check the path and TOML syntax")
    shared = {k.replace("-", "_"): v for k, v in data.items() if not isinstance(v, dict)}
    own = {k.replace("-", "_"): v for k, v in data.get(command, {}).items()}
    return {**shared, **own}


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.config:
        sub = parser._subparsers._group_actions[0].choices[args.command]  # noqa: SLF001
        defaults = _config_defaults(args.config, args.command)
        known = {a.dest for a in sub._actions}  # noqa: SLF001
        unknown = sorted(set(defaults) - known)
        if unknown:
            raise NfstError(f"{args.config}: unknown settings for `nfst {args.command}`: "
                            f"{', '.join(unknown)}", f"see `nfst {args.command} --help`")
        sub.set_defaults(**defaults)
        args = parser.parse_args(argv)
    return args


def main(argv: Optional[list[str]] = None) -> int:
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parse_args(argv)
        logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                            format="%(levelname)s %(name)s: %(message)s")
        from .runtime.threads import set_threads
        set_threads(args.threads)
        from .runtime.devices import init_distributed, resolve_device
        args.device = str(resolve_device(args.device))
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # started by torchrun
            args.device = init_distributed(args.device)
        from .runtime.interrupt import graceful_interrupts
        with graceful_interrupts():
            COMMANDS[args.command][2](args)
        return 0
    except NfstError as exc:
        if debug:
            raise
        print(f"nfst: error: {exc}", file=sys.stderr)
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
