import math

import numpy as np
import pynini
import pytest
import torch
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from nfst import MarkedFST, NfstError, compile_lattice
from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import (
    arc_posteriors,
    backward,
    forward,
    log_partition,
    log_path_count,
    sample,
    transition_log_probs,
)
from nfst.dp.semiring import MaxSemiring
from nfst.fst import lattice_to_fst, reverse_shortest_distance
from tests.helpers.brute import chi_square_critical, lattice_paths
from tests.helpers.lattices import small_lattices
from tests.helpers.strategies import examples, small_mfsts


def random_weights(batch, seed, scale=2.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch.num_arcs, generator=g, dtype=torch.float64) * scale).to(batch.device)


def brute_log_z(lattice, w):
    return torch.logsumexp(
        torch.stack(
            [w[p].sum() if p else torch.zeros((), dtype=w.dtype) for p in lattice_paths(lattice)]
        ),
        0,
    )


def one_state_loops() -> MarkedFST:
    """A 1-state MFST of 6 loops: its (abb, ddd) lattice has 42 arcs, where pynini's default
    shortestdistance delta is off by 1.7e-6 for weight seed 293."""
    T = MarkedFST("loops")
    T.set_final(0)
    for inp, out, marks in [
        ("", "d", "no"),
        ("a", "d", "nn"),
        ("b", "d", "oo"),
        ("a", "d", "om"),
        ("b", "", "mn"),
        ("b", "c", "oo"),
    ]:
        T.add_arc(0, 0, input=inp, output=out, marks=list(marks))
    return T


# Most random (T, x, y) have no lattice (assume rejects them): about 1 seed in 100 trips the
# filtering health check, as in tests/fst/test_history.py.
@settings(
    max_examples=examples(60),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    small_mfsts(),
    st.lists(st.sampled_from("ab"), max_size=3),
    st.lists(st.sampled_from("cd"), max_size=3),
    st.integers(0, 2**31),
)
@example(one_state_loops(), list("abb"), list("ddd"), 293)
def test_backward_matches_openfst_on_random_lattices(T, x, y, seed):
    try:
        lat = compile_lattice(T, x, y)
    except NfstError:
        assume(False)
    batch = LatticeBatch([lat, lat])
    w = random_weights(batch, seed)
    beta = backward(batch, w)
    for b in range(2):
        wb = w[batch.arc_offsets[b] : batch.arc_offsets[b + 1]].numpy()
        ref = reverse_shortest_distance(lat, wb)
        # The exact values agree with pynini's own shortestdistance. Its log64 weights are
        # float64, but reach Python as text: float(Weight) parses 9 significant digits, a
        # relative error ≤ 5e-9 (rtol 1e-8 leaves a factor 2). Its default delta (1e-6) drops
        # every relaxation that would move a distance by ≤ delta: an absolute error of up to
        # delta per arc (1.7e-6 in the example above); with delta=1e-15, at most A · 1e-15.
        # Beside it, float64 rounding: a few eps64 per ⊕ over ≤ A arcs, relative to max |β|.
        sd = pynini.shortestdistance(lattice_to_fst(lat, wb), delta=1e-15, reverse=True)
        rounded = [-float(d) for d in sd]
        finite = np.abs(ref[np.isfinite(ref)])
        scale = finite.max() if finite.size else 0.0
        atol = lat.num_arcs * (1e-15 + 4 * np.finfo(np.float64).eps * scale)
        np.testing.assert_allclose(rounded, ref, rtol=1e-8, atol=atol)
        ours = beta[batch.state_offsets[b] : batch.state_offsets[b + 1]].numpy()
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-12)


def test_backward_and_forward_match_brute_force(device):
    lats = small_lattices()
    batch = LatticeBatch(lats, device)
    w = random_weights(batch, 0)
    log_z = log_partition(batch, w).cpu()
    best = log_partition(batch, w, semiring=MaxSemiring).cpu()
    alpha = forward(batch, w).cpu()
    beta = backward(batch, w).cpu()
    w, batch = w.cpu(), batch.to("cpu")
    for b, lat in enumerate(lats):
        wb = w[batch.arc_offsets[b] : batch.arc_offsets[b + 1]]
        scores = torch.stack([wb[p].sum() for p in lattice_paths(lat)])
        assert torch.allclose(log_z[b], torch.logsumexp(scores, 0), rtol=1e-12)
        assert torch.allclose(best[b], scores.max(), rtol=1e-12)
        finals = batch.state_offsets[b] + torch.as_tensor(np.flatnonzero(lat.final))
        assert torch.allclose(torch.logsumexp(alpha[finals], 0), log_z[b], rtol=1e-12)
    # α(s) + β(s) ≤ log Z with equality somewhere on every path
    assert (alpha + beta <= log_z[batch.state_lattice] + 1e-9).all()


