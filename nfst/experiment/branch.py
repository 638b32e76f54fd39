"""Runs made from recorded runs: a new run on another's task, data and frozen scorer that
trains samplers only (``nfst run --from RUN``: sampler settings compared against one scorer),
and a run whose samplers train on to a larger budget (``nfst run --continue``)."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Optional, Sequence

from ..errors import RunConfigError
from ..runtime import storage
from ..train.checkpoint import BUDGET
from .config import RunConfig, json_default, upgraded
from .options import Option, as_options, merge_overrides, option_value
from .rundir import RunDir, sampler_key

log = logging.getLogger("nfst")

SCORER_SETTINGS = ("scorer", "train_pairs")
"""The preset settings that a run's scorer and n-gram are trained from (beside its task, task
settings and seed): a run made from another keeps them, and that run's scorer."""

CONTINUABLE = tuple(f"sampler.{key}" for key in BUDGET)
"""The settings that ``nfst run --continue`` may raise: the samplers' training budget."""

AFTER_SAMPLERS = ("samplers", "evaluate", "smc")
"""The stages built on the trained samplers, beside each sampler's own (``sampler-KEY``)."""


def trains_scorer(key: str) -> bool:
    """Whether the ``--option`` key ``key`` is one of :data:`SCORER_SETTINGS`."""
    return key.split(".")[0] in SCORER_SETTINGS


def branch_config(
    base_dir: str | Path,
    overrides: Sequence[str | Option] = (),
    samplers: Optional[Sequence[str]] = None,
    seeds: Optional[int] = None,
    seed: Optional[int] = None,
) -> RunConfig:
    """The configuration of a run made from the run recorded in ``base_dir`` (``--from``):
    that run's task with its settings, its preset, seed and options, ``overrides`` after them,
    and ``from_run`` naming it; ``samplers``, ``seeds`` and ``seed``: the new run's (None: the
    base run's; another seed gives the samplers other training, evaluation and SMC streams,
    on the same pairs and scorer). Its training seeds are hashed, whatever the base run's.
    An error, before any work, if ``overrides`` change what the base run's scorer was trained
    from (:data:`SCORER_SETTINGS`), or if it has no trained scorer to take."""
    if not (Path(base_dir) / "config.json").exists():
        raise RunConfigError(
            f"--from {base_dir}: no run recorded there (no config.json)",
            "give the directory of a run whose scorer is trained",
        )
    base, overrides = RunConfig.recorded(base_dir), as_options(overrides)
    config = dataclasses.replace(
        base,
        overrides=merge_overrides(base.overrides, overrides),
        samplers=tuple(samplers or base.samplers),
        seeds=seeds or base.seeds,
        seed=base.seed if seed is None else seed,
        seeding="hashed",
        from_run=str(Path(base_dir).resolve()),
    )
    old, new = base.resolved_preset(), config.resolved_preset()
    changed = [
        option.text
        for option in overrides
        if trains_scorer(option.key)
        and option_value(old, option.key) != option_value(new, option.key)
    ]
    if changed:
        raise RunConfigError(
            f"--from {base_dir} takes its scorer, which --option "
            f"{', --option '.join(changed)} would change",
            "change the samplers' (sampler.*) or the evaluation's (evaluate.*) "
            "settings; another scorer needs a new run: `nfst run TASK --run-dir "
            "DIR --option ...`",
        )
    _say_pinned(base_dir, base, overrides)
    models = ("ngram",) + (("scorer",) if old.scorer.kind == "lstm" else ())
    missing = [m for m in models if not (Path(base_dir) / f"{m}.pt").exists()]
    if missing:
        raise RunConfigError(
            f"--from {base_dir}: no trained {' or '.join(missing)} there",
            f"train it first: `nfst train-scorer --run-dir {base_dir}`",
        )
    return config


def _say_pinned(base_dir, base: RunConfig, overrides: Sequence[Option]) -> None:
    """Log the settings that a run made from ``base_dir`` keeps from it though today's preset
    differs (a default changed since it was recorded: ``config.upgraded`` pins them), unless
    ``overrides`` set them: a new run would otherwise take old defaults unawares."""
    raw = json.loads((Path(base_dir) / "config.json").read_text())["run"].get("overrides", [])
    chosen = {option.key for option in as_options(raw) + tuple(overrides)}
    pinned = [o.text for o in as_options(base.overrides) if o.key not in chosen]
    if pinned:
        log.info(
            "--from %s keeps what it was made with where today's defaults differ: --option %s "
            "(another --option KEY=VALUE changes one)",
            base_dir,
            ", --option ".join(pinned),
        )


def branch_dir(
    base_dir: str | Path, overrides: Sequence[Option], seed: Optional[int] = None
) -> Path:
    """Where a run made from ``base_dir`` goes when no ``--run-dir`` is given: beside it,
    named after it and the settings it changes (``runs/cipher-small-0+sampler.lr=0.01``,
    ``runs/cipher-small-0+seed=100``)."""
    base = Path(base_dir)
    changes = ",".join(
        [item.text.replace("/", "_").replace(" ", "") for item in overrides]
        + ([] if seed is None else [f"seed={seed}"])
    )
    return base.parent / f"{base.name}+{changes or 'from'}"


