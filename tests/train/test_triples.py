"""Triples drawn from a scorer (nfst.train.triples) against the exact posterior, and sleep
training (sampler.sleep_steps, sleep_share) through train_sampler."""

import math
from collections import Counter

import numpy as np
import pytest
import torch

from nfst import NfstError
from nfst.fst.compile import compile_lattice
from nfst.fst.mark_strings import MarkReader
from nfst.fst.mfst import MarkedFST
from nfst.models.samplers import SamplerConfig
from nfst.models.scorer import ArcFactoredScorer, Scorer
from nfst.runtime.threads import loop_threads
from nfst.train.sampler import SamplerTrainConfig, train_sampler
from nfst.train.sleep import TripleFeed
from nfst.train.triples import TripleStream, draw_triples
from tests.helpers.brute import chi_square_critical
from tests.helpers.lattices import cipher_lattice, del_ins_lattices
from tests.helpers.samplers import exact_exclusive_kl, new_sampler, small_config
from tests.helpers.scorers import random_scorer


def pairs_topology() -> MarkedFST:
    """Deletions (mark d), insertions (i) and substitutions (two marks, s s) of one symbol:
    a mark string is a path only if its runs of s have even length, so most strings a
    scorer fond of s writes are no path."""
    T = MarkedFST("pairs")
    T.set_final(T.start)
    T.add_arc(0, 0, input="p", output="", marks="d")
    T.add_arc(0, 0, input="", output="q", marks="i")
    T.add_arc(0, 0, input="p", output="q", marks="s s")
    return T


def unigram(T: MarkedFST, probs: dict) -> ArcFactoredScorer:
    """A locally normalised unigram scorer over T's marks (sorted) and EOS."""
    weights = [probs[m] for m in T.mark_alphabet] + [probs["EOS"]]
    return ArcFactoredScorer(torch.tensor(weights, dtype=torch.float64).log())


def exact_posterior(T, scorer, x, y) -> dict:
    lattice = compile_lattice(T, x, y)
    index = {m: i for i, m in enumerate(T.mark_alphabet)}
    strings = list(lattice.mark_strings())
    scores = [
        float(scorer.weights.detach()[[index[m] for m in s]].sum() + scorer.weights[-1].detach())
        for s in strings
    ]
    z = math.log(sum(math.exp(v) for v in scores))
    return {s: math.exp(v - z) for s, v in zip(strings, scores)}


def renormalised_walk(T, scorer, n, seed):
    """The wrong draw: p̃ renormalised at each step over the marks (and EOS) that keep the
    prefix a prefix of a path of T, then (x, y) read off."""
    reader, rng = MarkReader(T), np.random.default_rng(seed)
    marks, out = T.mark_alphabet, []
    probs = scorer.weights.detach().exp().numpy()
    while len(out) < n:
        prefix = ()
        while True:
            legal = [j for j, m in enumerate(marks) if is_prefix(T, prefix + (m,))]
            stop = bool(reader.readings(prefix))
            w = np.array([probs[j] for j in legal] + ([probs[-1]] if stop else []))
            c = rng.choice(len(w), p=w / w.sum())
            if c == len(legal):
                break
            prefix += (marks[legal[c]],)
        ((x, y),) = reader.readings(prefix)
        out.append((x, y, prefix))
    return out


def is_prefix(T, marks) -> bool:
    """Whether ``marks`` begins a path of the pairs topology (its runs of s, but the last,
    are even)."""
    runs = "".join(marks).split("d")
    runs = [r for part in runs for r in part.split("i")]
    return all(len(r) % 2 == 0 for r in runs[:-1])


def chi_square(triples, T, scorer, min_expected=5.0) -> tuple[float, int]:
    """χ² of the ω counts of every (x, y) drawn often enough against p(ω | x, y), summed
    over those pairs, and its degrees of freedom."""
    by_pair = Counter((x, y) for x, y, _ in triples)
    stat, dof = 0.0, 0
    for (x, y), count in by_pair.items():
        if count < 2 * min_expected or len(x) + len(y) > 6:  # few paths of enough weight
            continue
        exact = exact_posterior(T, scorer, x, y)
        if len(exact) < 2 or count * min(exact.values()) < min_expected:
            continue
        seen = Counter(w for a, b, w in triples if (a, b) == (x, y))
        assert set(seen) <= set(exact), "a kept ω is no path of T_{x,y}"
        stat += sum((seen[w] - count * p) ** 2 / (count * p) for w, p in exact.items())
        dof += len(exact) - 1
    return stat, dof


