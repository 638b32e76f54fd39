"""Abstract particles over mark strings (001 §2–4, Alg. 1): a proposal for importance sampling.

001 approximates a target p* by a distribution that is piecewise simple over a partition of
the space into *abstract particles* (regions); each region a carries its own cheap model f̂_a,
the partition is chosen greedily by local mass m_loc(a) = Σ_{x ∈ a°} f̂_a(x) (001:9–10), and
abstract beam search (Alg. 1) refines regions step by step, keeping the k of largest mass
plus the whole space 𝒳, so nothing is ever pruned away. In text reconstruction (001 §3.1) a
region fixes the last d symbols and abstracts the rest; the model uses an m-gram where the
region makes m − 1 symbols concrete and a unigram elsewhere (001:14).

Here the space is the set of mark prefixes of a lattice T_{x,y}. A region is a pair
(lattice state s, last d marks h): the prefixes that reach s and end in h, the earlier marks
abstracted. Lattice states are visited in topological order (a beam over the lattice rather
than over time); at each s the candidate regions are the (s, h) that the regions of s's
predecessors lead to, and their local mass is the surrogate's forward sum

    α(s, h) = Σ_{r → (s, h)} α(r) · g(m | h_r)          (001:10 with f̂ an n-gram)

(β(s) is common to the candidates at s, so α ranks them). The k of largest α are kept and the
rest merge into the catch-all region (s, *), whose prefixes have forgotten their history: its
arcs use the unigram g(m) and lead to (s', m). Every prefix thus lies in exactly one region,
the regions form a deterministic weighted lattice over the same mark strings, and the
backward pass (``nfst.dp``) sums it exactly. Its path distribution

    q(ω) = Π_t g(ω_t | h_t) g(EOS | h_T) / β(start)

gives every path of T_{x,y} positive probability, so importance weights p̃_θ(ω) / q(ω) with
the LSTM scorer keep Ẑ and expectations unbiased, unlike the beam (whose mass only lower-bounds
Z). The surrogate g(m | h) is a mark n-gram fitted to the frozen scorer: the mean of
log p_θ(m | prefix) over sampled prefixes that end in h (back-off to shorter h when unseen).

Shapes: V marks (EOS = V, BOS = V as a history symbol), R regions, A_r region arcs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..models.samplers.base import Sampler
from ..models.samplers.refined import RefinedLatticeSampler, Refinement
from ..models.scorer import Scorer


@dataclass
class AbstractConfig:
    regions: int = 4
    """k: concrete-history regions kept per lattice state (plus its catch-all)."""
    depth: int = 2
    """d: marks of history a region keeps concrete."""


class MarkNgram:
    """log g(· | h) (V + 1,) for histories h of up to ``depth`` symbols (marks, BOS = V),
    backing off to the longest seen suffix of h; h = () is the unigram."""

    def __init__(self, vocab_size: int, depth: int, table: dict[tuple, np.ndarray]):
        self.vocab_size, self.depth, self.table = vocab_size, depth, table

    def log_probs(self, history: tuple) -> np.ndarray:
        for cut in range(len(history) + 1):
            row = self.table.get(history[cut:])
            if row is not None:
                return row
        raise KeyError("the surrogate has no unigram row")

    @classmethod
    @torch.no_grad()
    def fit(
        cls,
        scorer: Scorer,
        sampler: Sampler,
        lattices: Sequence[Lattice],
        depth: int,
        paths: int = 4,
        batch_size: int = 16,
        seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> "MarkNgram":
        """Mean log p_θ(· | prefix) by history over the prefixes of ``paths`` samples of
        ``sampler`` per lattice (scorer and sampler in eval mode)."""
        V = scorer.vocab_size
        sums: dict[tuple, np.ndarray] = {}
        counts: dict[tuple, int] = {}
        generator = torch.Generator(device=device).manual_seed(seed)
        for lo in range(0, len(lattices), batch_size):
            batch = LatticeBatch(lattices[lo : lo + batch_size], device)
            drawn = sampler.sample(batch, paths, generator)
            marks = drawn.marks.flatten(0, 1)
            lengths = drawn.lengths.flatten().tolist()
            state = scorer.start(len(marks))
            steps = []
            for t in range(marks.shape[1] + 1):
                steps.append(scorer.next_log_probs(state).double().cpu().numpy())
                if t < marks.shape[1]:
                    state = scorer.advance(state, marks[:, t].clamp(min=0, max=V))
            rows = marks.tolist()
            for n, length in enumerate(lengths):
                seq = (V,) + tuple(rows[n][:length])
                for t in range(length + 1):  # the prefix of t marks: seq[:t + 1] with BOS
                    for d in range(min(depth, t + 1) + 1):
                        h = seq[t + 1 - d : t + 1]
                        sums[h] = sums.get(h, 0.0) + steps[t][n]
                        counts[h] = counts.get(h, 0) + 1
        return cls(V, depth, {h: sums[h] / counts[h] for h in sums})


@dataclass
class RegionLattice:
    """The regions of one lattice as a weighted lattice over the same marks; region arcs keep
    the order of their state's out-arcs, so a column means the same choice in both."""

    lattice: Lattice
    """The regions as states (an acyclic, mark-deterministic lattice)."""
    state: np.ndarray
    """(R,) the lattice state of each region."""
    history: list
    """(R,) each region's concrete history, None for a catch-all."""
    arc_weights: np.ndarray
    """(A_r,) log g of each region arc."""
    final_weights: np.ndarray
    """(R,) log g(EOS | h) at final states, -inf elsewhere."""