def adopt(run_dir: RunDir, base_dir: Path, name: str) -> None:
    """Copy the frozen model ``name`` (``ngram``, ``scorer``) and its stage record from the run
    in ``base_dir`` into ``run_dir``, whose run was made from it (``--from``), rather than
    train it. A copy, not a link: the new run stays whole if the base run moves or goes."""
    model, stage = base_dir / f"{name}.pt", base_dir / "stages" / f"{name}.json"
    if not model.exists() or not stage.exists():
        raise RunConfigError(
            f"{run_dir.path} takes its {name} from {base_dir}, which has none trained",
            f"train it there: `nfst train-scorer --run-dir {base_dir}`",
        )
    if run_dir.rank == 0:  # the model last: its file says the stage is done
        storage.write_atomically(run_dir.stage_file(name), stage.read_bytes())
        storage.write_atomically(run_dir.path / f"{name}.pt", model.read_bytes())
    run_dir.barrier()


def raise_budget(run_dir: str | Path, overrides: Sequence[str | Option]) -> None:
    """Record a larger budget for the samplers of the run in ``run_dir`` (``overrides`` of
    :data:`CONTINUABLE`, e.g. ``sampler.steps=400``; ``nfst run --continue``), and forget
    what their training made (each sampler's stage record, and :data:`AFTER_SAMPLERS`,
    ``results.json``), so that the run's next stages train each sampler on from its
    checkpoint, its best parameters and early stopping included, to the new budget. An
    error, before any change, for another setting or a budget lowered; nothing changes
    where the budget given is the recorded one."""
    run_dir, overrides = Path(run_dir), as_options(overrides)
    if not (run_dir / "config.json").exists():
        raise RunConfigError(
            f"{run_dir}: no run recorded there to continue",
            f"start one: `nfst run TASK --run-dir {run_dir}`",
        )
    for option in overrides:
        if option.key not in CONTINUABLE:
            raise RunConfigError(
                f"--continue raises the samplers' budget "
                f"({', '.join(CONTINUABLE)}), not --option {option}",
                f"other settings need a new run on this one's scorer: `nfst "
                f"run --from {run_dir} --run-dir NEW --option {option}`",
            )
    recorded = RunConfig.recorded(run_dir)
    config = dataclasses.replace(recorded, overrides=merge_overrides(recorded.overrides, overrides))
    old, new = recorded.resolved_preset(), config.resolved_preset()
    budget = ", ".join(f"{key}={option_value(old, key)}" for key in CONTINUABLE)
    larger = (
        f"give a larger budget than the run's ({budget}): e.g. --option "
        f"sampler.steps={2 * old.sampler.steps}"
    )
    if not overrides:
        raise RunConfigError("--continue trains on to a larger budget, and none is given", larger)
    for key in CONTINUABLE:
        if option_value(new, key) < option_value(old, key):
            raise RunConfigError(
                f"--continue raises the budget: {key}={option_value(new, key)} "
                f"is below the run's {option_value(old, key)}",
                f"a smaller budget needs a new run: `nfst run --from {run_dir} "
                f"--run-dir NEW --option {key}=...`",
            )
    stages = [
        run_dir / "stages" / f"sampler-{sampler_key(name, seed)}.json"
        for name in recorded.samplers
        for seed in range(recorded.seeds)
    ]
    if new == old:  # an interrupted --continue resumes; one that finished has nothing to do
        if all(stage.exists() for stage in stages):
            raise RunConfigError(
                f"--continue: the samplers of {run_dir} are trained to this "
                f"budget ({budget}) already",
                larger,
            )
        return
    _check_patience(run_dir, stages, old.sampler.patience, new.sampler.patience)
    settings = upgraded(json.loads((run_dir / "config.json").read_text()))
    record = RunDir(run_dir, settings)  # the run as recorded
    settings = json.loads(
        json.dumps(
            settings
            | {"run": settings["run"] | {"overrides": list(config.overrides)}, "preset": new},
            default=json_default,
        )
    )
    record.barrier()  # under torchrun every rank has decided on the old record
    if record.rank == 0:
        with record.lock("records"):  # forgotten first: an interruption leaves the old budget
            for stage in [p.stem for p in (run_dir / "stages").glob("sampler-*.json")] + list(
                AFTER_SAMPLERS
            ):
                record.forget(stage)
            (run_dir / "results.json").unlink(missing_ok=True)
            storage.write_atomically(record.config_file, json.dumps(settings, indent=1).encode())
    record.barrier()


def _check_patience(run_dir: Path, stages: Sequence[Path], old: int, new: int) -> None:
    """Samplers that early stopping ended train no further on more steps alone (it decides
    again, with the same patience, to stop): an error where that is every sampler, else a
    warning naming them."""
    if new > old:
        return
    stopped = [
        stage.stem.removeprefix("sampler-")
        for stage in stages
        if stage.exists() and json.loads(stage.read_text()).get("stopped_by") == "patience"
    ]
    hint = f"raise the patience too: --option sampler.patience={2 * old}"
    if stopped and len(stopped) == len(stages):
        raise RunConfigError(
            f"--continue would train nothing: every sampler of {run_dir} was "
            f"stopped early (sampler.patience={old}), and more steps do not "
            "undo that",
            hint,
        )
    if stopped:
        log.warning(
            "%s: %s stopped early (sampler.patience=%d) and will train nothing more "
            "unless the patience is raised (%s)",
            run_dir,
            ", ".join(stopped),
            old,
            hint,
        )
