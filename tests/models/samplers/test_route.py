"""Known paths laid out by position (route_of_arcs) against walking each path, and their
positions as rows (Packing)."""

import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers.route import Packing, route_of_arcs
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import all_paths


def test_route_of_arcs_matches_walking_each_path():
    """The vectorised layout against a walk of each path, arc by arc: the state at every
    position (the last one repeated past the end), the column taken there (STOP = D at the
    end and after), the marks (-1 padded) and the lengths."""
    lats = del_ins_lattices() + [cipher_lattice()]
    batch = LatticeBatch(lats)
    arcs, _ = all_paths(batch)
    B, k, L = arcs.shape
    lattice = torch.arange(B).repeat_interleave(k)
    route = route_of_arcs(batch, lattice, arcs.view(B * k, L))
    stop = batch.out_arcs.shape[1]
    for n, path in enumerate(arcs.view(B * k, L).tolist()):
        state = int(batch.start[lattice[n]])
        states, choices, marks = [], [], []
        for a in path:
            states.append(state)
            if a < 0:
                choices.append(stop)
                marks.append(-1)
                continue
            choices.append(batch.out_arcs[state].tolist().index(a))
            marks.append(int(batch.arc_mark[a]))
            state = int(batch.arc_dst[a])
        states.append(state)
        choices.append(stop)
        assert route.states[n].tolist() == states
        assert route.choice[n].tolist() == choices
        assert route.marks[n].tolist() == marks
        assert int(route.lengths[n]) == sum(a >= 0 for a in path)
    assert bool((route.lengths < L).any())  # some paths are shorter: padding is checked


def test_where_keeps_the_chosen_rows_in_walk_order_with_their_step_counts():
    packing = Packing.of(torch.randint(4, (4, 4)), torch.tensor([2, 4, 1, 4]))
    keep = torch.tensor([True, False, True, True, False, True, True, False, True, True, True])
    index, rows = packing.where(keep)
    assert index.tolist() == [0, 2, 3, 5, 6, 8, 9, 10]
    assert rows.paths.tolist() == packing.paths[keep].tolist()
    assert rows.steps.tolist() == packing.steps[keep].tolist()
    assert rows.running == [3, 2, 1, 2]
    values = torch.arange(16.0).view(4, 4)
    placed = rows.place(rows.at(values), torch.full((4, 4), -1.0))
    assert torch.equal(
        placed,
        torch.where(
            rows.place(torch.ones(8, dtype=torch.bool), torch.zeros(4, 4, dtype=torch.bool)),
            values,
            torch.tensor(-1.0),
        ),
    )
    assert placed.eq(-1).sum() == 16 - 8
