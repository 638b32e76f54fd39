"""Triples (x, y, ω) drawn from the frozen scorer: exact posterior samples of unlimited pairs for
sleep-phase training (003 fn. 7; the sleep phase of reweighted wake-sleep).

The scorer p̃_θ is locally normalised over Ω ∪ {EOS} (003:11), so a mark string ω can be drawn
ancestrally, one mark at a time. :func:`draw_triples` keeps ω only if it is the mark string of a
path of T (rejection) and reads (x, y) off that path. Conditioned on the (x, y) it yields, a kept
ω is distributed as

    p̃(ω) 1[ω ∈ T_{x,y}] / Σ_{ω' ∈ T_{x,y}} p̃(ω') = p(ω | x, y),

the posterior every sampler approximates, whatever the acceptance rate: rejection only removes
strings that are no path. Two ways to get this wrong, which the tests catch: renormalising p̃ at
each step over the marks that keep the prefix a prefix of a path of T (each prefix then has its
own normaliser: another distribution), and keeping every ω whose paths yield several (x, y)
with one of them picked uniformly (that divides p̃(ω) by their number n(ω)). Where ω yields
n(ω) > 1 pairs, it is kept with probability n(ω) / ``max_readings`` and one of its pairs is then
taken uniformly: each (x, y, ω) is then drawn with probability ∝ p̃(ω), exact again; a string
with more readings than ``max_readings`` is an error that names it.

What the triples are not: their pairs follow the scorer's own distribution over (x, y), whose
lengths are those of the training pairs it was fitted to. Maximum likelihood on the triples
minimises E_{(x,y)∼p̃}[KL(p(·|x,y) ‖ q)], the inclusive KL averaged over the scorer's pairs.
``keep(x, y)`` tilts that distribution: a triple is kept with probability keep(x, y) ∈ [0, 1],
which depends on the pair only, so p(ω | x, y) of every kept triple is unchanged (e.g. to favour
the lengths of validation pairs; never test pairs').

Strings longer than ``max_length`` marks are rejected: the triples of a pair whose paths all
have at most ``max_length`` marks are exact; longer paths are never drawn.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass
from typing import Callable, Optional

import torch
from tqdm.auto import tqdm

from ..errors import NfstError
from ..fst.mark_strings import MarkReader
from ..fst.mfst import MarkedFST
from ..models.scorer import Scorer
from ..runtime.threads import cpu_threads

Triple = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
"""(x, y, ω): the input string, the output string and the mark string, as symbol tuples."""


@dataclass
class TripleStats:
    """What :func:`draw_triples` did: ``drawn`` mark strings, ``paths`` of them the mark string
    of a path of T, ``kept`` triples, ``too_long`` cut at ``max_length``."""

    drawn: int = 0
    paths: int = 0
    kept: int = 0
    too_long: int = 0

    @property
    def acceptance(self) -> float:
        """The share of drawn strings kept."""
        return self.kept / self.drawn if self.drawn else 0.0


@dataclass
class DrawnTriples:
    """What :func:`draw_triples` returns: the ``triples`` and the ``stats`` of their draw."""

    triples: list[Triple]
    stats: TripleStats

    def __len__(self) -> int:
        return len(self.triples)

    def summary(self) -> dict:
        """Its counts and acceptance, and the mean and longest x, y and ω."""
        return _summary(self.stats, len(self.triples), _lengths(self.triples))


def _lengths(triples: list[Triple], lengths: Optional[dict] = None) -> dict:
    """x's, y's and ω's total length and longest over ``triples``, added to ``lengths``."""
    lengths = lengths or {"x": [0, 0], "y": [0, 0], "marks": [0, 0]}
    for triple in triples:
        for tape, string in zip(lengths.values(), triple):
            tape[0] += len(string)
            tape[1] = max(tape[1], len(string))
    return lengths


def _mean_max(total: int, count: int, longest: int) -> dict:
    """The mean and longest of ``count`` strings of total length ``total``."""
    return {"mean": round(total / count, 2) if count else math.nan, "max": longest}