def test_gradient_is_arc_posterior(device):
    lats = small_lattices()
    batch = LatticeBatch(lats, device)
    w = random_weights(batch, 1).requires_grad_()
    log_partition(batch, w).sum().backward()
    post = arc_posteriors(batch, w.detach())
    assert torch.allclose(w.grad, post, atol=1e-12)
    w, post, batch = w.cpu(), post.cpu(), batch.to("cpu")
    for b, lat in enumerate(lats):  # against enumeration
        wb = w.detach()[batch.arc_offsets[b] : batch.arc_offsets[b + 1]]
        paths = lattice_paths(lat)
        p = torch.softmax(torch.stack([wb[q].sum() for q in paths]), 0)
        expected = torch.zeros(lat.num_arcs, dtype=torch.float64)
        for q, pq in zip(paths, p):
            expected[q] += pq
        assert torch.allclose(
            post[batch.arc_offsets[b] : batch.arc_offsets[b + 1]], expected, atol=1e-12
        )


@pytest.mark.parametrize("semiring", ["log", "max"])
def test_gradcheck_all_states(semiring):
    from nfst.dp.semiring import SEMIRINGS

    batch = LatticeBatch(small_lattices()[:3])
    w = random_weights(batch, 2).requires_grad_()
    f = torch.zeros(batch.num_states, dtype=torch.float64).masked_fill(~batch.final, -math.inf)
    f = (f + torch.randn(batch.num_states, dtype=torch.float64) * 0.1).requires_grad_()
    # gradients of every β(s) through a random projection, wrt arc and final weights
    proj = torch.randn(batch.num_states, dtype=torch.float64)

    def func(w, f):
        return (backward(batch, w, f, SEMIRINGS[semiring]).nan_to_num(neginf=0) * proj).sum()

    if semiring == "log":
        assert torch.autograd.gradcheck(func, (w, f), check_undefined_grad=False)
    else:  # max is piecewise linear: compare with finite differences away from ties
        (gw, gf) = torch.autograd.grad(func(w, f), (w, f))
        eps = 1e-6
        for i in range(0, batch.num_arcs, 3):
            d = torch.zeros_like(w)
            d[i] = eps
            fd = (func(w + d, f) - func(w - d, f)) / (2 * eps)
            assert abs(fd - gw[i]) < 1e-6


def test_minus_infinity_arcs_have_zero_gradient():
    batch = LatticeBatch(small_lattices())
    w = random_weights(batch, 3)
    w[::4] = -math.inf
    w.requires_grad_()
    beta = backward(batch, w)
    beta.nan_to_num(neginf=0.0).sum().backward()
    assert not torch.isnan(w.grad).any()
    assert (w.grad[::4] == 0).all()


def test_viterbi_gradient_is_the_best_paths_indicator_with_minus_infinity_arcs():
    """Max semiring with some arcs of weight -inf: ∂ best / ∂ w is exactly 1 on the arcs of the
    best path (by enumeration) and 0 elsewhere, -inf arcs included, and ∂ best / ∂ final is 1
    at its last state only; a lattice whose every path crosses a -inf arc (the start's arcs
    are all -inf, the states after them still have finite paths) gets gradient 0 throughout."""
    lats = small_lattices()
    batch = LatticeBatch(lats)
    w = random_weights(batch, 6)
    g = torch.Generator().manual_seed(7)
    for b, lat in enumerate(lats):  # -inf on about half the arcs off one path kept finite
        paths = lattice_paths(lat)
        keep = paths[int(torch.randint(len(paths), (), generator=g))]
        off = int(batch.arc_offsets[b])
        for a in range(lat.num_arcs):
            if a not in keep and float(torch.rand((), generator=g)) < 0.5:
                w[off + a] = -math.inf
    dead = 3  # the cipher lattice: no finite path
    off = int(batch.arc_offsets[dead])
    w[off + int(lats[dead].arc_offsets[0]) : off + int(lats[dead].arc_offsets[1])] = -math.inf
    f = batch.final_weights(torch.float64)
    w.requires_grad_()
    f.requires_grad_()
    best = log_partition(batch, w, f, semiring=MaxSemiring)
    best.sum().backward()
    assert bool(torch.isfinite(w.grad).all()) and bool(torch.isfinite(f.grad).all())
    alive = 0
    for b, lat in enumerate(lats):
        a0, s0 = int(batch.arc_offsets[b]), int(batch.state_offsets[b])
        wb = w.detach()[a0 : a0 + lat.num_arcs]
        paths = lattice_paths(lat)
        scores = torch.stack([wb[p].sum() if p else torch.zeros((), dtype=w.dtype) for p in paths])
        expected_w = torch.zeros(lat.num_arcs, dtype=torch.float64)
        expected_f = torch.zeros(lat.num_states, dtype=torch.float64)
        if torch.isfinite(scores.max()):
            alive += int(bool(torch.isneginf(wb).any()))  # -inf arcs beside a finite best
            top = torch.topk(scores, 2).values if len(paths) > 1 else scores
            assert len(paths) == 1 or top[0] - top[1] > 1e-9  # one best path
            path = paths[int(scores.argmax())]
            expected_w[path] = 1.0
            expected_f[int(lat.arc_dst[path[-1]]) if path else 0] = 1.0
            assert (wb[path] > -math.inf).all()
        else:
            assert b == dead and best[b] == -math.inf
        assert torch.equal(w.grad[a0 : a0 + lat.num_arcs], expected_w), b
        assert torch.equal(f.grad[s0 : s0 + lat.num_states], expected_f), b
    assert alive >= 2
    assert bool((w.grad[torch.isneginf(w.detach())] == 0).all())
    # the dead lattice has finite arcs past its start (a mask-free gradient would reach them)
    assert bool(torch.isfinite(w.detach()[off : off + lats[dead].num_arcs]).any())


