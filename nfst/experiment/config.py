"""What a run is made of: its :class:`RunConfig`, and the ``KEY=VALUE`` settings that change a
task (``--set``) or a preset (``--option``), parsed in one way for both. A preset's settings are
described where they are defined, by the docstring under each field of the config dataclasses;
:func:`describe_options` lists them (``nfst options``)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import inspect
import json
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

from ..errors import NfstError, RunConfigError
from ..models.samplers import SAMPLERS
from ..runtime.distributed import item_seed
from ..runtime.settings import check_settings, nearest, setting_value
from .presets import EvaluationConfig, Preset, preset

DEFAULT_SAMPLERS = ("nolookahead", "swa", "sws", "swp", "swp-prefix")


def parse_assignment(item: str, flag: str = "--option") -> tuple[str, Any]:
    """``"sampler.steps=100"`` -> ``("sampler.steps", 100)``: the value is read as a TOML value
    (numbers, booleans, quoted strings, arrays), else taken as a bare string; ``None`` is None."""
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise RunConfigError(f"{flag} {item!r}: expected KEY=VALUE",
                             f"e.g. {flag} train_size=500" if flag == "--set"
                             else f"e.g. {flag} sampler.steps=100")
    text = text.strip()
    if text == "None":
        return key.strip(), None
    try:
        return key.strip(), tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return key.strip(), text


def merge_overrides(old: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    """The ``--option`` settings ``old`` with ``new`` after them, less the old ones whose key a
    new one sets again (they would be overridden anyway)."""
    keys = {parse_assignment(item)[0] for item in new}
    return tuple(item for item in old if parse_assignment(item)[0] not in keys) + tuple(new)


def parse_settings(items: Sequence[str]) -> dict:
    """``["train_size=500", "seed=1"]`` -> ``{"train_size": 500, "seed": 1}`` (task settings)."""
    return dict(parse_assignment(item, "--set") for item in items)


def apply_overrides(p: Preset, overrides: Sequence[str]) -> Preset:
    """Set dotted fields of a preset, e.g. ``scorer.steps=50`` or ``sampler.sampler.d=32``."""
    for item in overrides:
        key, value = parse_assignment(item)
        *path, name = key.split(".")
        obj = p
        for part in path:
            obj = getattr(obj, part, None)
        if obj is None or not dataclasses.is_dataclass(obj) or \
                name not in {f.name for f in dataclasses.fields(obj)}:
            near = nearest(key, [k for k, _ in _settings(p)])
            raise RunConfigError(
                f"--option {item!r}: the preset has no setting {key!r}"
                + (f"; the nearest: {', '.join(near)}" if near else ""),
                "`nfst options` lists every setting with its value and meaning")
        try:
            setattr(obj, name, setting_value(type(obj), name, value))
        except ValueError as exc:
            raise RunConfigError(f"--option {item!r}: {exc}", "e.g. sampler.lr=0.001, "
                                 "sampler.steps=100, sampler.sampler.dropout=0.1; `nfst "
                                 "options` lists every setting with its meaning") from None
    return p


def option_value(p: Preset, key: str) -> Any:
    """The value of the setting ``key`` (dotted, e.g. ``sampler.steps``) of a preset."""
    return functools.reduce(getattr, key.split("."), p)


def _settings(obj, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, the config dataclass that holds it) of every setting of a nest of config
    dataclasses, in field order: the fields that do not hold a dataclass themselves."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from _settings(value, f"{prefix}{f.name}.")
        else:
            yield prefix + f.name, obj


@functools.cache
def attribute_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (and of its bases), read from the source:
    the one place a setting is described. Whitespace is collapsed to single spaces."""
    docs = {}
    for klass in reversed(cls.__mro__[:-1]):  # bases first, so subclasses win
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for node, after in zip(body, body[1:]):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                    isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and \
                    isinstance(after.value.value, str):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def describe_options(preset_name: str = "small") -> list[tuple[str, Any, str]]:
    """(key, value, meaning) of every ``--option`` key of the preset ``preset_name``, in field
    order: the value there, and the meaning from the config dataclass that holds it."""
    p = preset(preset_name)
    rows = []
    for key, holder in _settings(p):
        name = key.rpartition(".")[2]
        rows.append((key, getattr(holder, name), attribute_docs(type(holder)).get(name, "")))
    return rows


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
    overrides: tuple[str, ...] = ()
    """Preset settings as dotted ``KEY=VALUE``, e.g. ``sampler.steps=100``."""
    from_run: str = ""
    """The run directory (an absolute path) whose frozen scorer and n-gram this run took, and
    trains samplers against, rather than train its own (``nfst run --from``); "": none."""

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
            raise RunConfigError(f"{run_dir}: no config.json, so no run to open",
                                 "start one with `nfst run TASK --run-dir DIR`")
        saved = upgraded(json.loads(path.read_text()))["run"]
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v
                      for k, v in saved.items() if k in fields})