def _summary(stats: TripleStats, count: int, lengths: dict) -> dict:
    """:meth:`DrawnTriples.summary` of ``count`` triples with these ``lengths``."""
    return {
        "triples": count,
        "drawn": stats.drawn,
        "paths": stats.paths,
        "too_long": stats.too_long,
        "acceptance": round(stats.acceptance, 4),
        **{
            f"{tape}_length": _mean_max(lengths[tape][0], count, lengths[tape][1])
            for tape in ("x", "y", "marks")
        },
    }


def draw_triples(
    scorer: Scorer, T: MarkedFST, n: int, *, progress: bool = False, **settings
) -> DrawnTriples:
    """``n`` triples (x, y, ω) drawn from ``scorer`` and read off T (module docstring): the
    first ``n`` of ``TripleStream(scorer, T, **settings)`` (its ``seed``, ``max_length``,
    ``batch_size``, ``max_readings``, ``keep``, ``min_acceptance``, ``device``).
    ``progress``: a bar of the triples kept."""
    if n < 0:
        raise ValueError(f"draw_triples: n must be ≥ 0, got {n}")
    stream = TripleStream(scorer, T, **settings)
    return DrawnTriples(stream.take(n, progress=progress), stream.stats)


class TripleStream:
    """Triples (x, y, ω) drawn from ``scorer`` and read off T, as many at a time as asked for
    (:meth:`take`): together, exactly the triples of one larger draw. Its state
    (:meth:`state_dict`) lets another stream, in another process, go on where it stopped.

    The scorer's mark ids are those of ``Vocabulary.of(T)`` (T's sorted mark alphabet; EOS is
    ``scorer.eos``). Strings are drawn ``batch_size`` at a time through the scorer's step
    interface (``start``, ``next_log_probs``, ``advance``, ``select_state``), from one
    generator seeded with ``seed``; reading them off T runs on the CPU. A batch's triples past
    those asked for wait for the next :meth:`take`. Raises NfstError where, after
    ``10 / min_acceptance`` draws, fewer than ``min_acceptance`` of them were kept."""

    def __init__(
        self,
        scorer: Scorer,
        T: MarkedFST,
        *,
        seed: int = 0,
        max_length: int = 400,
        batch_size: int = 512,
        max_readings: int = 1,
        keep: Optional[Callable[[tuple, tuple], float]] = None,
        min_acceptance: float = 1e-3,
        device: torch.device | str = "cpu",
    ):
        if type(scorer).start is Scorer.start:
            raise NfstError(
                f"the scorer {type(scorer).__name__} has no step interface (start, "
                "next_log_probs, advance), so no mark string can be drawn from it",
                "draw triples from an LSTM, n-gram or arc-factored scorer",
            )
        if scorer.vocab_size != len(T.mark_alphabet):
            raise NfstError(
                f"the scorer reads {scorer.vocab_size} marks but {T.name} has "
                f"{len(T.mark_alphabet)}",
                "draw with the scorer trained on this MFST's lattices",
            )
        self.scorer, self.T, self.reader = scorer, T, MarkReader(T)
        self.max_length, self.batch_size, self.max_readings = max_length, batch_size, max_readings
        self.keep, self.min_acceptance, self.device = keep, min_acceptance, device
        self.stats = TripleStats()
        self.rng = random.Random(f"triples:{seed}")
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.waiting: list[Triple] = []  # kept, not yet taken
        self.taken, self.lengths = 0, _lengths([])

    def take(self, n: int, *, progress: bool = False) -> list[Triple]:
        """The next ``n`` triples; ``progress``: a bar of them."""
        with tqdm(
            total=n, desc="draw triples", unit="triple", disable=not progress, leave=False
        ) as bar:
            while len(self.waiting) < n:
                self._draw_batch()
                bar.update(min(len(self.waiting), n) - bar.n)
        out, self.waiting = self.waiting[:n], self.waiting[n:]
        self.taken += len(out)
        _lengths(out, self.lengths)
        return out

    def summary(self) -> dict:
        """:meth:`DrawnTriples.summary` of every triple taken so far."""
        return _summary(self.stats, self.taken, self.lengths)

    def _draw_batch(self) -> None:
        stats, rng, vocab, k = self.stats, self.rng, self.T.mark_alphabet, self.max_readings
        strings = draw_strings(
            self.scorer, self.batch_size, self.max_length, self.generator, self.device
        )
        for ids in strings:
            stats.drawn += 1
            if ids is None:
                stats.too_long += 1
                continue
            marks = tuple(vocab[m] for m in ids)
            readings = self.reader.readings(marks)
            if not readings:
                continue
            stats.paths += 1
            if len(readings) > k:
                raise NfstError(
                    f"{self.T.name}: the mark string {' '.join(marks)!r} is the mark "
                    f"string of paths with {len(readings)} different (x, y)",
                    f"pass max_readings ≥ {len(readings)} (keeps each string with "
                    "probability n(ω) / max_readings: exact, but slower)",
                )
            if rng.random() * k >= len(readings):
                continue
            x, y = readings[rng.randrange(len(readings))]
            if self.keep is not None and rng.random() >= self.keep(x, y):
                continue
            stats.kept += 1
            self.waiting.append((x, y, marks))
        if stats.drawn >= 10 / self.min_acceptance and stats.acceptance < self.min_acceptance:
            raise NfstError(
                f"{self.T.name}: only {stats.kept} of {stats.drawn} strings drawn from "
                f"the scorer were kept (acceptance {stats.acceptance:.2g}; "
                f"{stats.too_long} longer than {self.max_length} marks)",
                "the scorer rarely writes a path of this MFST: check that it was "
                "trained on its lattices, or raise max_length",
            )

    def state_dict(self) -> dict:
        """Where the stream stands: its counts, random states and waiting triples."""
        return {
            "stats": dataclasses.asdict(self.stats),
            "rng": self.rng.getstate(),
            "generator": self.generator.get_state(),
            "waiting": list(self.waiting),
            "taken": self.taken,
            "lengths": {tape: list(v) for tape, v in self.lengths.items()},
        }

    def load_state_dict(self, state: dict) -> None:
        """Go on from another stream's :meth:`state_dict` (made with the same settings)."""
        self.stats = TripleStats(**state["stats"])
        self.rng.setstate(state["rng"])
        self.generator.set_state(state["generator"])
        self.waiting = list(state["waiting"])
        self.taken, self.lengths = state["taken"], {k: list(v) for k, v in state["lengths"].items()}


