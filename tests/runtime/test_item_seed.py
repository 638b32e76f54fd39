"""Item seeds (``nfst.runtime.distributed.item_seed``): index tuples that differ after their
leading zeros never share a seed, so a stream led by its own number ≥ 1 is disjoint from every
other."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from nfst.runtime.distributed import item_seed
from tests.helpers.strategies import examples

P = 1_000_003  # each index is below it
indices = st.lists(st.integers(0, P - 1), max_size=3)


def stripped(index) -> tuple:
    """``index`` without its leading zeros: the tuples item_seed cannot tell apart."""
    return tuple(itertools.dropwhile(lambda i: i == 0, index))


def test_leading_zeros_do_not_count_and_the_first_item_gets_the_seed():
    assert item_seed(5, 0, 1) == item_seed(5, 1) and item_seed(5, 0, 0, 2) == item_seed(5, 2)
    assert item_seed(5) == item_seed(5, 0) == item_seed(5, 0, 0) == 5


@settings(max_examples=examples(300))
@given(st.integers(0, 2 ** 62), indices, indices)
def test_index_tuples_share_a_seed_only_if_equal_after_leading_zeros(seed, a, b):
    assert (item_seed(seed, *a) == item_seed(seed, *b)) == (stripped(a) == stripped(b))


@settings(max_examples=examples(300))
@given(st.integers(0, 2 ** 62), st.integers(1, P - 1), st.integers(1, P - 1),
       st.lists(st.integers(0, P - 1), max_size=2), st.lists(st.integers(0, P - 1), max_size=2))
def test_a_stream_number_makes_streams_disjoint(seed, stream, other, i, j):
    """(stream, *i) never meets a tuple of no more indices than i, nor another stream's
    (other, *j)."""
    mine = item_seed(seed, stream, *i)
    if len(j) <= len(i):
        assert mine != item_seed(seed, *j)
    if other != stream:
        assert mine != item_seed(seed, other, *j)


def test_every_small_index_tuple_has_its_own_seed():
    """All 585 tuples of up to three indices from {0..3, P−4..P−1}: exactly one seed per
    class of tuples equal after leading zeros, the largest ones included (no wrap-around)."""
    values = [0, 1, 2, 3, P - 4, P - 3, P - 2, P - 1]
    tuples = [t for n in range(4) for t in itertools.product(values, repeat=n)]
    seeds = {}
    for t in tuples:
        seeds.setdefault(item_seed(2 ** 62 + 17, *t), set()).add(stripped(t))
    assert all(len(classes) == 1 for classes in seeds.values())
    assert len(seeds) == len({stripped(t) for t in tuples})
