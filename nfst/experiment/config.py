"""What a run is made of: its :class:`RunConfig`, and the ``KEY=VALUE`` settings that change a
task (``--set``) or a preset (``--option``), parsed in one way for both."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..errors import RunConfigError
from ..models.samplers import SAMPLERS
from ..train.scorer import KINDS, PROPOSALS
from .presets import Preset

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
            raise RunConfigError(f"--option {item!r}: the preset has no setting {key!r}",
                                 "see the Preset, ScorerConfig and SamplerTrainConfig "
                                 "dataclasses (nfst.experiment.presets, nfst.train)")
        setattr(obj, name, _coerce(getattr(obj, name), value, item))
    return p


def _coerce(current: Any, value: Any, item: str) -> Any:
    """``value`` in the type of the setting it replaces (an int where a float is expected is
    fine; a string where a number is expected is not)."""
    if current is None or value is None:
        return value
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(current, tuple) and isinstance(value, list):
        return tuple(value)
    if type(value) is not type(current):
        raise RunConfigError(f"--option {item!r}: expected a {type(current).__name__}, got "
                             f"{value!r}", "e.g. sampler.lr=0.001, sampler.steps=100, "
                             "sampler.sampler.dropout=0.1")
    return value


@dataclass
class RunConfig:
    task: str = "cipher"
    preset: str = "small"
    seed: int = 0
    samplers: tuple[str, ...] = DEFAULT_SAMPLERS
    task_settings: dict = field(default_factory=dict)
    overrides: tuple[str, ...] = ()
    """Preset settings as dotted ``KEY=VALUE``, e.g. ``sampler.steps=100``."""
    eval_k: int = 16
    smc_particles: tuple[int, ...] = (8, 16, 32, 64, 128)
    smc_pairs: int = 16
    log_z_samples: int = 256
    """Samples per test pair from the best sampler for the IS estimate of log Z."""

    def default_dir(self) -> Path:
        return Path("runs") / f"{self.task}-{self.preset}-{self.seed}"

    @classmethod
    def recorded(cls, run_dir: str | Path) -> "RunConfig":
        """The configuration recorded in ``run_dir/config.json``."""
        path = Path(run_dir) / "config.json"
        if not path.exists():
            raise RunConfigError(f"{run_dir}: no config.json, so no run to open",
                                 "start one with `nfst run TASK --run-dir DIR`")
        saved = json.loads(path.read_text())["run"]
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v
                      for k, v in saved.items() if k in fields})


def check_samplers(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` if every one is a registered sampler, else an error listing the samplers."""
    unknown = set(names) - set(SAMPLERS)
    if unknown:
        raise RunConfigError(f"unknown samplers {sorted(unknown)}; the samplers are "
                             f"{', '.join(SAMPLERS)}",
                             "give a comma-separated list, e.g. --samplers swa,swp-prefix")
    return tuple(names)


def check_names(p: Preset, samplers: Sequence[str]) -> None:
    """An error for an unknown sampler (to compare, to bootstrap the scorer or to teach),
    scorer proposal or scorer kind: before any work starts."""
    check_samplers({*samplers, p.scorer.bootstrap_sampler, p.sampler.teacher} - {""})
    if p.scorer.proposal not in PROPOSALS:
        raise RunConfigError(f"unknown scorer proposal {p.scorer.proposal!r}",
                             f"--option scorer.proposal= one of {', '.join(PROPOSALS)}")
    if p.scorer.kind not in KINDS:
        raise RunConfigError(f"unknown scorer kind {p.scorer.kind!r}",
                             f"--option scorer.kind= one of {', '.join(KINDS)}")


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