@torch.no_grad()
def draw_strings(
    scorer: Scorer, n: int, max_length: int, generator: torch.Generator, device
) -> list[Optional[list[int]]]:
    """n mark strings (as id lists) drawn ancestrally from the scorer, one mark at a time
    (003:11), paths of T or not (:func:`draw_triples` keeps those that are); None for each
    that had not ended after ``max_length`` marks."""
    # one scorer step per mark, small ops: beside two busy processes, spare threads spinning
    # made 3,000 cipher triples take 130 s instead of 3 s (nfst.runtime.threads)
    with cpu_threads(torch.device(device)):
        state = scorer.start(n)
        rows = torch.arange(n, device=device)  # the strings still open, in state order
        marks = torch.full((n, max_length + 1), -1, dtype=torch.long, device=device)
        lengths = torch.full((n,), -1, dtype=torch.long, device=device)  # -1: still open
        for t in range(max_length + 1):
            probs = scorer.next_log_probs(state).float().exp()
            chosen = torch.multinomial(probs, 1, generator=generator).squeeze(1)
            ended = chosen == scorer.eos
            lengths[rows[ended]] = t
            open_ = (~ended).nonzero().squeeze(1)
            if not len(open_):
                break
            rows, chosen = rows[open_], chosen[open_]
            marks[rows, t] = chosen
            state = scorer.advance(scorer.select_state(state, open_), chosen)
    return [
        row[:length] if length >= 0 else None
        for row, length in zip(marks.tolist(), lengths.tolist())
    ]


def length_summary(strings) -> dict:
    """Mean and maximum length of symbol strings."""
    lengths = [len(s) for s in strings]
    return _mean_max(sum(lengths), len(lengths), max(lengths, default=0))
