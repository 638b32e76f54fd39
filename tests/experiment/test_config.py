"""The --option keys: every one is described (from the docstrings of the config dataclasses)
and is a key that --option sets; every choice listed is one a run takes, or is marked; every
setting of a run is a flag or an --option key, and a --config key; the evaluation sizes of
the presets."""

import dataclasses
import functools
import json
import typing

import pytest

from nfst.cli import build_parser, parse_args
from nfst.errors import RunConfigError
from nfst.experiment.config import RunConfig, agrees, check_run, upgraded
from nfst.experiment.options import NOT_ALONE, apply_overrides, describe_options
from nfst.experiment.presets import PRESETS, EvaluationConfig, preset
from nfst.experiment.run import Run
from tests.helpers.tiny import recorded_run


def _toml(value) -> str:
    return "None" if value is None else json.dumps(value)  # true/false, numbers, "strings"


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_option_key_has_a_meaning_and_sets_what_it_lists(name):
    rows = describe_options(name)
    assert [key for key, _, meaning in rows if len(meaning) < 10] == []
    assert {"scorer.ngram.order", "sampler.sampler.d", "train_pairs"} <= {k for k, _, _ in rows}
    original = preset(name)
    for key, value, _ in rows:
        changed = apply_overrides(preset(name), [f"{key}={_toml(value)}"])
        assert dataclasses.asdict(changed) == dataclasses.asdict(original), key
    # and the value listed is the preset's: change one, and the key reaches it
    assert apply_overrides(preset(name), ["sampler.sampler.d=7"]).sampler.sampler.d == 7


def test_every_choice_listed_is_one_a_run_takes_or_is_marked_python_only():
    """For every choice of every setting (a Literal field), `nfst options` lists it, and
    `nfst run`'s check of a configuration takes it (with the setting it is listed with), or
    it is listed as from Python only and the check refuses it."""
    p, checked = preset("small"), 0
    for key, _, meaning in describe_options("small"):
        *path, name = key.split(".")
        hint = typing.get_type_hints(type(functools.reduce(getattr, path, p)))[name]
        if typing.get_origin(hint) is not typing.Literal:
            continue
        run, _, python = meaning.partition("Choices in a run: ")[2].partition("; from Python")
        for choice in typing.get_args(hint):
            need = NOT_ALONE.get((key, choice), "")
            options = [f"{key}={json.dumps(choice)}", *([need] if need else [])]
            if need is None:
                assert repr(choice) in python and repr(choice) not in run, (key, choice)
                with pytest.raises(RunConfigError):
                    check_run(RunConfig(), apply_overrides(preset("small"), options))
            else:
                assert repr(choice) in run, (key, choice)
                check_run(RunConfig(), apply_overrides(preset("small"), options))
            checked += 1
    assert checked >= 9  # objective, baseline, scorer.kind and scorer.proposal at least


def test_every_run_setting_is_a_flag_or_an_option_and_a_config_key(tmp_path):
    """RunConfig's fields are flags (and so --config keys); the evaluation sizes are --option
    keys, which --config gives as `option = [...]`, checked like the flag."""
    parser = build_parser()[1]["run"]
    recorded_only = {"seeding"}  # how a run recorded its training seeds: new runs hash them
    assert {f.name for f in dataclasses.fields(RunConfig)} - recorded_only <= {
        a.dest for a in parser._actions
    }
    keys = {key for key, _, _ in describe_options("small")}
    assert {f"evaluate.{f.name}" for f in dataclasses.fields(EvaluationConfig)} <= keys
    config = tmp_path / "run.toml"
    config.write_text(
        '[run]\nseed = 3\noption = ["evaluate.smc_pairs=4", "evaluate.smc_particles=[2, 4]"]\n'
    )
    args = parse_args(["run", "cipher", "--config", str(config), "--option", "evaluate.k=2"])
    assert args.seed == 3 and args.given >= {"seed", "overrides"}
    evaluate = apply_overrides(preset("small"), args.overrides).evaluate
    assert (evaluate.smc_pairs, evaluate.smc_particles, evaluate.k) == (4, (2, 4), 2)


