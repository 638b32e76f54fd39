"""The batch's per-state and per-arc tables against the lattices they come from."""

import numpy as np
import torch

from nfst import Lattice
from nfst.dp.batch import LatticeBatch
from tests.helpers.lattices import del_ins_lattices, small_lattices


def legal_choices(lat, s: int) -> int:
    """State s's out-arcs, and STOP if it is final."""
    return int((lat.arc_src == s).sum()) + int(lat.final[s])


def test_choices_count_each_states_out_arcs_and_stop():
    lats = small_lattices()
    batch = LatticeBatch(lats)
    for b, lat in enumerate(lats):
        s0 = int(batch.state_offsets[b])
        for s in range(lat.num_states):
            assert int(batch.choices[s0 + s]) == legal_choices(lat, s)
    assert bool((batch.choices == 1).any()) and bool((batch.choices > 1).any())


def test_backward_arc_rank_is_each_arcs_slot_in_the_level_order():
    batch = LatticeBatch(small_lattices())
    A = batch.num_arcs
    assert torch.equal(batch.backward_arc_order[batch.backward_arc_rank], torch.arange(A))
    assert torch.equal(batch.backward_arc_rank[batch.backward_arc_order], torch.arange(A))


def branching_ahead(lat, s: int) -> bool:
    """Whether some state reachable from s (s included) has more than one legal choice."""
    reach, todo = set(), [s]
    while todo:
        q = todo.pop()
        if q not in reach:
            reach.add(q)
            todo.extend(int(d) for d in lat.arc_dst[lat.arc_src == q])
    return any(legal_choices(lat, q) > 1 for q in reach)


def assert_choice_ahead(lats):
    batch = LatticeBatch(lats)
    for b, lat in enumerate(lats):
        s0 = int(batch.state_offsets[b])
        for s in range(lat.num_states):
            assert bool(batch.choice_ahead[s0 + s]) == branching_ahead(lat, s)
    return batch


def test_choice_ahead_marks_the_states_from_which_some_path_still_branches():
    batch = assert_choice_ahead(small_lattices())
    assert bool(batch.choice_ahead.any()) and not bool(batch.choice_ahead.all())


def forced_chain(length: int) -> Lattice:
    """``length`` forced arcs 0 -> 1 -> ... -> length, then two arcs to two final states."""
    vocab = del_ins_lattices()[0].mark_vocab
    n = length + 3
    src = np.array([*range(length), length, length])
    return Lattice(
        mark_vocab=vocab,
        x=("a",),
        y=("b",),
        arc_src=src,
        arc_dst=np.array([*range(1, length + 1), length + 1, length + 2]),
        arc_mark=np.zeros(len(src), dtype=np.int64),
        final=np.arange(n) > length,
        positions=np.zeros((n, 2), dtype=np.int64),
        height=np.array([*range(length + 1, 0, -1), 0, 0]),
    )


def test_choice_ahead_sees_a_branch_at_the_end_of_a_long_forced_chain():
    """Every state of the chain has the branch ahead, however far: chains of 1 to 40 arcs,
    in one batch and each alone (the batch's tallest lattice sets how far it looks)."""
    chains = [forced_chain(k) for k in (1, 2, 3, 7, 8, 9, 31, 40)]
    assert_choice_ahead(chains)
    for chain in chains:
        batch = assert_choice_ahead([chain])
        assert int(batch.choice_ahead.sum()) == chain.num_states - 2


def test_legal_columns_are_the_out_arcs_then_stop_and_carry_their_marks():
    """A state's legal columns are as many as its out-arcs, with their marks, then STOP (mark
    id V, where logits put it) where it is final; the other columns are illegal."""
    lats = small_lattices()
    batch = LatticeBatch(lats)
    D, V = batch.out_arcs.shape[1], len(batch.mark_vocab)
    assert batch.legal.shape == batch.column_marks.shape == (batch.num_states, D + 1)
    for b, lat in enumerate(lats):
        s0 = int(batch.state_offsets[b])
        for s in range(lat.num_states):
            legal, marks = batch.legal[s0 + s], batch.column_marks[s0 + s]
            assert sorted(marks[:D][legal[:D]].tolist()) == sorted(lat.arc_mark[lat.arc_src == s])
            assert not legal[:D][int(legal[:D].sum()) :].any()  # out-arcs first, then padding
            assert bool(legal[D]) == bool(lat.final[s]) and int(marks[D]) == V
