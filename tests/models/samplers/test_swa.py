"""SWA encodes x # y^R with a bidirectional GRU and attends over it, ignoring padding."""

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers import SamplerConfig, make_sampler
from nfst.models.samplers.choices import legal_log_softmax
from nfst.models.samplers.record import WalkRecord
from nfst.models.samplers.symbols import SEPARATOR
from tests.helpers.lattices import cipher_lattice, del_ins_lattices, vocabulary_of
from tests.helpers.samplers import assert_same_parameter_gradients, new_sampler


def test_encoding_reads_x_separator_reversed_y_and_ignores_padding():
    lats = del_ins_lattices()
    swa = new_sampler("swa", lats)
    batch = LatticeBatch(lats)
    enc = swa.prepare(batch)
    for b, lat in enumerate(lats):
        ids, _ = swa.vocabulary.symbol_ids(
            [tuple(lat.x) + (SEPARATOR,) + tuple(reversed(lat.y))], batch.device
        )
        alone, _ = swa.encoder(swa.symbol_embed(ids).double())
        n = ids.shape[1]
        torch.testing.assert_close(enc.enc[b, :n], alone[0])
        assert not enc.pad[b, :n].any() and enc.pad[b, n:].all()


def test_unknown_symbols_share_one_embedding():
    swa = new_sampler("swa", del_ins_lattices())  # knows a, b, c, d only
    ids, lengths = swa.vocabulary.symbol_ids([("a", "zz", "yy", SEPARATOR)], torch.device("cpu"))
    assert lengths == [4] and ids[0, 1] == ids[0, 2] != ids[0, 0]
    lat = del_ins_lattices()[0]
    lat.x = ("a", "zz")  # as if the pair had an unseen letter
    assert swa.sample(LatticeBatch([lat]), 2).log_q.isfinite().all()


def test_a_batch_of_another_task_is_refused():
    swa = new_sampler("swa", del_ins_lattices())
    with pytest.raises(ValueError, match="another task"):
        swa.sample(LatticeBatch([cipher_lattice()]), 1)


@pytest.mark.parametrize("lattice_major", [True, False])
@pytest.mark.parametrize("train", [False, True])
def test_logits_are_003_2_with_each_walkers_dropout(train, lattice_major):
    """The logits at the start are W[m_h ⊙ h; m_a ⊙ Σ_i a_i enc_i] + b (003:2–3) and log q
    their legal softmax, m the walker's dropout masks (1 in eval mode), whichever way the
    attention is batched: lattice-major walkers (their own layout), walkers grouped by
    lattice (padded to the largest group), each walker's encoding gathered (a static walk's),
    against the formula walker by walker, values and gradients in float64."""
    lats = del_ins_lattices()
    batch = LatticeBatch(lats)
    torch.manual_seed(0)
    swa = (
        make_sampler("swa", vocabulary_of(lats), SamplerConfig(d=8, dropout=0.5))
        .double()
        .train(train)
    )
    lattice = torch.arange(len(lats)).repeat_interleave(3)
    if not lattice_major:  # groups of 5, 3 and 1 walkers, out of order
        lattice = torch.tensor([1, 0, 0, 2, 0, 1, 0, 0, 1])
    record = WalkRecord(len(lattice))
    context = swa.prepare(batch)
    walk = swa.start(batch, context, lattice, record)
    lp = swa.log_probs(batch, context, walk)
    h, mask = walk.hidden
    m_h = record.masks[swa.drop_h] if train else torch.ones_like(h)
    m_a = record.masks[swa.drop_att] if train else torch.ones_like(h)
    assert mask is None if not train else mask is m_a
    logits = swa.logits(context, lattice, h, mask, record, per_lattice=3 if lattice_major else None)
    static = swa.logits(context, lattice, h, mask, record, static=True)
    expected = []
    for n, b in enumerate(lattice.tolist()):
        enc = context.enc[b, ~context.pad[b]]
        attended = torch.softmax(enc @ h[n], 0) @ enc
        expected.append(swa.out(torch.cat([m_h[n] * h[n], m_a[n] * attended])))
    expected = torch.stack(expected)
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(static, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(
        lp, legal_log_softmax(batch, walk.state, expected), rtol=0, atol=1e-12
    )
    # and the gradients of a random readout of the logits, in every weight
    assert_same_parameter_gradients(swa, logits, expected)
    assert not train or (m_h == 0).any() and (m_a == 0).any()
