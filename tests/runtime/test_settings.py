"""What a config field accepts, from its own type and metadata (``nfst.runtime.settings``); and
every float setting of a run declares its range."""

import dataclasses
import math
import typing

import pytest

from nfst.experiment.config import RunConfig
from nfst.experiment.presets import PRESETS, EvaluationConfig
from nfst.models.samplers import SamplerConfig
from nfst.runtime.settings import check_settings, setting_value
from nfst.train.sampler import SamplerTrainConfig
from nfst.train.scorer import ScorerConfig

REFUSED = [  # (config class, field, value, what the error says is expected)
    (SamplerTrainConfig, "lr", True, "a positive float"),  # a bool is no number
    (SamplerTrainConfig, "k", False, "a positive int"),
    (SamplerTrainConfig, "lr", 0, "a positive float"),
    (SamplerTrainConfig, "lr", math.inf, "a positive float"),
    (SamplerTrainConfig, "min_delta", math.nan, "a float of at least 0"),
    (SamplerTrainConfig, "grad_clip", -5, "None or a positive float"),
    (SamplerTrainConfig, "lam", 1.5, "a float in [0, 1]"),
    (SamplerTrainConfig, "teacher_share", 1, "a float in (0, 1)"),
    (SamplerTrainConfig, "objective", "typo", "one of 'is', 'nasmc', 'mixture', 'posterior'"),
    (SamplerConfig, "dropout", 1.0, "a float in [0, 1)"),
    (SamplerConfig, "budget", 0, "a float in (0, 1]"),
    (SamplerConfig, "max_length", 0, "None or a positive int"),
    (ScorerConfig, "label_smoothing", 1, "a float in [0, 1)"),
    (ScorerConfig, "kind", "LSTM", "one of 'lstm', 'ngram'"),
    (EvaluationConfig, "smc_particles", [4, 0], "a list of positive ints"),
    (EvaluationConfig, "smc_particles", 4, "a list of positive ints"),
    (RunConfig, "seed", -1, "an int of at least 0"),
]


@pytest.mark.parametrize("cls, name, value, expected", REFUSED)
def test_a_value_outside_its_field_is_refused_saying_what_the_field_takes(
    cls, name, value, expected
):
    with pytest.raises(ValueError) as error:
        setting_value(cls, name, value)
    assert str(error.value) == f"expected {expected}, got {value!r}"


def test_a_value_the_field_takes_comes_back_as_the_field_holds_it():
    assert setting_value(SamplerTrainConfig, "lr", 1) == 1.0
    assert type(setting_value(SamplerTrainConfig, "lr", 1)) is float
    assert setting_value(SamplerTrainConfig, "grad_clip", None) is None
    assert setting_value(SamplerConfig, "dropout", 0) == 0.0
    assert setting_value(SamplerConfig, "budget", 1) == 1.0
    assert setting_value(EvaluationConfig, "smc_particles", [4, 8]) == (4, 8)
    assert setting_value(ScorerConfig, "proposal", "mixture") == "mixture"


def test_a_whole_config_is_checked_and_the_first_bad_setting_named():
    for preset in PRESETS.values():
        check_settings(preset)
    bad = dataclasses.replace(PRESETS["small"].sampler, sampler=SamplerConfig(dropout=1.5))
    with pytest.raises(
        ValueError,
        match=r"^sampler\.dropout: expected a float in \[0, 1\), got "
        r"1\.5$",
    ):
        check_settings(bad)
    with pytest.raises(ValueError, match=r"^lr: expected a positive float, got True$"):
        check_settings(SamplerTrainConfig(lr=True))


def _floats(cls, prefix=""):
    """(dotted key, field) of every float setting of a nest of config dataclasses."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind):
            yield from _floats(kind, f"{prefix}{field.name}.")
        elif float in (kind, *typing.get_args(kind)):
            yield prefix + field.name, field


def test_every_float_setting_of_a_run_declares_its_range():
    """A float without a range takes NaN, infinities and negatives: each one here has a
    rate, a probability, a share or a threshold, so each must say which values make sense."""
    floats = dict(_floats(type(PRESETS["small"])))
    assert {
        "sampler.lr",
        "sampler.sampler.dropout",
        "scorer.label_smoothing",
        "scorer.ngram.grad_clip",
    } <= set(floats)
    assert [key for key, field in floats.items() if "range" not in field.metadata] == []
