"""What each ``nfst`` command does (``nfst.cli`` only parses the command line and calls these).

Every command is a function of the parsed options (an ``argparse.Namespace``: one attribute per
flag, ``--run-dir`` as ``run_dir``) that prints what the command prints. :func:`execute` runs
one in the runtime every command shares.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from pathlib import Path
from typing import Callable, Optional

from ..errors import NfstError, RunConfigError
from .config import (DEFAULT_SAMPLERS, RunConfig, apply_overrides, describe_options,
                     option_value, parse_assignment, parse_settings)
from .run import Run
from .rundir import recorded_where, sampler_key


def execute(command: Callable, options) -> None:
    """``command(options)`` with torch's thread count set, freed memory kept for reuse
    (``nfst.runtime.memory``), ``options.device`` resolved ("auto": a GPU if there is one;
    under torchrun, this rank's device in the process group) and SIGINT/SIGTERM handled
    gracefully (``nfst.runtime.interrupt``): the one place they are."""
    from ..runtime.devices import init_distributed, resolve_device
    from ..runtime.interrupt import graceful_interrupts
    from ..runtime.memory import keep_freed_memory
    from ..runtime.threads import set_threads
    set_threads(options.threads)
    keep_freed_memory()
    options.device = str(resolve_device(options.device))
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # started by torchrun
        options.device = init_distributed(options.device)
    with graceful_interrupts():
        command(options)


def _task(o):
    from ..tasks import get_task
    return get_task(o.task, **parse_settings(o.task_settings))


def tasks(o) -> None:
    from ..tasks import get_task, task_names
    for name in task_names():
        print(f"{name:10s} splits: {', '.join(get_task(name).splits)}")


def compile_split(o) -> None:
    from ..fst.dataset import compile_dataset
    task = _task(o)
    pairs = task.subset(task.pairs(o.split, o.data_dir), o.limit, f"cli:{o.split}")
    data = compile_dataset(task.mfst(o.data_dir), pairs, cache_dir=o.cache_dir,
                           processes=o.processes, progress=not o.quiet
                           ).require_lattices(f"{o.task}/{o.split}")
    n = len(data.lattices)
    states = sum(lat.num_states for lat in data.lattices) / n
    print(f"{o.task}/{o.split}: {n} lattices compiled ({data.cache_hits} from the cache "
          f"{o.cache_dir}), {len(data.skipped)} pairs skipped, {states:.1f} states on average")


def stats(o) -> None:
    from .stats import format_stats_table, task_stats
    result = task_stats(_task(o), o.split, o.limit, data_dir=o.data_dir, cache_dir=o.cache_dir,
                        processes=o.processes, progress=not o.quiet)
    print(format_stats_table(result))
    if o.json:
        print(json.dumps(result))


def options(o) -> None:
    """Every ``--option`` key of a preset, its value there and its meaning."""
    rows = describe_options(o.preset)
    width = max(len(key) for key, _, _ in rows)
    values = [repr(value) for _, value, _ in rows]
    value_width = max(len(v) for v in values)
    print(f"--option keys of the preset {o.preset!r} (set one with --option KEY=VALUE):")
    for (key, _, meaning), value in zip(rows, values):
        print(f"{key:{width}s}  {value:{value_width}s}  {meaning}".rstrip())


def open_run(o, sampler: Optional[str] = None) -> Run:
    """The run that the run directory records, with its recorded settings, reading its data
    where it last did (``where.json``) unless ``--data-dir`` or ``--cache-dir`` is given: TASK
    may be left out. A run setting given (``o.given``: on the command line or in ``--config``)
    must agree with the record. The samplers and the training seeds are not settings: those
    given replace the recorded ones (``nfst evaluate --samplers a,b`` compares exactly those)
    and ``sampler`` (``nfst train-sampler``'s) joins them. A new run where none is recorded:
    for ``nfst run`` and a stage command given ``--new``; other stage commands refuse, rather
    than start a run in a mistyped directory."""
    run_dir = _run_dir(o)
    if not (run_dir / "config.json").exists():
        return _new_run(o, run_dir, sampler)
    given = getattr(o, "given", set())
    recorded = RunConfig.recorded(run_dir)
    if o.task is not None and o.task != recorded.task:  # before the task reads its data
        raise RunConfigError(f"{run_dir} records a run of the task {recorded.task}, not "
                             f"{o.task}", f"give the task {recorded.task} (or none) to "
                             "continue that run, or another --run-dir for a new one")
    samplers = tuple(o.samplers) if "samplers" in given else recorded.samplers
    config = dataclasses.replace(
        recorded, samplers=samplers + ((sampler,) if sampler not in (None, *samplers) else ()),
        seeds=o.seeds if "seeds" in given else recorded.seeds)
    where = {k: v for k, v in _where(o).items() if k not in ("data_dir", "cache_dir") or
             k in given}
    run = Run(config, run_dir, **(recorded_where(run_dir) | where))
    _check_given(o, run)
    return run


def _run_dir(o) -> Path:
    """``--run-dir``, else the default directory of the task, preset and seed given."""
    if o.run_dir:
        return Path(o.run_dir)
    if o.task is None:
        raise NfstError(f"{o.command}: the following arguments are required: TASK or --run-dir",
                        f"--run-dir DIR continues the run recorded there; see `nfst "
                        f"{o.command} --help`")
    return RunConfig(task=o.task, preset=o.preset, seed=o.seed).default_dir()


def _new_run(o, run_dir: Path, sampler: Optional[str]) -> Run:
    """A run of the settings given, in ``run_dir`` (which records none), for ``nfst run`` and
    a stage command given ``--new``; ``sampler``: train-sampler's, the run's one sampler."""
    may_start = o.command == "run" or getattr(o, "new", False)
    if o.task is not None:
        config = RunConfig(task=o.task, preset=o.preset, seed=o.seed,
                           samplers=(sampler,) if sampler else getattr(o, "samplers",
                                                                       DEFAULT_SAMPLERS),
                           seeds=getattr(o, "seeds", 1),
                           task_settings=parse_settings(o.task_settings),
                           overrides=tuple(o.overrides))
        run = Run(config, run_dir, **_where(o))  # the settings given are checked first
        if may_start:
            return run
    elif may_start:
        raise RunConfigError(f"{run_dir}: no run recorded there (no config.json) to take the "
                             "task from", f"give the task: `nfst {o.command} TASK --run-dir "
                             f"{run_dir}" + (" --new`" if "new" in o else "`"))
    task = o.task or "TASK"
    raise RunConfigError(f"{run_dir}: no run recorded there (no config.json)",
                         f"start one with `nfst run {task} --run-dir {run_dir}`" + (
                             (", or give --new" if o.task else ", or give TASK and --new")
                             if "new" in o else
                             f" (stage by stage: `nfst train-scorer {task} --run-dir "
                             f"{run_dir} --new`)"))


def _check_given(o, run: Run) -> None:
    """Refuse run settings given in ``o`` (but the task) that differ from those ``run``
    records."""
    given, differ = getattr(o, "given", set()), []  # (recorded, given)
    for flag, name in (("--preset", "preset"), ("--seed", "seed")):
        if name in given and getattr(o, name) != getattr(run.config, name):
            differ.append((f"{flag} {getattr(run.config, name)}", f"{flag} {getattr(o, name)}"))
    for item in o.overrides if "overrides" in given else ():
        key = parse_assignment(item)[0]
        if apply_overrides(copy.deepcopy(run.preset), [item]) != run.preset:
            differ.append((f"{key}={option_value(run.preset, key)!r}", f"--option {item}"))
    for item in o.task_settings if "task_settings" in given else ():
        key, value = parse_assignment(item, "--set")
        if type(run.task)(run.task.settings, **{key: value}).settings != run.task.settings:
            differ.append((f"{key}={getattr(run.task.settings, key)!r}", f"--set {item}"))
    if differ:
        raise RunConfigError(f"{run.dir} records a run with {', '.join(r for r, _ in differ)}, "
                             f"not {', '.join(g for _, g in differ)}",
                             "drop the flag to continue that run, or give another --run-dir "
                             "for a new one")


def _where(o) -> dict:
    """How a command's runs read data, where they run and how they report (not settings)."""
    return dict(data_dir=o.data_dir, cache_dir=o.cache_dir, device=o.device,
                processes=o.processes, jobs=_jobs(o), quiet=o.quiet)


def _jobs(o) -> int:
    """``--jobs``: by default the cores available (1 for commands without the flag)."""
    from .jobs import available_cores
    jobs = getattr(o, "jobs", 1)
    if jobs is None:
        return available_cores()
    if jobs < 1:
        raise RunConfigError(f"--jobs {jobs}: at least one job is needed",
                             "e.g. --jobs 2 (the default: the cores available)")
    return jobs


def _say(run: Run, *lines: str) -> None:
    """Print what a command did, once: under torchrun every rank runs it, rank 0 speaks."""
    if run.rank == 0:
        print("\n".join(lines))


def run(o) -> None:
    the_run = open_run(o)
    report = the_run.run()
    _say(the_run, f"report: {report}")


def reproduce(o) -> None:
    """Each task's run at the preset (resuming what is done), then one merged report."""
    from .report import write_report
    tasks = [t.strip() for t in o.tasks.split(",") if t.strip()]
    if not tasks:
        raise RunConfigError("--tasks is empty", "e.g. --tasks tr,scan,cipher")
    runs = []
    for task in tasks:  # every name checked before the first run starts
        config = RunConfig(task=task, preset=o.preset, seed=o.seed, seeds=o.seeds,
                           task_settings=parse_settings(o.task_settings),
                           overrides=tuple(o.overrides))
        runs.append(Run(config, Path(o.runs_dir) / f"{task}-{o.preset}-{o.seed}", **_where(o)))
    for run in runs:
        print(f"{run.config.task}: {run.run()}", flush=True)
    out = o.out or Path(o.runs_dir) / f"reproduce-{o.preset}-{o.seed}"
    print(f"report: {write_report([run.dir for run in runs], out)}")


def train_scorer(o) -> None:
    """The scorer, trained or reused; the samplers given are recorded for the later stages."""
    run = open_run(o)
    run.scorer()
    run.run_dir.claim()  # records --samplers where the scorer was already trained
    _say(run, f"scorer: {run.dir / 'scorer.pt'}")


def train_sampler(o) -> None:
    """The sampler ``--sampler`` of every training seed of the run, trained or reused, and
    recorded among the run's samplers (so the later stages compare it); no other sampler
    (but its teacher, which its training needs)."""
    run = open_run(o, sampler=o.sampler)
    for seed in range(run.config.seeds):
        run.train_sampler(o.sampler, seed)
    run.run_dir.claim()  # records the sampler where it was already trained
    _say(run, *(f"sampler: {run.dir / 'samplers' / sampler_key(o.sampler, s)}.pt"
                for s in range(run.config.seeds)))


def evaluate(o) -> None:
    from ..evaluate.samplers import format_table
    run = open_run(o)
    _say(run, format_table(run.evaluation()), f"written: {run.dir / 'stages' / 'evaluate.json'}")


def smc(o) -> None:
    from ..evaluate.smc import format_table
    run = open_run(o)
    result = run.smoothing()
    _say(run, f"{result['pairs']} test pairs, proposal {result['sampler']}",
         *(format_table(result, metric) for metric in ("offset_kl", "dedup_ess", "log_z_var")),
         f"written: {run.dir / 'stages' / 'smc.json'}")


def report(o) -> None:
    from .report import write_report
    print(f"report: {write_report(o.runs, o.out)}")


def compare(o) -> None:
    """Each sampler's paired gaps between runs that share a frozen scorer (``--json``: one
    JSON object); only within-run gaps for runs that do not (``report.between``)."""
    from .report import load_runs
    from .report.between import compare as compare_runs, format_text
    from .report.labels import named
    if len(o.runs) < 2:
        raise NfstError("compare needs two run directories or more",
                        f"give another run to compare with, or `nfst report {o.runs[0]}` "
                        "for the run's own comparison of its samplers")
    result = compare_runs(named(load_runs(o.runs)))
    print(json.dumps(result, indent=1) if o.json else format_text(result))


def sample(o) -> None:
    from .sample import export_samples, sample_pair
    if (o.split is None) != (o.out is None):
        raise NfstError("--split and --out go together", "give both, e.g. --split test "
                        "--out samples.jsonl, or neither and one pair with --x and --y")
    if o.split is not None:
        run = open_run(o)
        pairs = export_samples(run, o.sampler, o.split, o.out, o.k)
        _say(run, f"{pairs} {o.split} pairs, {o.k} proposals each", f"written: {o.out}")
        return
    for flag, text in (("--x", o.x), ("--y", o.y)):
        if text is None:
            raise NfstError(f"{flag} is missing", "give one pair with --x and --y, or a "
                            "whole split with --split SPLIT --out FILE.jsonl")
        if not text.split():
            raise NfstError(f"{flag} is empty", f"give the string as symbols separated by "
                                                f"spaces, e.g. {flag} 'a b c'")
    print(sample_pair(open_run(o), o.sampler, o.x.split(), o.y.split(), o.k, dot=o.dot,
                      png=o.png))
