"""The batch's per-state and per-arc tables against the lattices they come from."""

import torch

from nfst.dp.batch import LatticeBatch
from tests.helpers.lattices import small_lattices


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


def test_choice_ahead_marks_the_states_from_which_some_path_still_branches():
    lats = small_lattices()
    batch = LatticeBatch(lats)
    for b, lat in enumerate(lats):
        s0 = int(batch.state_offsets[b])
        for s in range(lat.num_states):
            reach, todo = set(), [s]  # every state reachable from s, s included
            while todo:
                q = todo.pop()
                if q not in reach:
                    reach.add(q)
                    todo.extend(int(d) for d in lat.arc_dst[lat.arc_src == q])
            expected = any(legal_choices(lat, q) > 1 for q in reach)
            assert bool(batch.choice_ahead[s0 + s]) == expected
    assert bool(batch.choice_ahead.any()) and not bool(batch.choice_ahead.all())


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
