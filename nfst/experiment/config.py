"""What a run is made of: its :class:`RunConfig` (its preset's ``--option`` settings read once,
``nfst.experiment.options``), how ``config.json`` records it, and :func:`check_run`, the one
check of a run's settings."""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

from ..errors import NfstError, RunConfigError
from ..models.samplers import SAMPLERS
from ..runtime.distributed import item_seed
from ..runtime.settings import check_settings
from .options import Assignment, Option, apply_overrides, as_options
from .presets import Preset, preset

DEFAULT_SAMPLERS = ("nolookahead", "swa", "sws", "swp", "swp-prefix")


@dataclass
class RunConfig:
    """What a run is: its task (with its settings), its preset (with the ``--option`` settings
    that change it), its seed and the samplers it compares."""

    task: str = "cipher"
    preset: str = "small"
    seed: int = field(default=0, metadata={"least": 0})
    samplers: tuple[str, ...] = DEFAULT_SAMPLERS
    seeds: int = 1
    """Training runs per sampler, from the training seeds :func:`training_seed` gives for
    j = 0 .. seeds − 1, each against the run's one frozen scorer and evaluated on the same
    pairs (``--seeds``)."""
    seeding: Literal["hashed", "consecutive"] = "hashed"
    """How training seed j derives from ``seed`` (:func:`training_seed`): "consecutive" for
    runs recorded before nfst hashed them."""
    task_settings: dict = field(default_factory=dict)
    overrides: tuple[Option, ...] = ()
    """Preset settings as dotted ``KEY=VALUE``, e.g. ``sampler.steps=100`` (texts given are
    read by ``nfst.experiment.options.parse_option``; recorded as texts)."""
    from_run: str = ""
    """The run directory (an absolute path) whose frozen scorer and n-gram this run took, and
    trains samplers against, rather than train its own (``nfst run --from``); "": none."""

    def __post_init__(self):
        self.overrides = as_options(self.overrides)

    def default_dir(self) -> Path:
        return Path("runs") / f"{self.task}-{self.preset}-{self.seed}"

    def resolved_preset(self) -> Preset:
        """The run's preset with its ``overrides`` applied."""
        return apply_overrides(preset(self.preset), self.overrides)

    @classmethod
    def recorded(cls, run_dir: str | Path) -> "RunConfig":
        """The configuration recorded in ``run_dir/config.json``."""
        path = Path(run_dir) / "config.json"
        if not path.exists():
            raise RunConfigError(
                f"{run_dir}: no config.json, so no run to open",
                "start one with `nfst run TASK --run-dir DIR`",
            )
        saved = upgraded(json.loads(path.read_text()))["run"]
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in fields}
        )


def training_seed(seed: int, j: int, seeding: str = "hashed") -> int:
    """The seed of training run ``j`` of a run of seed ``seed``, whose streams initialise,
    train and evaluate a sampler: ``seed`` itself for j = 0 (the run without ``--seeds``);
    after it, "hashed": the hash of (seed, j) (``nfst.runtime.distributed.item_seed``), so
    that no two runs share a training seed; "consecutive": seed + j, as runs recorded before
    did (their training seed 1 was the next run's seed 0)."""
    if j == 0 or seeding == "consecutive":
        return seed + j
    return item_seed(seed, "training seed", j)


MOVED = {
    "eval_k": "k",
    "log_z_samples": "log_z_samples",
    "log_z_max_samples": "log_z_max_samples",
    "smc_particles": "smc_particles",
    "smc_pairs": "smc_pairs",
}
"""Settings that ``RunConfig`` once held, now ``Preset.evaluate``'s (so that ``--option`` and
``--config`` reach them, and a preset can shrink them), and their names there."""


