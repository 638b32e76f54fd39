"""SWA encodes x # y^R with a bidirectional GRU and attends over it, ignoring padding."""

import pytest
import torch

from nfst.dp.batch import LatticeBatch
from nfst.models.samplers.base import SEPARATOR
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import new_sampler


def test_encoding_reads_x_separator_reversed_y_and_ignores_padding():
    lats = del_ins_lattices()
    swa = new_sampler("swa", lats)
    batch = LatticeBatch(lats)
    enc = swa.prepare(batch)
    for b, lat in enumerate(lats):
        ids, _ = swa.symbol_ids([tuple(lat.x) + (SEPARATOR,) + tuple(reversed(lat.y))],
                                batch.device)
        alone, _ = swa.encoder(swa.symbol_embed(ids).double())
        n = ids.shape[1]
        torch.testing.assert_close(enc.enc[b, :n], alone[0])
        assert not enc.pad[b, :n].any() and enc.pad[b, n:].all()


def test_unknown_symbols_share_one_embedding():
    swa = new_sampler("swa", del_ins_lattices())  # knows a, b, c, d only
    ids, lengths = swa.symbol_ids([("a", "zz", "yy", SEPARATOR)], torch.device("cpu"))
    assert lengths == [4] and ids[0, 1] == ids[0, 2] != ids[0, 0]
    lat = del_ins_lattices()[0]
    lat.x = ("a", "zz")  # as if the pair had an unseen letter
    assert swa.sample(LatticeBatch([lat]), 2).log_q.isfinite().all()


def test_a_batch_of_another_task_is_refused():
    swa = new_sampler("swa", del_ins_lattices())
    with pytest.raises(ValueError, match="another task"):
        swa.sample(LatticeBatch([cipher_lattice()]), 1)