def test_float32_agrees_with_float64():
    batch = LatticeBatch(small_lattices())
    w = random_weights(batch, 4)
    z64 = log_partition(batch, w)
    z32 = log_partition(batch, w.float())
    assert z32.dtype == torch.float32
    assert torch.allclose(z32.double(), z64, rtol=1e-5)


def test_path_count():
    lats = small_lattices()
    counts = log_path_count(LatticeBatch(lats)).exp()
    assert [round(c) for c in counts.tolist()] == [lat.num_paths() for lat in lats]
    assert [lat.num_paths() for lat in lats] == [len(lattice_paths(lat)) for lat in lats]


def test_exact_sampling_frequencies(device):
    """χ² goodness of fit of sampled paths against the exact path distribution."""
    lats = small_lattices()
    batch = LatticeBatch(lats, device)
    w = random_weights(batch, 5, scale=1.0)
    n = 20000
    arcs, log_prob = sample(batch, w, n, generator=torch.Generator(device).manual_seed(0))
    assert arcs.device == log_prob.device == batch.device
    arcs, log_prob, w, batch = arcs.cpu(), log_prob.cpu(), w.cpu(), batch.to("cpu")
    tested = 0
    for b, lat in enumerate(lats):
        off = int(batch.arc_offsets[b])
        wb = w[off : off + lat.num_arcs]
        paths = lattice_paths(lat)
        p = torch.softmax(
            torch.stack([wb[q].sum() if q else torch.zeros((), dtype=w.dtype) for q in paths]), 0
        ).numpy()
        index = {tuple(q): i for i, q in enumerate(paths)}
        counts = np.zeros(len(paths))
        for row, lp in zip(arcs[b].tolist(), log_prob[b].tolist()):
            q = tuple(a - off for a in row if a >= 0)
            counts[index[q]] += 1
            assert math.isclose(lp, math.log(p[index[q]]), rel_tol=1e-9, abs_tol=1e-9)
        if len(paths) > 1:
            stat = ((counts - n * p) ** 2 / (n * p)).sum()
            assert stat < chi_square_critical(len(paths) - 1)
            tested += 1
    assert tested >= 1  # a lattice of more than one path


def test_weights_of_wrong_shape():
    batch = LatticeBatch(small_lattices())
    with pytest.raises(ValueError, match="expected arc weights"):
        backward(batch, torch.zeros(3, dtype=torch.float64))


def test_dp_keeps_every_tensor_on_the_batch_device():
    """On PyTorch's shape-only "meta" device, a tensor made on the CPU by mistake raises when
    it meets the batch's tensors: this is how a CPU-only machine checks that the DP runs
    unchanged on a GPU (sampling is left out: it asks whether any path is still alive)."""
    batch = LatticeBatch(small_lattices(), device="meta")
    w = torch.empty(batch.num_arcs, dtype=torch.float64, device="meta", requires_grad=True)
    outputs = [
        backward(batch, w),
        forward(batch, w),
        log_partition(batch, w, semiring=MaxSemiring),
        arc_posteriors(batch, w),
        *transition_log_probs(batch, w),
        log_path_count(batch),
        *torch.autograd.grad(log_partition(batch, w).sum(), w),
    ]
    assert all(out.device.type == "meta" for out in outputs)