def test_the_presets_evaluate_as_runs_did_before_tiny():
    """The evaluation sizes, once RunConfig's, are the same in paper, small and large (so their
    figures do not change); tiny shrinks them."""
    before = EvaluationConfig(
        k=16,
        log_z_samples=256,
        log_z_max_samples=2048,
        smc_particles=(8, 16, 32, 64, 128),
        smc_pairs=16,
        smc_lookahead_steps=100,
    )
    assert [PRESETS[name].evaluate for name in ("paper", "small", "large")] == [before] * 3
    tiny = dataclasses.asdict(PRESETS["tiny"].evaluate)
    assert all(
        tiny[key] < value
        for key, value in dataclasses.asdict(before).items()
        if key != "smc_particles"
    )


def test_a_run_recorded_with_the_evaluation_sizes_in_its_run_config_opens_with_them(tmp_path):
    """config.json of a run recorded when RunConfig held eval_k, smc_pairs, ...: it opens (the
    directory's check accepts it) with the same values, a size other than the default as an
    --option."""
    recorded_run(tmp_path / "run")
    path = tmp_path / "run" / "config.json"
    settings = json.loads(path.read_text())
    settings["preset"].pop("evaluate")
    settings["run"] |= {
        "eval_k": 4,
        "smc_particles": [8, 16, 32, 64, 128],
        "smc_pairs": 16,
        "log_z_samples": 256,
        "log_z_max_samples": 2048,
    }
    path.write_text(json.dumps(settings))
    run = Run.open(tmp_path / "run", quiet=True)  # RunDir's check agrees
    assert [option.text for option in run.config.overrides] == ["evaluate.k=4"]
    assert (run.preset.evaluate.k, run.preset.evaluate.smc_pairs) == (4, 16)
    new = json.loads(json.dumps(run.settings()))
    assert agrees(upgraded(settings), new) and not agrees(settings, new)


def test_a_run_recorded_before_a_preset_default_changed_opens_with_its_recorded_value(
    tmp_path, monkeypatch
):
    """Defaults of the run's preset changed since the run was recorded (here a nested sampler
    size and a string setting): the run opens with the values it was made with, each pinned
    as an --option, and the directory's check agrees; a run recorded after the change gets no
    such option."""
    recorded_run(tmp_path / "old")
    small = PRESETS["small"]
    d, objective = small.sampler.sampler.d, small.sampler.objective
    monkeypatch.setattr(small.sampler.sampler, "d", d + 1)
    monkeypatch.setattr(small.sampler, "objective", "mixture")
    run = Run.open(tmp_path / "old", quiet=True)  # RunDir's check agrees
    assert [o.text for o in run.config.overrides] == [
        f"sampler.sampler.d={d}",
        f'sampler.objective="{objective}"',
    ]
    assert (run.preset.sampler.sampler.d, run.preset.sampler.objective) == (d, objective)
    recorded_run(tmp_path / "new")
    assert Run.open(tmp_path / "new", quiet=True).config.overrides == ()


def test_a_run_recorded_before_the_default_slept_opens_with_the_usual_training(tmp_path):
    """A run recorded when the presets trained without a sleep phase (``sleep_steps`` 0, an
    int, where the default is now ``"auto"``) opens with ``sampler.sleep_steps=0`` pinned:
    it goes on training as it was made to."""
    recorded_run(tmp_path / "run")
    path = tmp_path / "run" / "config.json"
    settings = json.loads(path.read_text())
    assert settings["preset"]["sampler"]["sleep_steps"] == "auto"
    settings["preset"]["sampler"]["sleep_steps"] = 0
    path.write_text(json.dumps(settings))
    run = Run.open(tmp_path / "run", quiet=True)
    assert [o.text for o in run.config.overrides] == ["sampler.sleep_steps=0"]
    assert run.preset.sampler.sleep_steps == 0