def test_triples_are_exact_posterior_samples_where_most_strings_are_no_path():
    T = pairs_topology()
    scorer = unigram(T, {"d": 0.15, "i": 0.15, "s": 0.5, "EOS": 0.2})
    drawn = draw_triples(scorer, T, 6000, seed=0, batch_size=1024)
    triples, stats = drawn.triples, drawn.stats
    assert stats.acceptance < 0.5  # most strings drawn are no path of T
    for x, y, marks in triples[:200]:
        assert MarkReader(T).readings(marks) == [(x, y)]
    stat, dof = chi_square(triples, T, scorer)
    assert dof >= 10  # several pairs, each with several paths
    assert stat < chi_square_critical(dof), (stat, dof)
    # the renormalised walk draws from another distribution: the same test rejects it
    wrong = renormalised_walk(T, scorer, 2000, seed=0)
    stat, dof = chi_square(wrong, T, scorer)
    assert stat > chi_square_critical(dof), (stat, dof)


def test_a_tilt_changes_which_pairs_are_drawn_not_their_posteriors():
    """keep(x, y) keeps a triple with that probability: only favoured pairs, and each pair's
    strings still follow p(ω | x, y)."""
    T = pairs_topology()
    scorer = unigram(T, {"d": 0.15, "i": 0.15, "s": 0.5, "EOS": 0.2})
    triples = draw_triples(
        scorer, T, 4000, seed=1, batch_size=1024, keep=lambda x, y: float(len(x) >= 2)
    ).triples
    assert all(len(x) >= 2 for x, _, _ in triples)
    stat, dof = chi_square(triples, T, scorer)
    assert dof >= 4 and stat < chi_square_critical(dof), (stat, dof)


def test_an_ambiguous_mark_string_is_kept_in_proportion_to_its_readings():
    """ω = "a" reads x = p or x = r: with max_readings 2 each (x, y, ω) is drawn with
    probability ∝ p̃(ω), so "a" (two triples) comes twice as often, per reading, as each
    unambiguous string of the same score; with the default of 1 it is an error."""
    T = MarkedFST("ambiguous")
    T.set_final(T.start)
    end = T.add_state(final=True)
    T.add_arc(0, end, input="p", marks="a")
    T.add_arc(0, end, input="r", marks="a")
    T.add_arc(0, end, input="t", marks="b")
    scorer = unigram(T, {"a": 0.4, "b": 0.4, "EOS": 0.2})
    with pytest.raises(NfstError, match="2 different"):
        draw_triples(scorer, T, 50, seed=0)
    triples = draw_triples(scorer, T, 6000, seed=0, max_readings=2).triples
    counts = Counter(x for x, _, _ in triples)
    # p̃: a, a and b alike (0.4 · 0.2 each), the empty string 0.2: 8 : 8 : 8 : 20 out of 44
    n = len(triples)
    for x, p in ((("p",), 8 / 44), (("r",), 8 / 44), (("t",), 8 / 44), ((), 20 / 44)):
        se = math.sqrt(p * (1 - p) / n)
        assert abs(counts[x] / n - p) < 4 * se, (x, counts[x] / n, p)


def test_draw_errors_are_one_clear_line():
    T = MarkedFST("rare")
    end = T.add_state(final=True)
    T.add_arc(0, end, input="p", marks="d")
    T.add_arc(end, end, input="p", marks="e")
    scorer = unigram(T, {"d": 1e-7, "e": 0.5, "EOS": 0.5 - 1e-7})
    with pytest.raises(NfstError, match=r"acceptance 0\b|acceptance 0\.0"):
        draw_triples(scorer, T, 10, seed=0, min_acceptance=1e-2)
    with pytest.raises(NfstError, match="has no step interface"):
        draw_triples(Scorer(), T, 1)
    cyclic = MarkedFST("cyclic")
    q = cyclic.add_state(final=True)
    r = cyclic.add_state()
    cyclic.add_arc(0, q, input="p", marks="d")
    cyclic.add_arc(q, q, input="p", marks="e")
    cyclic.add_arc(q, r, input="p")
    cyclic.add_arc(r, q, output="p")
    with pytest.raises(NfstError, match="cycle of arcs without marks"):
        draw_triples(scorer, cyclic, 1)


