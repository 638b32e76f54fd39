"""The mark n-gram scorer as a WFST (nfst.models.ngram): exact log Z, arc posteriors and
posterior samples, against enumeration of every path."""

import math

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nfst import NfstError, compile_lattice
from nfst.dp.batch import LatticeBatch
from nfst.models.ngram import NgramScorer
from tests.helpers.brute import chi_square_critical, lattice_paths
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import all_paths, exact_log_p
from tests.helpers.scorers import padded
from tests.helpers.strategies import examples, small_mfsts


def random_ngram(V, order, seed, scale=1.5):
    scorer = NgramScorer(V, order)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        scorer.logits.copy_(
            torch.randn(scorer.logits.shape, generator=g, dtype=torch.float64) * scale
        )
    return scorer


def brute_log_p(scorer, marks):
    """log p̃ of one mark string by the definition, a plain loop over positions."""
    V, n = scorer.vocab_size, scorer.order
    table = torch.log_softmax(scorer.logits.detach(), -1)
    context = [V] * (n - 1)
    total = 0.0
    for m in list(marks) + [V]:
        h = 0
        for c in context[len(context) - (n - 1) :] if n > 1 else []:
            h = h * (V + 1) + c
        total += float(table[h, m])
        context.append(m)
    return total


@pytest.mark.parametrize("order", [1, 2, 3])
def test_log_prob_is_the_definition_and_the_step_interface_agrees(order):
    V = 4
    scorer = random_ngram(V, order, seed=order)
    strings = [[0, 1, 2], [], [3, 3, 3, 3, 0], [2]]
    marks, lengths = padded(strings)
    marks[1, 1:] = 2  # junk past an end is ignored
    lp = scorer.log_prob(marks, lengths)
    for s, value in zip(strings, lp.tolist()):
        assert value == pytest.approx(brute_log_p(scorer, s), abs=1e-12)
    assert torch.allclose(scorer.log_prob_tree(padded(strings)[0], lengths), lp, atol=1e-12)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_log_partition_and_posteriors_match_enumeration(order, device):
    batch = small_batch(device)
    scorer = random_ngram(len(batch.mark_vocab), order, seed=10 + order).to(device)
    log_z = scorer.log_partition(batch).cpu()
    post = scorer.arc_posteriors(batch).cpu()
    batch_cpu = batch.to("cpu")
    scorer = scorer.cpu()
    arcs, mask = all_paths(batch_cpu)
    log_p = exact_log_p(scorer, batch_cpu, arcs).detach().masked_fill(~mask, -math.inf)
    assert torch.allclose(log_z, torch.logsumexp(log_p, 1), atol=1e-10)
    p = torch.softmax(log_p, 1)
    expected = torch.zeros(batch_cpu.num_arcs, dtype=torch.float64)
    for b in range(batch_cpu.batch_size):
        for i in range(arcs.shape[1]):
            if mask[b, i]:
                path = arcs[b, i][arcs[b, i] >= 0]
                expected[path] += p[b, i]
    assert torch.allclose(post, expected, atol=1e-10)


@settings(
    max_examples=examples(30),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    small_mfsts(),
    st.lists(st.sampled_from("ab"), max_size=3),
    st.lists(st.sampled_from("cd"), max_size=3),
    st.integers(1, 3),
    st.integers(0, 2**31),
)
def test_log_partition_on_random_lattices(T, x, y, order, seed):
    try:
        lat = compile_lattice(T, x, y)
    except NfstError:
        assume(False)
    scorer = random_ngram(len(lat.mark_vocab), order, seed)
    strings = [[lat.mark_vocab.index(m) for m in w] for w in lat.mark_strings()]
    brute = torch.logsumexp(scorer.log_prob(*padded(strings)).detach(), 0)
    assert float(scorer.log_partition(LatticeBatch([lat])).detach()) == pytest.approx(
        float(brute), abs=1e-9
    )


def test_gradient_of_the_log_likelihood_is_exact():
    batch = small_batch()
    scorer = random_ngram(len(batch.mark_vocab), 2, seed=3)
    scorer.log_partition(batch).sum().backward()
    arcs, mask = all_paths(batch)
    logits = scorer.logits.detach().clone().requires_grad_()
    reference = NgramScorer(scorer.vocab_size, 2)
    reference.logits = torch.nn.Parameter(logits)
    log_p = exact_log_p(reference, batch, arcs).masked_fill(~mask, -math.inf)
    torch.logsumexp(log_p, 1).sum().backward()
    assert torch.allclose(scorer.logits.grad, reference.logits.grad, atol=1e-10)


@pytest.mark.parametrize("order", [1, 3])
def test_posterior_scores_exactly_and_samples_in_proportion(order):
    batch = small_batch()
    scorer = random_ngram(len(batch.mark_vocab), order, seed=order, scale=1.0)
    posterior = scorer.posterior()
    arcs, mask = all_paths(batch)
    log_p = exact_log_p(scorer, batch, arcs).detach().masked_fill(~mask, -math.inf)
    exact = log_p - torch.logsumexp(log_p, 1, keepdim=True)
    scored = posterior.score(batch, arcs)
    assert torch.allclose(scored[mask], exact[mask], atol=1e-10)
    n = 4000
    drawn = posterior.sample(batch, n, torch.Generator().manual_seed(0))
    assert torch.allclose(drawn.log_q, posterior.score(batch, drawn.arcs), atol=1e-10)
    for b, lat in enumerate(batch.lattices):  # χ² goodness of fit of the path frequencies
        paths = [tuple(int(a) + int(batch.arc_offsets[b]) for a in p) for p in lattice_paths(lat)]
        index = {p: i for i, p in enumerate(paths)}
        counts = torch.zeros(len(paths), dtype=torch.float64)
        for row in drawn.arcs[b].tolist():
            counts[index[tuple(a for a in row if a >= 0)]] += 1
        probs = torch.tensor([math.exp(exact[b, i]) for i in range(len(paths))])
        chi2 = float(((counts - n * probs) ** 2 / (n * probs)).sum())
        assert chi2 < chi_square_critical(len(paths) - 1), (b, chi2)


def test_order_must_be_positive():
    with pytest.raises(ValueError, match="order"):
        NgramScorer(3, 0)
