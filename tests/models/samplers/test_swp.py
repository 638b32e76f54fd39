"""SWP: Algorithm 1 against a state-by-state reference, acyclicity, and a free WFST fitted by
inclusive KL."""

import numpy as np
import pytest
import torch

from nfst import CyclicLatticeError, Lattice
from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import transition_log_probs
from nfst.models.samplers.swp import Algorithm1
from tests.helpers.lattices import cipher_lattice, del_ins_lattices, stop_among_arcs_lattice
from tests.helpers.samplers import FreeWeightSampler, all_paths, fit_by_inclusive_kl, new_sampler
from tests.helpers.scorers import random_scorer


def algorithm1_reference(swp, lattice):
    """003 Algorithm 1 literally: states in reverse topological order, one at a time.
    Returns log β, log w and e per state/arc (dicts), by plain autograd-tracked ops."""
    offsets = lattice.arc_offsets
    embed, beta, log_w, arc_embed = {}, {}, {}, {}
    d = swp.config.d
    for s in range(lattice.num_states - 1, -1, -1):  # states are numbered topologically
        terms = [torch.zeros((), dtype=torch.float64)] if lattice.final[s] else []
        for a in range(offsets[s], offsets[s + 1]):
            dst, mark = int(lattice.arc_dst[a]), int(lattice.arc_mark[a])
            e = torch.sigmoid(swp.U_mark(swp.mark_embed.weight[mark]) + swp.U_state(embed[dst]))
            arc_embed[a], log_w[a] = e, swp.w(e)[0]
            terms.append(log_w[a] + beta[dst])
        beta[s] = torch.logsumexp(torch.stack(terms), 0)
        embed[s] = sum(
            (
                torch.exp(log_w[a] + beta[int(lattice.arc_dst[a])] - beta[s]) * arc_embed[a]
                for a in range(offsets[s], offsets[s + 1])
            ),
            torch.zeros(d, dtype=torch.float64),
        )
    return beta, log_w, arc_embed


def test_algorithm1_matches_the_state_by_state_reference_with_gradients():
    lats = del_ins_lattices() + [del_ins_lattices()[0]]
    batch = LatticeBatch(lats)
    swp = new_sampler("swp", lats)
    swp.reads_arc_embed = True  # so that Algorithm 1 returns the arc embeddings too
    log_w, beta, embed = swp.arc_log_weights(batch)
    g = torch.Generator().manual_seed(0)
    r_w = torch.randn(batch.num_arcs, generator=g, dtype=torch.float64)
    r_e = torch.randn(batch.num_arcs, swp.config.d, generator=g, dtype=torch.float64)
    total = beta[batch.start].sum() + (r_w * log_w).sum() + (r_e * embed).sum()
    ref_total = 0
    for b, lat in enumerate(lats):
        ref_beta, ref_w, ref_e = algorithm1_reference(swp, lat)
        s0, a0 = int(batch.state_offsets[b]), int(batch.arc_offsets[b])
        for s, v in ref_beta.items():
            assert abs(beta[s0 + s].item() - v.item()) < 1e-12
        for a, v in ref_w.items():
            assert abs(log_w[a0 + a].item() - v.item()) < 1e-12
            row = batch.backward_arc_rank[a0 + a]  # the embeddings are in level order
            torch.testing.assert_close(embed[row], ref_e[a], rtol=0, atol=1e-12)
            ref_total = ref_total + r_w[a0 + a] * v + (r_e[row] * ref_e[a]).sum()
        ref_total = ref_total + ref_beta[0]
    grads = torch.autograd.grad(total, list(swp.parameters()))
    ref_grads = torch.autograd.grad(ref_total, list(swp.parameters()))
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-9, atol=1e-12)


def test_algorithm1_gradcheck():
    lat = cipher_lattice()
    batch = LatticeBatch([lat])
    d = 3
    g = torch.Generator().manual_seed(1)
    inputs = [
        torch.randn(len(lat.mark_vocab), d, generator=g, dtype=torch.float64),
        torch.randn(d, d, generator=g, dtype=torch.float64),
        torch.randn(d, generator=g, dtype=torch.float64),
    ]
    inputs = [x.requires_grad_() for x in inputs]
    assert torch.autograd.gradcheck(lambda m, U, w: Algorithm1.apply(m, U, w, batch), inputs)
    # without the arc embeddings, and with outputs that no loss reads (no gradient)
    assert Algorithm1.apply(*inputs, batch, False)[2] is None
    assert torch.autograd.gradcheck(
        lambda m, U, w: Algorithm1.apply(m, U, w, batch, False)[:2], inputs
    )
    assert torch.autograd.gradcheck(lambda m, U, w: Algorithm1.apply(m, U, w, batch)[1], inputs)


def test_swp_transitions_are_the_backward_algorithm_of_its_weights():
    lat = cipher_lattice()
    batch = LatticeBatch([lat])
    swp = new_sampler("swp", [lat])
    log_w, _, _ = swp.arc_log_weights(batch)
    arc_lp, stop_lp = transition_log_probs(batch, log_w.detach())
    arcs, _ = all_paths(batch)
    expected = torch.stack(
        [arc_lp[row[row >= 0]].sum() + stop_lp[batch.arc_dst[row[row >= 0][-1]]] for row in arcs[0]]
    )
    torch.testing.assert_close(swp.score(batch, arcs)[0], expected, rtol=0, atol=1e-12)


