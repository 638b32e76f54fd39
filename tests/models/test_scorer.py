"""Scorers: whole-string and step-by-step scoring agree, a trained LSTM scorer is a
(sub-)probability distribution, and the arc-factored scorer is a WFST on the lattice."""

import itertools
import math

import torch

from nfst.dp.batch import LatticeBatch
from nfst.dp.passes import log_partition
from nfst.models.samplers import SamplerConfig
from nfst.models.scorer import ArcFactoredScorer, LSTMScorer, distinct_strings
from nfst.train.scorer import ScorerConfig, train_scorer
from tests.helpers.lattices import cipher_lattice, del_ins_lattices, small_batch, vocabulary_of
from tests.helpers.samplers import all_paths, exact_log_p, repeated_paths
from tests.helpers.scorers import padded, random_scorer


def step_by_step(scorer, strings):
    """Σ_t log p(ω_t | ω_<t) + log p(EOS | ω) via start/next_log_probs/advance, with the
    prefixes shuffled by select_state half way."""
    n = len(strings)
    state, total = scorer.start(n), torch.zeros(n, dtype=torch.float64)
    order = torch.arange(n)
    for t in range(max(len(s) for s in strings) + 1):
        lp = scorer.next_log_probs(state).double()
        for row, i in enumerate(order.tolist()):
            s = strings[i]
            if t < len(s):
                total[i] += lp[row, s[t]]
            elif t == len(s):
                total[i] += lp[row, scorer.eos]
        nxt = torch.tensor([strings[i][t] if t < len(strings[i]) else 0 for i in order.tolist()])
        state = scorer.advance(state, nxt)
        if t == 1:  # reorder (and duplicate nothing): the engine's resampling path
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))
            state, order = scorer.select_state(state, perm), order[perm]
    return total


def test_prefix_tree_scoring_matches_log_prob(device):
    """Shared prefixes, a duplicate, a prefix of another string and the empty string."""
    scorer = LSTMScorer(5, hidden=8, layers=2, dropout=0.3).double().eval().to(device)
    strings = [[0, 1, 2], [0, 1, 3, 3], [], [0, 1, 2], [0, 1], [4], [4, 0, 0, 0, 0, 1]]
    marks, lengths = padded(strings)
    marks, lengths = marks.to(device), lengths.to(device)
    torch.testing.assert_close(
        scorer.log_prob_tree(marks, lengths), scorer.log_prob(marks, lengths)
    )
    groups = torch.tensor([1, 0, 1, 1, 0, 3, 3], device=device)
    torch.testing.assert_close(
        scorer.log_prob_tree(marks, lengths, groups), scorer.log_prob(marks, lengths)
    )
    junk = marks.masked_fill(marks < 0, 3)  # what lies past a string's end is not read
    torch.testing.assert_close(scorer.log_prob_tree(junk, lengths), scorer.log_prob(marks, lengths))
    empty = [t.to(device) for t in padded([[], []])]
    torch.testing.assert_close(scorer.log_prob_tree(*empty), scorer.log_prob(*empty))
    assert scorer.log_prob_tree(marks[:0], lengths[:0]).shape == (0,)


def test_scoring_distinct_paths_once_matches_scoring_every_path():
    batch = small_batch()
    paths = repeated_paths(batch)
    B, k, L = paths.marks.shape
    marks, lengths = paths.marks.reshape(B * k, L), paths.lengths.reshape(-1)
    distinct, distinct_lengths, index = distinct_strings(marks)
    assert len(distinct) <= B * k // 4  # mostly repeats, so the test exercises sharing
    assert torch.equal(distinct[index], marks) and torch.equal(distinct_lengths[index], lengths)
    torch.manual_seed(0)
    scorer = LSTMScorer(len(batch.mark_vocab), hidden=8, layers=2).double().freeze()
    every = scorer.log_prob(marks, lengths).view(B, k)
    # Distinct strings are scored in other length buckets than the padded rows (other matrix
    # shapes), so the sums agree to float64 rounding (seen: 7e-15), not bit for bit.
    close = dict(rtol=0, atol=1e-12)
    torch.testing.assert_close(scorer.score_paths(paths), every, **close)  # rows independent
    torch.testing.assert_close(scorer.score_arcs(batch, paths.arcs), every, **close)
    unigram, empty = random_scorer(5, seed=0), torch.full((2, 3, 0), -1, dtype=torch.long)
    assert torch.equal(
        unigram.score_marks(empty),  # torch.unique refuses zero-width rows
        unigram.weights[-1].detach().expand(2, 3),
    )