def build_regions(lattice: Lattice, surrogate: MarkNgram, config: AbstractConfig) -> RegionLattice:
    """Abstract beam search over ``lattice`` (module docstring): top-k regions per state by α,
    the rest merged into the catch-all."""
    V, d, k = surrogate.vocab_size, config.depth, config.regions
    offsets = lattice.arc_offsets.tolist()
    dst, mark, final = lattice.arc_dst.tolist(), lattice.arc_mark.tolist(), lattice.final.tolist()
    incoming: list[dict] = [dict() for _ in range(lattice.num_states)]
    incoming[0][(V,)[:d]] = 0.0
    region_of: dict[tuple, int] = {}
    states, histories, alphas = [], [], []
    src, arcs, weights, targets, final_w = [], [], [], [], []
    for s in range(lattice.num_states):
        ranked = sorted(incoming[s].items(), key=lambda item: -item[1])
        chosen = [(h, a) for h, a in ranked[:k]]
        if len(ranked) > k:  # the catch-all (s, *): every other history
            chosen.append((None, float(np.logaddexp.reduce([a for _, a in ranked[k:]]))))
        for h, alpha in chosen:
            r = len(states)
            region_of[(s, h)] = r
            states.append(s)
            histories.append(h)
            alphas.append(alpha)
            g = surrogate.log_probs(h if h is not None else ())
            final_w.append(g[V] if final[s] else -np.inf)
            for a in range(offsets[s], offsets[s + 1]):
                m = mark[a]
                nxt = ((h or ()) + (m,))[-d:] if d else ()
                w = float(g[m])
                table = incoming[dst[a]]
                table[nxt] = np.logaddexp(table[nxt], alpha + w) if nxt in table else alpha + w
                src.append(r)
                arcs.append(a)
                weights.append(w)
                targets.append((dst[a], nxt))
    arc_dst = np.array(
        [region_of.get(key, region_of.get((key[0], None), -1)) for key in targets], dtype=np.int64
    )
    R = len(states)
    height = np.zeros(R, dtype=np.int64)
    arc_src = np.array(src, dtype=np.int64)
    for i in range(len(arc_src) - 1, -1, -1):  # regions are in topological order
        height[arc_src[i]] = max(height[arc_src[i]], height[arc_dst[i]] + 1)
    state = np.array(states, dtype=np.int64)
    regions = Lattice(
        mark_vocab=lattice.mark_vocab,
        x=lattice.x,
        y=lattice.y,
        arc_src=arc_src,
        arc_dst=arc_dst,
        arc_mark=lattice.arc_mark[np.array(arcs, dtype=np.int64)],
        final=lattice.final[state],
        positions=lattice.positions[state],
        height=height,
    )
    return RegionLattice(regions, state, histories, np.array(weights), np.array(final_w))


class AbstractProposal(RefinedLatticeSampler):
    """The region lattice's path distribution q as a ``Sampler`` (the regions refine each
    lattice's states). Works with ``smc``, ``Sampler.sample`` and stochastic beam search."""

    name = "abstract"

    def __init__(self, surrogate: MarkNgram, config: Optional[AbstractConfig] = None):
        super().__init__(surrogate.vocab_size)
        self.surrogate = surrogate
        self.abstract = config if config is not None else AbstractConfig()
        self._built: dict[int, tuple[Lattice, RegionLattice]] = {}

    def regions(self, lattice: Lattice) -> RegionLattice:
        """The region lattice of ``lattice`` (built once per lattice object)."""
        hit = self._built.get(id(lattice))
        if hit is None or hit[0] is not lattice:
            hit = (lattice, build_regions(lattice, self.surrogate, self.abstract))
            self._built[id(lattice)] = hit
        return hit[1]

    def refine(self, batch: LatticeBatch) -> Refinement:
        built = [self.regions(lat) for lat in batch.lattices]
        weights = lambda key: torch.as_tensor(  # noqa: E731
            np.concatenate([getattr(r, key) for r in built]), device=batch.device
        )
        return Refinement(
            LatticeBatch([r.lattice for r in built], batch.device),
            weights("arc_weights"),
            weights("final_weights"),
        )


def fit_abstract_proposal(
    scorer: Scorer,
    sampler: Sampler,
    lattices: Sequence[Lattice],
    config: Optional[AbstractConfig] = None,
    paths: int = 4,
    batch_size: int = 16,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> AbstractProposal:
    """An :class:`AbstractProposal` whose n-gram is fitted on ``paths`` samples of
    ``sampler`` per lattice of ``lattices`` (no labels: only the scorer and the sampler)."""
    config = config if config is not None else AbstractConfig()
    surrogate = MarkNgram.fit(
        scorer, sampler, lattices, config.depth, paths, batch_size, seed, device
    )
    return AbstractProposal(surrogate, config)