def test_the_feed_gives_each_triples_lattice_and_path_in_any_order():
    T = pairs_topology()
    scorer = unigram(T, {"d": 0.2, "i": 0.2, "s": 0.35, "EOS": 0.25})
    triples = draw_triples(scorer, T, 40, seed=1).triples
    with TripleFeed(T, triples, chunk=4) as feed:
        first = feed.take(0, 10)
        again = feed.take(5, 10)  # out of order: the feed compiles that chunk again
        wrapped = feed.take(35, 10)  # past the end: it cycles
    for (lattices, arcs), start in ((first, 0), (again, 5), (wrapped, 35)):
        # the empty pair's lattice has no arc, nothing to learn: left out
        want = [t for t in (triples[j % 40] for j in range(start, start + 10)) if t[2]]
        assert 0 < len(lattices) == len(want)
        for (x, y, marks), lattice, path in zip(want, lattices, arcs):
            assert (lattice.x, lattice.y) == (x, y)
            assert lattice.marks_of(path) == marks


def toy_pairs():
    T = pairs_topology()
    return T, [compile_lattice(T, x, y) for x, y in (("pp", "q"), ("p", "qq"), ("ppp", "qq"))]


def test_sleep_training_alone_reaches_a_small_exclusive_kl():
    """SWP fitted by maximum likelihood to triples alone (no usual step) on lattices of the
    pairs topology, against a unigram scorer whose posterior it can represent: the exact
    KL(q ‖ p) of each validation lattice falls from at least 0.15 nats to below 0.05."""
    T, lats = toy_pairs()
    scorer = unigram(T, {"d": 0.25, "i": 0.15, "s": 0.35, "EOS": 0.25})
    torch.manual_seed(0)
    sampler = new_sampler("swp", lats).double()
    before = [exact_exclusive_kl(sampler, scorer, [lat]) for lat in lats]
    config = SamplerTrainConfig(
        sampler=SamplerConfig(d=8, dropout=0.0),
        lr=0.03,
        steps=0,
        sleep_steps=150,
        batch_size=16,
        k=4,
        eval_every=50,
        eval_k=4,
    )
    feed = TripleFeed(T, draw_triples(scorer, T, 150 * 16, seed=0).triples)
    result = train_sampler(sampler, scorer, lats, lats, config, quiet=True, triples=feed)
    after = [exact_exclusive_kl(result.sampler, scorer, [lat]) for lat in lats]
    assert [h["step"] for h in result.history if "dev_partial_kl" in h] == [0, 50, 100, 150]
    assert all(h.get("phase") == "sleep" for h in result.history[1:])
    assert min(before) > 0.15, before
    assert max(after) < 0.05, (before, after)


def test_wake_sleep_mixes_triples_into_the_usual_minibatches():
    """With sleep_share 0.5 a step of batch 4 holds 2 triples and 2 pairs of the usual
    minibatch; without a feed sleep training is refused."""
    T, lats = toy_pairs()
    scorer = unigram(T, {"d": 0.25, "i": 0.15, "s": 0.35, "EOS": 0.25})
    sampler = new_sampler("sws", lats).double()
    config = SamplerTrainConfig(
        sampler=SamplerConfig(d=8, dropout=0.0),
        lr=0.01,
        steps=3,
        sleep_steps=2,
        sleep_share=0.5,
        batch_size=4,
        k=4,
        eval_every=2,
        eval_k=4,
    )
    with pytest.raises(NfstError, match="needs triples"):
        train_sampler(sampler, scorer, lats, lats, config, quiet=True)
    triples = draw_triples(scorer, T, 20, seed=0).triples
    feed = TripleFeed(T, triples)
    seen = []
    original = TripleFeed.take

    def spy(self, start, count):
        seen.append((start, count))
        return original(self, start, count)

    TripleFeed.take = spy
    try:
        result = train_sampler(sampler, scorer, lats, lats, config, quiet=True, triples=feed)
    finally:
        TripleFeed.take = original
    assert seen == [(0, 4), (4, 4), (8, 2), (10, 2), (12, 2)]
    assert [h.get("phase") for h in result.history[1:]] == ["sleep", "sleep", None, None, None]
    assert result.steps == 5