def random_strings(n: int, vocab: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n mark strings of random lengths 0..40 in random order, a quarter of them empty (so a
    whole length bucket reads no mark), padded one column past the longest."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 41, (n,), generator=g)
    lengths[torch.randperm(n, generator=g)[: n // 4]] = 0
    marks = torch.randint(0, vocab, (n, 42), generator=g)
    return marks.masked_fill(torch.arange(42) >= lengths[:, None], -1), lengths


def test_length_buckets_change_lstm_scores_by_float_rounding_only():
    """Scoring in length buckets (on the CPU) against one padded run: the same values to float
    rounding, log p̃ and the label-smoothed term alike, in every row's own place; the same bits
    on a second call; and the same gradients, as the scorer trains through this forward."""
    marks, lengths = random_strings(203, 7, seed=0)  # 7 buckets, the last one short
    scorer = LSTMScorer(7, hidden=16, layers=2, dropout=0.3).eval()
    one_run = LSTMScorer(7, hidden=16, layers=2, dropout=0.3).eval()
    one_run.load_state_dict(scorer.state_dict())
    one_run.bucket_rows = len(marks)
    assert len(marks) > 6 * scorer.bucket_rows and (lengths == 0).sum() > scorer.bucket_rows
    bucketed = scorer.log_prob_smoothed(marks, lengths, 0.1)
    padded_run = one_run.log_prob_smoothed(marks, lengths, 0.1)
    for got, want in zip(bucketed, padded_run):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=0.0)
    assert torch.equal(scorer.log_prob(marks, lengths), scorer.log_prob(marks, lengths))
    bucketed[1].sum().backward()
    padded_run[1].sum().backward()
    for got, want in zip(scorer.parameters(), one_run.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-5)


def tiny_trained_scorer():
    """An LSTM scorer after a few real training steps on del/ins lattices (vocab 6)."""
    lats = del_ins_lattices()
    config = ScorerConfig(
        hidden=8,
        layers=2,
        dropout=0.1,
        steps=6,
        batch_size=3,
        K=4,
        bootstrap=SamplerConfig(d=8, dropout=0.0),
        checkpoint_every=100,
    )
    result = train_scorer(lats, config, vocabulary=vocabulary_of(lats), quiet=True)
    return result.scorer.double()


def test_lstm_log_prob_matches_step_by_step(device):
    scorer = LSTMScorer(5, hidden=8, layers=2, dropout=0.3).double().eval()
    strings = [[0, 1, 2], [], [4, 4, 4, 4, 1], [3]]
    marks, lengths = padded(strings)
    on_device = scorer.to(device).log_prob(marks.to(device), lengths.to(device))
    assert on_device.device == device
    torch.testing.assert_close(on_device.cpu(), step_by_step(scorer.cpu(), strings))


def test_trained_scorer_is_a_sub_probability_distribution():
    """Σ over all strings up to length n of p̃ plus the mass of the longer ones (= the
    probability of each length-(n+1) prefix) is exactly 1; so Σ p̃ ≤ 1."""
    scorer = tiny_trained_scorer()
    assert not scorer.training and not any(p.requires_grad for p in scorer.parameters())
    V, n = scorer.vocab_size, 3
    strings = [list(s) for k in range(n + 1) for s in itertools.product(range(V), repeat=k)]
    marks, lengths = padded(strings)
    with torch.no_grad():
        complete = scorer.log_prob(marks, lengths).exp().sum()
        longer = [list(s) for s in itertools.product(range(V), repeat=n + 1)]
        # p(prefix) = p̃(prefix + EOS) / p(EOS | prefix)
        m, ln = padded(longer)
        state = scorer.start(len(longer))
        for t in range(n + 1):
            state = scorer.advance(state, m[:, t])
        eos = scorer.next_log_probs(state)[:, scorer.eos]
        prefix_mass = (scorer.log_prob(m, ln) - eos).exp().sum()
    assert complete <= 1.0
    torch.testing.assert_close(complete + prefix_mass, torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(
        scorer.log_prob(marks[:50], lengths[:50]), step_by_step(scorer, strings[:50])
    )


def test_arc_factored_scorer_is_a_wfst_on_the_lattice():
    lats = [cipher_lattice()]
    batch = LatticeBatch(lats)
    scorer = random_scorer(len(lats[0].mark_vocab), seed=3)
    arcs, _ = all_paths(batch)
    log_p = exact_log_p(scorer, batch, arcs)
    # p̃ of each path = Σ of its arc weights + the EOS weight, and log Z by the backward pass
    w = scorer.arc_weights(batch)
    direct = torch.stack([w[row[row >= 0]].sum() for row in arcs[0]]) + scorer.weights[-1]
    torch.testing.assert_close(log_p[0], direct)
    log_z = log_partition(batch, w, scorer.final_weights(batch))
    torch.testing.assert_close(log_z, torch.logsumexp(log_p, 1))
    strings = [[1, 2], [0], []]
    marks, lengths = padded(strings)
    torch.testing.assert_close(scorer.log_prob(marks, lengths), step_by_step(scorer, strings))


def test_normalised_arc_factored_scorer_sums_to_one():
    weights = torch.log_softmax(torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64), 0)
    scorer = ArcFactoredScorer(weights)
    n = 10
    strings = [list(s) for k in range(n + 1) for s in itertools.product(range(2), repeat=k)]
    total = scorer.log_prob(*padded(strings)).exp().sum().item()
    p_eos = math.exp(weights[-1].item())
    assert abs(total - (1 - (1 - p_eos) ** (n + 1))) < 1e-12
