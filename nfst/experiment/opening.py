"""The run a command works on, from what its command line asks for (a :class:`RunRequest`): the
run its directory records, with the recorded settings; a new one (``nfst run``, a stage command
given ``--new``); a new one made from another run's frozen scorer (``nfst run --from RUN``);
or the recorded one with its samplers' budget raised (``nfst run --continue``;
``nfst.experiment.branch``)."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import NfstError, RunConfigError
from .branch import branch_config, branch_dir, raise_budget, trains_scorer
from .config import DEFAULT_SAMPLERS, RunConfig
from .options import Assignment, Option, apply_overrides, option_value
from .run import Run
from .rundir import recorded_where


@dataclass(frozen=True)
class RunRequest:
    """What a command line asks of a run (``nfst.cli`` builds it once, from the parsed
    arguments): its settings, which of them were given (``given``: on the command line or in
    ``--config``; a recorded run keeps its own where not), and where and how it runs.
    Commands without a flag take its default."""

    command: str
    """The ``nfst`` command, named in messages."""
    given: frozenset[str] = frozenset()
    """The names of the fields below given on the command line or in ``--config``."""
    task: Optional[str] = None
    preset: str = "small"
    seed: int = 0
    seeds: int = 1
    samplers: tuple[str, ...] = DEFAULT_SAMPLERS
    overrides: tuple[Option, ...] = ()
    """``--option`` settings, read once (``nfst.experiment.options.parse_option``)."""
    task_settings: tuple[Assignment, ...] = ()
    """``--set`` settings: the task checks them when it is made."""
    run_dir: Optional[str] = None
    from_run: Optional[str] = None
    """``--from RUN``: a new run on RUN's frozen scorer."""
    extend: bool = False
    """``--continue``: the recorded run, trained on to a larger budget."""
    new: Optional[bool] = None
    """``--new``: a stage command may start the run; None: the command has no such flag."""
    data_dir: Optional[str] = None
    cache_dir: Optional[str] = None
    device: str = "auto"
    processes: int = 2
    jobs: Optional[int] = 1
    """Samplers trained at once; None: the cores available."""
    threads: int = 1
    quiet: bool = False

    def settings(self) -> dict:
        """The task settings (``--set``) as keyword arguments of the task."""
        return {a.key: a.value for a in self.task_settings}


def open_run(o: RunRequest, sampler: Optional[str] = None) -> Run:
    """The run that the run directory records, with its recorded settings, reading its data
    where it last did (``where.json``) unless ``--data-dir`` or ``--cache-dir`` is given: TASK
    may be left out. A run setting given (``o.given``) must agree with the record. The
    samplers and the training seeds are not settings: those given replace the recorded ones
    (``nfst evaluate --samplers a,b`` compares exactly those) and ``sampler`` (``nfst
    train-sampler``'s) joins them. A new run where none is recorded:
    for ``nfst run`` and a stage command given ``--new``; other stage commands refuse, rather
    than start a run in a mistyped directory. ``nfst run --from RUN``: where none is recorded,
    a run made from RUN (:func:`~.branch.branch_config`); ``--continue``: the recorded run
    with the budget given (:func:`~.branch.raise_budget`)."""
    run_dir = _run_dir(o)
    if o.extend:
        if (run_dir / "config.json").exists():  # what else is given, checked first
            open_run(dataclasses.replace(o, extend=False, overrides=())).check_models()
        raise_budget(run_dir, o.overrides)
    if not (run_dir / "config.json").exists():
        return _new_run(o, run_dir, sampler)
    given = o.given
    recorded = RunConfig.recorded(run_dir)
    if o.task is not None and o.task != recorded.task:  # before the task reads its data
        raise RunConfigError(
            f"{run_dir} records a run of the task {recorded.task}, not {o.task}",
            f"give the task {recorded.task} (or none) to "
            "continue that run, or another --run-dir for a new one",
        )
    samplers = tuple(o.samplers) if "samplers" in given else recorded.samplers
    config = dataclasses.replace(
        recorded,
        samplers=samplers + ((sampler,) if sampler not in (None, *samplers) else ()),
        seeds=o.seeds if "seeds" in given else recorded.seeds,
    )
    run = Run(config, run_dir, **(recorded_where(run_dir) | _where_given(o)))
    _check_given(o, run)
    if sampler is not None:
        run.run_dir.join(sampler)
    return run


def _where_given(o: RunRequest) -> dict:
    """:func:`run_kwargs`, less the data and cache directories where not given: a recorded
    run's are used instead."""
    return {
        k: v for k, v in run_kwargs(o).items() if k not in ("data_dir", "cache_dir") or k in o.given
    }


def _run_dir(o: RunRequest) -> Path:
    """``--run-dir``, else with ``--from`` a directory beside that run's
    (:func:`~.branch.branch_dir`), else the default directory of the task, preset and seed
    given."""
    if o.run_dir:
        return Path(o.run_dir)
    if o.from_run:
        return branch_dir(o.from_run, o.overrides, o.seed if "seed" in o.given else None)
    if o.task is None:
        raise NfstError(
            f"{o.command}: the following arguments are required: TASK or --run-dir",
            f"--run-dir DIR continues the run recorded there; see `nfst {o.command} --help`",
        )
    return RunConfig(task=o.task, preset=o.preset, seed=o.seed).default_dir()


