"""SWS reads the unaligned suffixes x[i:], y[j:] at each state's positions (i, j)."""

import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers import Walk
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import new_sampler


def test_suffix_encoder_encodes_each_suffix_right_to_left():
    lats = del_ins_lattices() + [del_ins_lattices()[1]]
    sws = new_sampler("sws", lats)
    strings = [lat.x for lat in lats]  # lengths 2, 1, 0, 1: padding and an empty string
    ids, lengths = sws.symbol_ids(strings, torch.device("cpu"))
    enc = sws.enc_x.encode(ids, lengths)
    assert enc.shape == (4, ids.shape[1] + 1, sws.config.d)
    for b, s in enumerate(strings):
        for i in range(len(s) + 1):
            suffix = ids[b, i:len(s)].flip(0)
            if len(suffix):
                out, _ = sws.enc_x.gru(sws.symbol_embed(suffix)[None].double())
                expected = out[0, -1]
            else:
                expected = torch.zeros(sws.config.d, dtype=torch.float64)
            torch.testing.assert_close(enc[b, i], expected)


def test_sws_logits_read_the_suffixes_at_the_state_positions():
    lat = cipher_lattice()
    batch = LatticeBatch([lat])
    sws = new_sampler("sws", [lat])
    context = sws.prepare(batch)
    xs, lx = sws.symbol_ids([lat.x], batch.device)
    ys, ly = sws.symbol_ids([lat.y], batch.device)
    ex, ey = sws.enc_x.encode(xs, lx)[0], sws.enc_y.encode(ys, ly)[0]
    states = torch.arange(lat.num_states)
    walk = Walk(lattice=torch.zeros_like(states), state=states,
                alive=torch.ones_like(states, dtype=torch.bool), length=torch.zeros_like(states),
                last_mark=torch.zeros_like(states),
                hidden=torch.zeros(lat.num_states, sws.config.d, dtype=torch.float64))
    logits = sws.mark_logits(batch, context, walk)
    for s in range(lat.num_states):
        i, j = lat.positions[s]
        expected = sws.out_h(walk.hidden[s]) + sws.out_suffix(torch.cat([ex[i], ey[j]]))
        torch.testing.assert_close(logits[s], expected)
    # states at the same positions (and prefix) get the same logits
    same = {}
    for s in range(lat.num_states):
        same.setdefault(tuple(lat.positions[s]), []).append(s)
    group = max(same.values(), key=len)
    assert len(group) > 1
    assert torch.equal(logits[group[0]], logits[group[1]])
