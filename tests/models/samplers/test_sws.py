"""SWS reads the unaligned suffixes x[i:], y[j:] at each state's positions (i, j)."""

import pytest
import torch

from tests.helpers.lattices import del_ins_lattices
from tests.helpers.samplers import (
    assert_same_parameter_gradients,
    new_sampler,
    suffix_logits_at_every_state,
)


def test_suffix_encoder_encodes_each_suffix_right_to_left():
    lats = del_ins_lattices() + [del_ins_lattices()[1]]
    sws = new_sampler("sws", lats)
    strings = [lat.x for lat in lats]  # lengths 2, 1, 0, 1: padding and an empty string
    ids, lengths = sws.vocabulary.symbol_ids(strings, torch.device("cpu"))
    enc = sws.enc_x.encode(ids, lengths)
    assert enc.shape == (4, ids.shape[1] + 1, sws.config.d)
    for b, s in enumerate(strings):
        for i in range(len(s) + 1):
            suffix = ids[b, i : len(s)].flip(0)
            if len(suffix):
                out, _ = sws.enc_x.gru(sws.symbol_embed(suffix)[None].double())
                expected = out[0, -1]
            else:
                expected = torch.zeros(sws.config.d, dtype=torch.float64)
            torch.testing.assert_close(enc[b, i], expected)


@pytest.mark.parametrize("train", [False, True])
def test_sws_logits_read_the_suffixes_at_the_state_positions(train):
    """At every state s, logits = W[1; m_h ⊙ h; m_x ⊙ enc_x(x_{≥i}); m_y ⊙ enc_y(y_{≥j})]
    (003:4) with (i, j) s's positions, m the walker's dropout masks (1 in eval mode): values
    and gradients in float64."""
    sws, lat, context, logits, h, (m_h, m_x, m_y) = suffix_logits_at_every_state("sws", train)
    expected = []
    for s in range(lat.num_states):
        i, j = lat.positions[s]
        expected.append(
            sws.out_h(m_h[s] * h[s])
            + sws.out_suffix(torch.cat([m_x[s] * context.x[0, i], m_y[s] * context.y[0, j]]))
        )
    expected = torch.stack(expected)
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-12)
    # and the gradients of a random readout, in every weight (the suffix logits are formed
    # once per walk and read per step)
    assert_same_parameter_gradients(sws, logits, expected)
    logits = logits.detach()
    if train:
        return
    # states at the same positions (and prefix) get the same logits
    same = {}
    for s in range(lat.num_states):
        same.setdefault(tuple(lat.positions[s]), []).append(s)
    group = max(same.values(), key=len)
    assert len(group) > 1
    assert torch.equal(logits[group[0]], logits[group[1]])