# train_sampler's history on these settings from the code before sleep training (its seed
# streams as today's, 50dc180): with sleep_steps and sleep_share at 0 the same minibatches,
# draws and figures
TODAY = [
    [
        (0, None, 1.3154565433376753),
        (1, 0.5492801578974555, None),
        (2, 1.1027894214279315, 1.3155731062771316),
        (3, 0.5501918646790281, None),
        (4, 1.0981911476374373, 1.31519020860394),
        (5, 0.5492071933580713, None),
        (6, 1.0957580296578953, 1.3147572648741457),
    ],
    [
        (0, None, 1.4910751147926877),
        (1, 0.9352167004593234, None),
        (2, -1.0634560704570664, 1.4783005695034228),
        (3, 0.21940182263525926, None),
        (4, 3.3517720470188834, 1.4870484476538437),
        (5, -1.0280665662223138, None),
        (6, 2.822544276583855, 1.4754066950731488),
    ],
]


def test_no_sleep_steps_train_as_before():
    lats = del_ins_lattices() + [cipher_lattice()]
    for (name, lam), today in zip((("swp", 0.0), ("sws", 0.5)), TODAY):
        scorer = random_scorer(len(lats[0].mark_vocab), seed=0)
        sampler = new_sampler(name, lats).double()
        config = small_config(lam=lam, sleep_steps=0, sleep_share=0.0)
        result = train_sampler(sampler, scorer, lats[:3], lats[:3], config, quiet=True, seed=3)
        got = [(h["step"], h.get("loss"), h.get("dev_partial_kl")) for h in result.history]
        assert [g[0] for g in got] == [t[0] for t in today]
        for g, t in zip(got, today):
            for a, b in zip(g[1:], t[1:]):
                assert (a is None) == (b is None) and (
                    a is None or math.isclose(a, b, rel_tol=1e-9)
                )


def test_strings_over_max_length_are_rejected_not_cut():
    """Every mark string of this T is a path and EOS has probability 1/2 at each step: with
    max_length 2 a string has 0, 1 or 2 marks with probability 1/2, 1/4, 1/8 and is too long
    with 1/8, so the kept lengths are 4 : 2 : 1 (a string cut at 2 marks instead would make
    them 4 : 2 : 2)."""
    T = MarkedFST("free")
    T.set_final(T.start)
    T.add_arc(0, 0, input="p", marks="d")
    T.add_arc(0, 0, output="q", marks="i")
    scorer = unigram(T, {"d": 0.25, "i": 0.25, "EOS": 0.5})
    drawn = draw_triples(scorer, T, 4000, seed=0, max_length=2)
    stats, n = drawn.stats, len(drawn)
    assert max(len(marks) for _, _, marks in drawn.triples) == 2
    p = stats.too_long / stats.drawn
    assert abs(p - 1 / 8) < 4 * math.sqrt(1 / 8 * 7 / 8 / stats.drawn), p
    assert stats.kept == stats.drawn - stats.too_long  # every string that ended is kept
    share = sum(len(marks) == 2 for _, _, marks in drawn.triples) / n
    assert abs(share - 1 / 7) < 4 * math.sqrt(1 / 7 * 6 / 7 / n), share


def test_strings_are_drawn_with_the_level_loops_thread_count():
    """Drawing is one scorer step per mark, small ops: it runs with the level loops' threads
    (one unless --threads says otherwise), whatever torch's own count, as the other loops do
    (spare threads spinning on a busy machine made it 43x slower)."""
    T = pairs_topology()
    scorer = unigram(T, {"d": 0.15, "i": 0.15, "s": 0.5, "EOS": 0.2})
    seen = []
    step = scorer.next_log_probs

    def counted(state):
        seen.append(torch.get_num_threads())
        return step(state)

    scorer.next_log_probs = counted
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        draw_triples(scorer, T, 50, seed=0)
    finally:
        torch.set_num_threads(before)
    assert seen and set(seen) == {loop_threads()}


def test_a_stream_taken_in_parts_or_resumed_elsewhere_gives_one_draws_triples():
    """TripleStream.take in parts of any size, and a second stream loaded from the first's
    state, give exactly the triples of one draw of their total, with its counts: a run can
    draw its triples as training needs them, in whichever process needs them."""
    T = pairs_topology()
    scorer = unigram(T, {"d": 0.15, "i": 0.15, "s": 0.5, "EOS": 0.2})
    whole = draw_triples(scorer, T, 700, seed=3, batch_size=64)
    stream = TripleStream(scorer, T, seed=3, batch_size=64)
    parts = stream.take(5) + stream.take(0) + stream.take(150)
    elsewhere = TripleStream(scorer, T, seed=3, batch_size=64)
    elsewhere.load_state_dict(stream.state_dict())
    parts += elsewhere.take(545)
    assert parts == whole.triples
    assert elsewhere.stats == whole.stats and elsewhere.summary() == whole.summary()