def test_swp_prefix_starts_out_as_swp():
    lat = cipher_lattice()
    batch = LatticeBatch([lat])
    arcs, _ = all_paths(batch)
    swp = new_sampler("swp", [lat], seed=5)
    prefix = new_sampler("swp-prefix", [lat], seed=5)
    prefix.load_state_dict(swp.state_dict(), strict=False)
    torch.testing.assert_close(prefix.score(batch, arcs), swp.score(batch, arcs))


def test_swp_prefix_reweights_each_arc_by_the_prefix():
    """log q of every path against 003 §3.3's formula written out: q(s→s') ∝ w β(s')
    exp(g(h)·e_{s→s'}), q(STOP) ∝ [s final] exp(g_stop(h)), with Algorithm 1 and h by plain
    re-runs (the reference's own arc embeddings, a torch GRU over BOS and the marks so far),
    g moved away from zero, on a batch of several lattices, one with a final state that has
    out-arcs (where STOP competes with them)."""
    lats = del_ins_lattices() + [stop_among_arcs_lattice()]
    batch = LatticeBatch(lats)
    prefix = new_sampler("swp-prefix", lats, seed=3)
    with torch.no_grad():
        prefix.g.weight.normal_(0, 1.0, generator=torch.Generator().manual_seed(4))
        prefix.g.bias.normal_(0, 1.0)
    arcs, real = all_paths(batch)
    got = prefix.score(batch, arcs)
    for b, lat in enumerate(lats):
        beta, log_w, arc_embed = algorithm1_reference(prefix, lat)
        a0 = int(batch.arc_offsets[b])
        for i in range(arcs.shape[1]):
            if not real[b, i]:
                continue
            path = [int(a) - a0 for a in arcs[b, i] if a >= 0]
            marks = [prefix.bos] + [int(lat.arc_mark[a]) for a in path]
            h, _ = prefix.prefix.gru(prefix.prefix.embed(torch.tensor(marks))[None])
            g = prefix.g(h[0])  # (L + 1, d + 1): g and g_stop at each position
            state, log_q = 0, 0.0
            for t, taken in enumerate(path + [None]):
                out = range(lat.arc_offsets[state], lat.arc_offsets[state + 1])
                scores = {
                    a: log_w[a] + beta[int(lat.arc_dst[a])] + g[t, :-1] @ arc_embed[a] for a in out
                }
                if lat.final[state]:
                    scores[None] = g[t, -1]
                log_q = (
                    log_q + scores[taken] - torch.logsumexp(torch.stack(list(scores.values())), 0)
                )
                state = int(lat.arc_dst[taken]) if taken is not None else state
            torch.testing.assert_close(got[b, i], log_q, rtol=0, atol=1e-10)


def cyclic_lattice():
    """0 --a--> 1 --b--> 0, state 1 final: a cycle, so height is -1 everywhere."""
    return Lattice(
        mark_vocab=("a", "b"),
        x=("x",),
        y=("y",),
        arc_src=np.array([0, 1]),
        arc_dst=np.array([1, 0]),
        arc_mark=np.array([0, 1]),
        final=np.array([False, True]),
        positions=np.zeros((2, 2), dtype=np.int64),
        height=np.array([-1, -1]),
    )


@pytest.mark.parametrize("name", ["swp", "swp-prefix"])
def test_swp_refuses_cyclic_lattices(name):
    swp = new_sampler(name, del_ins_lattices())

    class CyclicBatch:  # what a batch that admitted cyclic lattices would look like
        lattices = [cyclic_lattice()]

    with pytest.raises(CyclicLatticeError, match="swp"):
        swp.check_batch(CyclicBatch())
    with pytest.raises(CyclicLatticeError):
        swp.sample(LatticeBatch([cyclic_lattice()]), 1)


def test_free_arc_weights_fitted_by_inclusive_kl_reach_the_posterior():
    """A WFST can represent an arc-factored posterior exactly; sampled inclusive-KL steps get
    KL(p ‖ q) from well above 0 to near 0.

    q starts where it proposes every path: the self-normalised estimate only learns about
    paths that q proposes (000 §5), and with a q that rarely proposes the posterior's paths
    it sharpens on its own guesses instead. On del/ins lattices every path has the same
    marks, so the posterior is uniform and q starts from random weights; on the cipher
    lattice the posterior is peaked and q starts uniform over paths (zero weights)."""
    g = torch.Generator().manual_seed(8)
    for group, random_start in ((del_ins_lattices(), True), ([cipher_lattice()], False)):
        batch = LatticeBatch(group)
        scorer = random_scorer(len(group[0].mark_vocab), seed=7, scale=2.0)
        start = (
            torch.randn(batch.num_arcs, generator=g, dtype=torch.float64)
            if random_start
            else torch.zeros(batch.num_arcs, dtype=torch.float64)
        )
        sampler = FreeWeightSampler(batch, start)
        before, after = fit_by_inclusive_kl(sampler, scorer, batch, steps=150, lr=0.05)
        assert before.max() > 0.5
        assert after.max() < 0.05, (before, after)
