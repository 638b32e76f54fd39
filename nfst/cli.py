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
    p.add_argument("--processes", type=int, default=2, help="parallel compile processes")
    p.add_argument("--set", dest="task_settings", metavar="KEY=VALUE", action="append",
                   default=[], help="a task setting, e.g. --set train_size=500 (repeatable)")


def _settings(pairs: list[str]) -> dict:
    """``["train_size=500", "seed=1"]`` -> ``{"train_size": 500, "seed": 1}``."""
    out = {}
    for item in pairs:
        key, sep, text = item.partition("=")
        if not sep:
            raise NfstError(f"--set {item!r}: expected KEY=VALUE", "e.g. --set train_size=500")
        try:
            out[key.strip()] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = text
    return out


def _get_task(args):
    from .task import get_task
    return get_task(args.task, **_settings(args.task_settings))


# -- subcommands ------------------------------------------------------------------------------
def _add_tasks(p):
    pass


def _run_tasks(args):
    from .task import get_task, task_names
    for name in task_names():
        task = get_task(name)
        print(f"{name:10s} splits: {', '.join(task.splits)}")


def _add_compile(p):
    _task_args(p)


def _run_compile(args):
    from .dataset import compile_dataset
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
    from .stats import format_stats_table, task_stats
    stats = task_stats(_get_task(args), args.split, args.limit, data_dir=args.data_dir,
                       cache_dir=args.cache_dir, processes=args.processes,
                       progress=not args.quiet)
    print(format_stats_table(stats))
    if args.json:
        print(json.dumps(stats))


BENCHMARKS = {
    "backward": ("batched backward pass vs OpenFst shortestdistance", "nfst.bench.backward",
                 "bench_backward"),
    "compile": ("lattice compilation, cold and cached", "nfst.bench.compile", "bench_compile"),
    "step": ("one training step of each sampler", "nfst.bench.step", "bench_step"),
    "smc": ("particle smoothing over cipher test lattices", "nfst.bench.smc", "bench_smc"),
}


def _add_bench(p):
    p.add_argument("name", choices=sorted(BENCHMARKS),
                   help="; ".join(f"{k}: {v[0]}" for k, v in sorted(BENCHMARKS.items())))
    p.add_argument("--lattices", type=int, help="number of lattices (backward, compile)")


def _run_bench(args):
    import importlib
    import inspect
    from .bench.common import emit
    _, module, func = BENCHMARKS[args.name]
    fn = getattr(importlib.import_module(module), func)
    accepted = inspect.signature(fn).parameters
    kwargs = {}
    if args.lattices is not None and "lattices" in accepted:
        kwargs["lattices"] = args.lattices
    if "device" in accepted:
        kwargs["device"] = args.device
    emit(fn(**kwargs))


def _add_demo(p):
    pass


def _run_demo(args):
    from .stats import format_stats_table, task_stats
    stats = task_stats("cipher", "train", 64, cache_dir=args.cache_dir, processes=2,
                       progress=not args.quiet)
    print(format_stats_table(stats))


COMMANDS: dict[str, tuple[str, Callable, Callable]] = {
    "tasks": ("list the registered tasks", _add_tasks, _run_tasks),
    "compile": ("compile (and cache) the lattices of a task split", _add_compile, _run_compile),
    "stats": ("lattice statistics of a task split beside the paper's", _add_stats, _run_stats),
    "bench": ("run a benchmark; prints one JSON object as its last line", _add_bench, _run_bench),
    "demo": ("compile a small cipher sample and print its statistics", _add_demo, _run_demo),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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


def resolve_device(name: str):
    import torch
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise NfstError(f"--device {name}: no CUDA device is available", "use --device cpu")
    return device


def main(argv: Optional[list[str]] = None) -> int:
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parse_args(argv)
        logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                            format="%(levelname)s %(name)s: %(message)s")
        import torch
        torch.set_num_threads(args.threads)
        args.device = str(resolve_device(args.device))
        COMMANDS[args.command][2](args)
        return 0
    except NfstError as exc:
        if debug:
            raise
        print(f"nfst: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nfst: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # an nfst bug, not bad input
        if debug:
            raise
        print(f"nfst: internal error: {type(exc).__name__}: {exc}\n  hint: rerun with --debug "
              "for the traceback, and please report it", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
