"""What each ``nfst`` command does (``nfst.cli`` only parses the command line and calls these).

Every command is a function of what its command line asks of a run (a
:class:`~.opening.RunRequest`) and of the command's own flags as keyword arguments (``--split``
as ``split``), that prints what the command prints. :func:`execute` runs one in the runtime
every command shares.
"""

from __future__ import annotations

import dataclasses
import os
from json import dumps
from pathlib import Path
from typing import Callable, Optional

from ..errors import NfstError, RunConfigError
from .config import RunConfig
from .opening import RunRequest, open_run, run_kwargs
from .options import describe_options
from .run import Run
from .rundir import sampler_key


def execute(command: Callable, request: RunRequest, flags: dict) -> None:
    """``command(request, **flags)`` with torch's thread count set, freed memory kept for reuse
    (``nfst.runtime.memory``), ``request.device`` resolved ("auto": a GPU if there is one;
    under torchrun, this rank's device in the process group) and SIGINT/SIGTERM handled
    gracefully (``nfst.runtime.interrupt``): the one place they are."""
    from ..runtime.devices import init_distributed, resolve_device
    from ..runtime.interrupt import graceful_interrupts
    from ..runtime.memory import keep_freed_memory
    from ..runtime.threads import set_threads

    set_threads(request.threads)
    keep_freed_memory()
    device = str(resolve_device(request.device))
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # started by torchrun
        device = init_distributed(device)
    with graceful_interrupts():
        command(dataclasses.replace(request, device=device), **flags)


def _task(o: RunRequest):
    from ..tasks import get_task

    return get_task(o.task, **o.settings())


def tasks(o: RunRequest) -> None:
    from ..tasks import get_task, task_names

    for name in task_names():
        print(f"{name:10s} splits: {', '.join(get_task(name).splits)}")


def compile_split(o: RunRequest, split: str, limit: Optional[int]) -> None:
    from ..fst.dataset import compile_dataset

    task = _task(o)
    pairs = task.subset(task.pairs(split, o.data_dir), limit, f"cli:{split}")
    data = compile_dataset(
        task.mfst(o.data_dir),
        pairs,
        cache_dir=o.cache_dir,
        processes=o.processes,
        progress=not o.quiet,
    ).require_lattices(f"{o.task}/{split}")
    n = len(data.lattices)
    states = sum(lat.num_states for lat in data.lattices) / n
    print(
        f"{o.task}/{split}: {n} lattices compiled ({data.cache_hits} from the cache "
        f"{o.cache_dir}), {len(data.skipped)} pairs skipped, {states:.1f} states on average"
    )


def stats(o: RunRequest, split: str, limit: Optional[int], json: bool) -> None:
    from .stats import format_stats_table, task_stats

    result = task_stats(
        _task(o),
        split,
        limit,
        data_dir=o.data_dir,
        cache_dir=o.cache_dir,
        processes=o.processes,
        progress=not o.quiet,
    )
    print(format_stats_table(result))
    if json:
        print(dumps(result))


def options(o: RunRequest) -> None:
    """Every ``--option`` key of a preset, its value there and its meaning."""
    rows = describe_options(o.preset)
    width = max(len(key) for key, _, _ in rows)
    values = [repr(value) for _, value, _ in rows]
    value_width = max(len(v) for v in values)
    print(f"--option keys of the preset {o.preset!r} (set one with --option KEY=VALUE):")
    for (key, _, meaning), value in zip(rows, values):
        print(f"{key:{width}s}  {value:{value_width}s}  {meaning}".rstrip())


def _say(run: Run, *lines: str) -> None:
    """Print what a command did, once: under torchrun every rank runs it, rank 0 speaks."""
    if run.rank == 0:
        print("\n".join(lines))


def run(o: RunRequest) -> None:
    the_run = open_run(o)
    report = the_run.run()
    _say(the_run, f"report: {report}")


def reproduce(o: RunRequest, tasks: str, runs_dir: str, out: Optional[str]) -> None:
    """Each task's run at the preset (resuming what is done), then one merged report."""
    from .report import write_report

    tasks = [t.strip() for t in tasks.split(",") if t.strip()]
    if not tasks:
        raise RunConfigError("--tasks is empty", "e.g. --tasks tr,scan,cipher")
    runs = []
    for task in tasks:  # every name checked before the first run starts
        run_dir = Path(runs_dir) / f"{task}-{o.preset}-{o.seed}"
        recorded = (run_dir / "config.json").exists()  # resumed with its own training seeds
        config = RunConfig(
            task=task,
            preset=o.preset,
            seed=o.seed,
            seeds=o.seeds,
            seeding=RunConfig.recorded(run_dir).seeding if recorded else "hashed",
            task_settings=o.settings(),
            overrides=o.overrides,
        )
        runs.append(Run(config, run_dir, **run_kwargs(o)))
    for run in runs:
        print(f"{run.config.task}: {run.run()}", flush=True)
    out = out or Path(runs_dir) / f"reproduce-{o.preset}-{o.seed}"
    print(f"report: {write_report([run.dir for run in runs], out)}")


