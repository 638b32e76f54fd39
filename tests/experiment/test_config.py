"""The --option keys: every one is described (from the docstrings of the config dataclasses)
and is a key that --option sets."""

import dataclasses
import json

import pytest

from nfst.experiment.config import apply_overrides, describe_options
from nfst.experiment.presets import PRESETS, preset


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