def training_seed(seed: int, j: int, seeding: str = "hashed") -> int:
    """The seed of training run ``j`` of a run of seed ``seed``, whose streams initialise,
    train and evaluate a sampler: ``seed`` itself for j = 0 (the run without ``--seeds``);
    after it, "hashed": the hash of (seed, j) (``nfst.runtime.distributed.item_seed``), so
    that no two runs share a training seed; "consecutive": seed + j, as runs recorded before
    did (their training seed 1 was the next run's seed 0)."""
    if j == 0 or seeding == "consecutive":
        return seed + j
    return item_seed(seed, "training seed", j)


MOVED = {"eval_k": "k", "log_z_samples": "log_z_samples",
         "log_z_max_samples": "log_z_max_samples", "smc_particles": "smc_particles",
         "smc_pairs": "smc_pairs"}
"""Settings that ``RunConfig`` once held, now ``Preset.evaluate``'s (so that ``--option`` and
``--config`` reach them, and a preset can shrink them), and their names there."""


def upgraded(settings: dict) -> dict:
    """The settings of a run's ``config.json`` as this nfst records them: a setting of
    :data:`MOVED` goes from ``run`` into ``preset.evaluate``, and, where it is not the default,
    into the run's overrides as ``--option evaluate.NAME=VALUE`` would put it. So a run
    recorded before the move opens, and continues, with the same values."""
    settings = copy.deepcopy(settings)
    run = settings.get("run", {})
    if run:
        run.setdefault("seeding", "consecutive")  # recorded before training seeds were hashed
    default = json.loads(json.dumps(dataclasses.asdict(EvaluationConfig())))
    for old, new in MOVED.items():
        if old in run:
            value = run.pop(old)
            settings.setdefault("preset", {}).setdefault("evaluate", {})[new] = value
            if value != default[new]:
                run["overrides"] = [*run.get("overrides", []),
                                    f"evaluate.{new}={json.dumps(value)}"]
    return settings


def check_samplers(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` if every one is a registered sampler, else an error listing the samplers."""
    unknown = set(names) - set(SAMPLERS)
    if unknown:
        raise RunConfigError(f"unknown samplers {sorted(unknown)}; the samplers are "
                             f"{', '.join(SAMPLERS)}",
                             "give a comma-separated list, e.g. --samplers swa,swp-prefix")
    return tuple(names)


def check_run(config: RunConfig, p: Preset) -> None:
    """An error, before any work starts, for a setting of the run or of its preset ``p`` (after
    its overrides) that its field does not accept (``nfst.runtime.settings``: a type, a choice,
    a range), an unknown sampler (to compare, to bootstrap the scorer or to teach), or sampler
    settings that training would refuse only once the scorer is trained."""
    for what, settings in (("the run's", config), ("the preset's", p)):
        try:
            check_settings(settings)
        except ValueError as exc:
            raise RunConfigError(f"{what} setting {exc}", "`nfst options` lists every setting "
                                 "with its value and meaning") from None
    if not config.samplers:
        raise RunConfigError("a run compares at least one sampler; none is given",
                             "e.g. --samplers swa,swp-prefix")
    check_samplers({*config.samplers, p.scorer.bootstrap_sampler, p.sampler.teacher} - {""})
    try:
        p.sampler.check_sleep()
    except NfstError as exc:
        raise RunConfigError(f"sampler.{exc.args[0]}", exc.hint) from None
    objective = p.sampler.objective
    if p.sampler.teacher and objective != "is":
        raise RunConfigError(f"a teacher trains with the objective 'is' only, not "
                             f"{objective!r}", "unset sampler.teacher or use objective=is")
    if objective == "posterior" and p.scorer.kind != "ngram":
        raise RunConfigError("the objective 'posterior' needs a scorer with an exact posterior",
                             "--option scorer.kind=ngram, or another sampler.objective")
    if objective == "nasmc":
        raise RunConfigError("the objective 'nasmc' needs a lookahead, which a run does not "
                             "fit", "train with it from Python (train_sampler(..., lookahead="
                             "...)), or use sampler.objective=is or mixture")


def json_default(obj):
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(type(obj).__name__)


def agrees(old, new) -> bool:
    """Recorded settings ``old`` match ``new``; settings added to nfst since the run was
    recorded (keys only in ``new``) are ignored, so upgrading nfst keeps old runs usable."""
    if isinstance(old, dict) and isinstance(new, dict):
        return set(old) <= set(new) and all(agrees(old[k], new[k]) for k in old)
    return old == new