def upgraded(settings: dict) -> dict:
    """The settings of a run's ``config.json`` as this nfst records them: a setting of
    :data:`MOVED` goes from ``run`` into ``preset.evaluate``, and every preset setting whose
    recorded value is not the one its preset and overrides give today (a default changed
    since, or a setting moved there) joins the overrides with the recorded value, as
    ``--option KEY=VALUE`` would put it. So a run recorded before opens, and continues, with
    the same values; settings nfst no longer has are left for the directory's check to
    refuse."""
    settings = copy.deepcopy(settings)
    run = settings.get("run", {})
    if run:
        run.setdefault("seeding", "consecutive")  # recorded before training seeds were hashed
    for old, new in MOVED.items():
        if old in run:
            settings.setdefault("preset", {}).setdefault("evaluate", {})[new] = run.pop(old)
    recorded = settings.get("preset")
    if not run or recorded is None:
        return settings
    today = dict(
        _leaves(
            json.loads(
                json.dumps(
                    apply_overrides(preset(run["preset"]), run.get("overrides", [])),
                    default=json_default,
                )
            )
        )
    )
    for key, value in _leaves(recorded):
        if key in today and today[key] != value:
            text = "None" if value is None else json.dumps(value)
            run["overrides"] = [*run.get("overrides", []), f"{key}={text}"]
    return settings


def _leaves(tree: dict, prefix: str = ""):
    """(dotted key, value) of every leaf of a nest of dicts."""
    for name, value in tree.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{name}.")
        else:
            yield prefix + name, value


def check_samplers(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` if every one is a registered sampler, else an error listing the samplers."""
    unknown = set(names) - set(SAMPLERS)
    if unknown:
        raise RunConfigError(
            f"unknown samplers {sorted(unknown)}; the samplers are {', '.join(SAMPLERS)}",
            "give a comma-separated list, e.g. --samplers swa,swp-prefix",
        )
    return tuple(names)


def check_run(config: RunConfig, p: Preset) -> None:
    """An error, before any work starts, for a setting of the run or of its preset ``p`` (after
    its overrides) that its field does not accept (``nfst.runtime.settings``: a type, a choice,
    a range), an unknown sampler (to compare, to bootstrap the scorer, to teach or to sleep to
    the cap), or sampler settings that training would refuse only once the scorer is trained.
    The choices it refuses alone are ``nfst.experiment.options.NOT_ALONE``'s, so that ``nfst
    options`` lists them as such."""
    for what, settings in (("the run's", config), ("the preset's", p)):
        try:
            check_settings(settings)
        except ValueError as exc:
            raise RunConfigError(
                f"{what} setting {exc}",
                "`nfst options` lists every setting with its value and meaning",
            ) from None
    if not config.samplers:
        raise RunConfigError(
            "a run compares at least one sampler; none is given", "e.g. --samplers swa,swp-prefix"
        )
    named = {p.scorer.bootstrap_sampler, p.sampler.teacher, *p.sampler.sleep_to_cap}
    check_samplers({*config.samplers, *named} - {""})
    try:
        p.sampler.check_sleep()
    except NfstError as exc:
        raise RunConfigError(f"sampler.{exc.args[0]}", exc.hint) from None
    objective = p.sampler.objective
    if p.sampler.teacher and objective != "is":
        raise RunConfigError(
            f"a teacher trains with the objective 'is' only, not {objective!r}",
            "unset sampler.teacher or use objective=is",
        )
    if objective == "posterior" and p.scorer.kind != "ngram":
        raise RunConfigError(
            "the objective 'posterior' needs a scorer with an exact posterior",
            "--option scorer.kind=ngram, or another sampler.objective",
        )
    if objective == "nasmc":
        raise RunConfigError(
            "the objective 'nasmc' needs a lookahead, which a run does not fit",
            "train with it from Python (train_sampler(..., lookahead="
            "...)), or use sampler.objective=is or mixture",
        )


def json_default(obj):
    """JSON of what a run records: a dataclass as its fields, a setting as its text."""
    if isinstance(obj, Assignment):
        return obj.text
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(type(obj).__name__)


def agrees(old, new) -> bool:
    """Recorded settings ``old`` match ``new``; settings added to nfst since the run was
    recorded (keys only in ``new``) are ignored, so upgrading nfst keeps old runs usable."""
    if isinstance(old, dict) and isinstance(new, dict):
        return set(old) <= set(new) and all(agrees(old[k], new[k]) for k in old)
    return old == new