def _new_run(o: RunRequest, run_dir: Path, sampler: Optional[str]) -> Run:
    """A run of the settings given, in ``run_dir`` (which records none), for ``nfst run`` and
    a stage command given ``--new``; ``sampler``: train-sampler's, the run's one sampler;
    ``nfst run --from RUN``: a run made from RUN, whose task and settings a TASK or a setting
    given must agree with."""
    may_start = o.command == "run" or bool(o.new)
    if o.from_run:
        given = o.given
        config = branch_config(
            o.from_run,
            o.overrides,
            o.samplers if "samplers" in given else None,
            o.seeds if "seeds" in given else None,
            o.seed if "seed" in given else None,
        )
        if o.task is not None and o.task != config.task:
            raise RunConfigError(
                f"--from {o.from_run} is a run of the task {config.task}, not {o.task}",
                "give its task (or none)",
            )
        run = Run(config, run_dir, **(recorded_where(o.from_run) | _where_given(o)))
        _check_given(o, run)
        return run
    if o.task is not None:
        config = RunConfig(
            task=o.task,
            preset=o.preset,
            seed=o.seed,
            samplers=(sampler,) if sampler else o.samplers,
            seeds=o.seeds,
            task_settings=o.settings(),
            overrides=o.overrides,
        )
        run = Run(config, run_dir, **run_kwargs(o))  # the settings given are checked first
        if may_start:
            if sampler is not None:  # one process that adds it beside others at once
                run.run_dir.join(sampler)
            return run
    elif may_start:
        raise RunConfigError(
            f"{run_dir}: no run recorded there (no config.json) to take the task from",
            f"give the task: `nfst {o.command} TASK --run-dir "
            f"{run_dir}" + (" --new`" if o.new is not None else "`"),
        )
    task = o.task or "TASK"
    raise RunConfigError(
        f"{run_dir}: no run recorded there (no config.json)",
        f"start one with `nfst run {task} --run-dir {run_dir}`"
        + (
            (", or give --new" if o.task else ", or give TASK and --new")
            if o.new is not None
            else f" (stage by stage: `nfst train-scorer {task} --run-dir {run_dir} --new`)"
        ),
    )


def _check_given(o: RunRequest, run: Run) -> None:
    """Refuse run settings given in ``o`` (but the task) that differ from those ``run``
    records, and a ``--from`` that is not the run it was made from."""
    given, differ = o.given, []  # (recorded, given)
    base = o.from_run
    if base and str(Path(base).resolve()) != run.config.from_run:
        differ.append(
            (
                f"--from {run.config.from_run}" if run.config.from_run else "a scorer of its own",
                f"--from {base}",
            )
        )
    for flag, name in (("--preset", "preset"), ("--seed", "seed")):
        if name in given and getattr(o, name) != getattr(run.config, name):
            differ.append((f"{flag} {getattr(run.config, name)}", f"{flag} {getattr(o, name)}"))
    changed = [
        option
        for option in (o.overrides if "overrides" in given else ())
        if apply_overrides(copy.deepcopy(run.preset), [option]) != run.preset
    ]
    differ += [
        (f"{option.key}={option_value(run.preset, option.key)!r}", f"--option {option}")
        for option in changed
    ]
    for item in o.task_settings if "task_settings" in given else ():
        if (
            type(run.task)(run.task.settings, **{item.key: item.value}).settings
            != run.task.settings
        ):
            differ.append((f"{item.key}={getattr(run.task.settings, item.key)!r}", f"--set {item}"))
    if differ:
        options = [f"--option {option}" for option in changed]
        on_scorer = len(changed) == len(differ) and not any(
            trains_scorer(option.key) for option in changed
        )
        raise RunConfigError(
            f"{run.dir} records a run with {', '.join(r for r, _ in differ)}, "
            f"not {', '.join(g for _, g in differ)}",
            "drop the flag to continue that run, or give another --run-dir "
            "for a new one"
            + (
                f" (on this run's scorer: `nfst run --from "
                f"{run.dir} --run-dir NEW {' '.join(options)}`)"
                if on_scorer
                else ""
            ),
        )


def run_kwargs(o: RunRequest) -> dict:
    """How a command's runs read data, where they run and how they report (not settings):
    keyword arguments of :class:`~.run.Run`."""
    return dict(
        data_dir=o.data_dir,
        cache_dir=o.cache_dir,
        device=o.device,
        processes=o.processes,
        jobs=_jobs(o),
        quiet=o.quiet,
    )


def _jobs(o: RunRequest) -> int:
    """``--jobs``: by default the cores available (1 for commands without the flag)."""
    from .jobs import available_cores

    jobs = o.jobs
    if jobs is None:
        return available_cores()
    if jobs < 1:
        raise RunConfigError(
            f"--jobs {jobs}: at least one job is needed",
            "e.g. --jobs 2 (the default: the cores available)",
        )
    return jobs
