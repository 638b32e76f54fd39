"""Seeds of random streams (``nfst.runtime.distributed``): one hash of a seed and a key, so that
keys which differ as tuples, or seeds which differ, give different seeds; every seed a run's
streams use (as the module docstring lists them) is distinct from every other."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nfst.runtime.distributed import STREAMS, item_seed, stream_seed
from tests.helpers.seeds import run_streams
from tests.helpers.strategies import examples

keys = st.lists(st.one_of(st.integers(0, 10**6), st.sampled_from(STREAMS)), max_size=5)


def test_keys_differ_as_tuples_do():
    """Leading zeros count, an index is not its digits, and a stream is named, not numbered."""
    keys = [(), (0,), (1,), (0, 1), (1, 0), (0, 0, 1), ("1",), ("test",), ("test", 0)]
    assert len({item_seed(5, *key) for key in keys}) == len(keys)
    assert stream_seed(5, "test", 3) == item_seed(5, "test", 3)  # a named stream is a key


def test_seeds_are_63_bit_and_the_same_everywhere():
    """The hash of the key's text: the same seed on every platform and Python version (a
    recorded value), in [0, 2⁶³) as torch.Generator.manual_seed takes it."""
    assert item_seed(0, "test") == 4_120_885_929_777_502_606
    assert all(0 <= item_seed(seed, "train", 3) < 2**63 for seed in (0, 1, 2**63 - 1))


def test_an_unknown_stream_is_an_error():
    with pytest.raises(ValueError, match="unknown random stream 'tests'"):
        stream_seed(0, "tests")


@settings(max_examples=examples(300))
@given(st.integers(0, 2**62), keys, st.integers(0, 2**62), keys)
def test_different_seeds_or_keys_give_different_seeds(seed, key, other_seed, other_key):
    same = (seed, key) == (other_seed, other_key)
    assert (item_seed(seed, *key) == item_seed(other_seed, *other_key)) == same


@pytest.mark.parametrize("seed", [0, 1, 2**62])
def test_every_stream_of_a_run_has_seeds_of_its_own(seed):
    """Three training runs (seeds s, s + 1, s + 2: the streams of one are not another's), 100
    minibatches a stream, 4 ranks, SMC at M = 1..128 (before, method 0 at M ≤ 3 had the
    validation, test and log Ẑ seeds): 5,067 seeds, no two alike."""
    named = run_streams(seed)
    assert len(named) == 6 + 3 * (6 + 6 * 100) + 3 + 12 * 9 * 3 * 10