def train_scorer(o: RunRequest) -> None:
    """The scorer, trained or reused; the samplers given are recorded for the later stages."""
    run = open_run(o)
    run.scorer()
    run.run_dir.claim()  # records --samplers where the scorer was already trained
    _say(run, f"scorer: {run.dir / 'scorer.pt'}")


def train_sampler(o: RunRequest, sampler: str, training_seed: Optional[int]) -> None:
    """The sampler ``--sampler`` of every training seed of the run (``--training-seed S``: of
    seed S alone), trained or reused, and recorded among the run's samplers (so the later
    stages compare it); no other sampler (but its teacher, which its training needs).
    Processes may train samplers of one run at once (``nfst.experiment.rundir``)."""
    run = open_run(o, sampler=sampler)
    seeds = range(run.config.seeds) if training_seed is None else [training_seed]
    if seeds[-1] >= run.config.seeds:
        raise RunConfigError(
            f"--training-seed {training_seed}: the run trains seeds 0 to "
            f"{run.config.seeds - 1} (--seeds {run.config.seeds})",
            f"give --seeds {training_seed + 1} (or more) with it",
        )
    for seed in seeds:
        run.train_sampler(sampler, seed)
    run.run_dir.claim()  # records the sampler where it was already trained
    _say(run, *(f"sampler: {run.dir / 'samplers' / sampler_key(sampler, s)}.pt" for s in seeds))


def evaluate(o: RunRequest) -> None:
    from ..evaluate.samplers import format_table

    run = open_run(o)
    _say(run, format_table(run.evaluation()), f"written: {run.dir / 'stages' / 'evaluate.json'}")


def smc(o: RunRequest) -> None:
    from ..evaluate.smc import format_table

    run = open_run(o)
    result = run.smoothing()
    _say(
        run,
        f"{result['pairs']} test pairs, proposal {result['sampler']}",
        *(format_table(result, metric) for metric in ("offset_kl", "dedup_ess", "log_z_var")),
        f"written: {run.dir / 'stages' / 'smc.json'}",
    )


def report(o: RunRequest, runs: list[str], out: str) -> None:
    from .report import write_report

    print(f"report: {write_report(runs, out)}")


def compare(o: RunRequest, runs: list[str], json: bool) -> None:
    """Each sampler's paired gaps between runs that share a frozen scorer (``--json``: one
    JSON object); only within-run gaps for runs that do not (``report.between``)."""
    from .report import load_runs
    from .report.between import compare as compare_runs
    from .report.between_text import format_text
    from .report.labels import named

    def instead(run: str) -> str:
        return (
            f"give another run to compare with, or `nfst report {run}` for the run's own "
            "comparison of its samplers"
        )

    if len(runs) < 2:
        raise NfstError("compare needs two run directories or more", instead(runs[0]))
    where = [Path(run).resolve() for run in runs]  # other spellings, symbolic links
    for i, path in enumerate(where):
        if path in where[:i]:
            first, again = runs[where.index(path)], runs[i]
            raise NfstError(
                f"compare: {first} is given twice"
                if first == again
                else f"compare: {first} and {again} are the same run",
                instead(first),
            )
    result = compare_runs(named(load_runs(runs)))
    print(dumps(result, indent=1) if json else format_text(result))


def sample(
    o: RunRequest,
    sampler: str,
    x: Optional[str],
    y: Optional[str],
    split: Optional[str],
    out: Optional[str],
    k: int,
    dot: Optional[str],
    png: Optional[str],
) -> None:
    from .sample import export_samples, sample_pair

    if (split is None) != (out is None):
        raise NfstError(
            "--split and --out go together",
            "give both, e.g. --split test "
            "--out samples.jsonl, or neither and one pair with --x and --y",
        )
    if split is not None:
        run = open_run(o)
        pairs = export_samples(run, sampler, split, out, k)
        _say(run, f"{pairs} {split} pairs, {k} proposals each", f"written: {out}")
        return
    for flag, text in (("--x", x), ("--y", y)):
        if text is None:
            raise NfstError(
                f"{flag} is missing",
                "give one pair with --x and --y, or a "
                "whole split with --split SPLIT --out FILE.jsonl",
            )
        if not text.split():
            raise NfstError(
                f"{flag} is empty",
                f"give the string as symbols separated by spaces, e.g. {flag} 'a b c'",
            )
    print(sample_pair(open_run(o), sampler, x.split(), y.split(), k, dot=dot, png=png))
