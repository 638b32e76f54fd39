"""A sampler's training settings (nfst.train.sampler_config): what sleep_steps accepts, and the
triples a training takes."""

import pytest

from nfst.errors import NfstError
from nfst.runtime.settings import check_settings, setting_value
from nfst.train.sampler_config import SamplerTrainConfig


@pytest.mark.parametrize("value", [0, 4000, "auto"])
def test_sleep_steps_is_a_count_or_auto(value):
    assert setting_value(SamplerTrainConfig, "sleep_steps", value) == value
    check_settings(SamplerTrainConfig(sleep_steps=value))


@pytest.mark.parametrize("value", [-1, "soon", 1.5])
def test_sleep_steps_refuses_anything_else(value):
    with pytest.raises(ValueError, match="expected an int of at least 0 or one of 'auto'"):
        setting_value(SamplerTrainConfig, "sleep_steps", value)


def test_the_triples_needed_cover_the_sleep_limit_and_the_wake_sleep_share():
    fixed = SamplerTrainConfig(sleep_steps=10, batch_size=16, steps=100, sleep_share=0.25)
    assert (fixed.sleep_limit(), fixed.sleep_pairs()) == (10, 4)
    assert fixed.triples_needed() == 10 * 16 + 4 * 100
    auto = SamplerTrainConfig(sleep_steps="auto", sleep_cap=50, batch_size=16, steps=100)
    assert auto.sleep_limit() == 50 and auto.triples_needed() == 50 * 16


def test_a_share_that_rounds_to_no_triple_is_refused():
    with pytest.raises(NfstError, match="puts no fresh triple in a minibatch of 16"):
        SamplerTrainConfig(sleep_share=0.01, batch_size=16).check_sleep()
