"""sws-mlp: SWS's logits plus an MLP over [h; enc_x; enc_y]; and why SWS needs it on cipher."""

import itertools

import numpy as np
import pytest
import torch

from nfst import Lattice
from nfst.dp.batch import LatticeBatch
from nfst.models.samplers import SamplerConfig, Vocabulary, make_sampler
from tests.helpers.samplers import assert_same_parameter_gradients, suffix_logits_at_every_state


@pytest.mark.parametrize("train", [False, True])
def test_logits_are_sws_logits_plus_an_mlp_of_the_prefix_and_both_suffixes(train):
    """At every state s, with (i, j) its positions and m the walker's dropout masks (1 in eval
    mode): W[1; m_h h; m_x e_x; m_y e_y] + U tanh(V_h m_h h + b + V_x m_x e_x + V_y m_y e_y),
    e_x = enc_x(x_{≥i}), e_y = enc_y(y_{≥j}); values and gradients in float64."""
    sampler, lat, context, logits, h, (m_h, m_x, m_y) = suffix_logits_at_every_state(
        "sws-mlp", train
    )
    expected = []
    for s in range(lat.num_states):
        i, j = lat.positions[s]
        suffixes = torch.cat([m_x[s] * context.x[0, i], m_y[s] * context.y[0, j]])
        hidden = torch.tanh(sampler.mix_h(m_h[s] * h[s]) + sampler.mix_suffix(suffixes))
        expected.append(
            sampler.out_h(m_h[s] * h[s]) + sampler.out_suffix(suffixes) + sampler.mix_out(hidden)
        )
    expected = torch.stack(expected)
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-12)
    assert_same_parameter_gradients(sampler, logits, expected)


def shift_cipher_population(letters: int, length: int, ciphers: int) -> tuple:
    """Every pair of a toy cipher with its generating cipher, equally likely: x any string of
    ``length`` letters, cipher i of ``ciphers``, y = x + i letter by letter (mod ``letters``).
    x alone is uniform and so is y given any i: neither says anything about i, while (x, y)
    names it. Each pair's lattice is just the choice: the start state, one arc cipher_i per
    cipher, all into one final state (so q of the path is q of the choice at the start state,
    where a SWS-like sampler reads enc_x(x) and enc_y(y)). Returns the batch and the
    generating paths' arcs (P, 1, 1)."""
    vocab = tuple(f"cipher_{i}" for i in range(ciphers))
    lattices, arcs = [], []
    for x in itertools.product(range(letters), repeat=length):
        for i in range(ciphers):
            y = [(a + i) % letters for a in x]
            lattices.append(
                Lattice(
                    mark_vocab=vocab,
                    x=tuple(chr(97 + a) for a in x),
                    y=tuple(chr(97 + b) for b in y),
                    arc_src=np.zeros(ciphers, dtype=np.int64),
                    arc_dst=np.ones(ciphers, dtype=np.int64),
                    arc_mark=np.arange(ciphers),
                    final=np.array([False, True]),
                    positions=np.array([[0, 0], [length, length]]),
                    height=np.array([1, 0]),
                )
            )
            arcs.append(len(arcs) * ciphers + i)  # batch-global: C arcs per lattice
    return LatticeBatch(lattices), torch.tensor(arcs)[:, None, None]


def test_an_additive_choice_stays_at_chance_where_an_interaction_names_the_cipher():
    """docs/results/disagreements.md's argument for cipher: SWS scores cipher i as
    f_i(x) + g_i(y) (plus a constant of h_0), and when neither x nor y alone is informative, the
    expected cross-entropy of any such additive choice is minimised by the uniform choice (it is
    convex in (f, g), and uniform q satisfies its stationary conditions E[1{i = k} | x] = 1/C =
    E[q(k | x, y) | x], and the same given y). Trained by exact supervised likelihood on the
    whole population of a toy cipher (so the loss is the population cross-entropy and no
    memorising is possible; q over the population is q's expectation on any fresh pair), SWS
    stays at q = 1/C on every pair, while sws-mlp names the cipher."""
    letters, length, ciphers = 4, 3, 3
    batch, arcs = shift_cipher_population(letters, length, ciphers)
    symbols = [chr(97 + a) for a in range(letters)]
    q = {}
    for name in ("sws", "sws-mlp"):
        torch.manual_seed(0)
        sampler = make_sampler(
            name, Vocabulary(batch.mark_vocab, symbols), SamplerConfig(d=8, dropout=0.0)
        )
        opt = torch.optim.Adam(sampler.parameters(), lr=3e-2)
        for _ in range(80):
            loss = -sampler.score(batch, arcs).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            q[name] = sampler.score(batch, arcs).exp().flatten()
    assert abs(float(q["sws"].mean()) - 1 / ciphers) < 0.01
    assert float((q["sws"] - 1 / ciphers).abs().max()) < 0.05  # on every pair, not on average
    assert float(q["sws-mlp"].mean()) > 0.9
