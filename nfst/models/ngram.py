"""A mark n-gram scorer: a WFST on every lattice, so its posterior is exact.

    log p̃_θ(ω) = Σ_{t=1}^{T+1} log p_θ(ω_t | h_t),   p_θ(· | h) = softmax(θ[h])     (003:11)

h_t the n − 1 marks before ω_t (BOS-padded), ω_{T+1} = EOS: a locally normalised model over
Ω ∪ {EOS} whose context is short enough to be a state. Over the history lattice of T_{x,y}
(``nfst.fst.history``) it is a weight on each arc, so by the backward pass (003:5)

    log p̃_θ(x, y) = log Σ_{ω ∈ T_{x,y}} p̃_θ(ω) = log Z_{x,y}      (003:12's log-likelihood)

is exact and differentiable (:meth:`NgramScorer.log_partition`), and so are the arc posteriors
and exact samples of p_θ(ω | x, y) (:meth:`NgramScorer.posterior`, a ``Sampler``). It can be
fitted by exact maximum likelihood (``nfst.train.ngram``), needs no proposal to train, and sees
the structure of T_{x,y} through the sum over all paths: an order-1 model (a mark unigram)
already puts most of its posterior on cipher's generating cipher. It is the proposal that
teaches the LSTM scorer (``nfst.train.scorer``), and the exact reference the estimators are
checked against.

Shapes: V marks, EOS = V as an output, BOS = V in a history; H = (V + 1)^(n − 1) histories.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..dp.batch import LatticeBatch
from ..dp.passes import arc_posteriors, log_partition
from ..fst.history import HistoryLattice, expand_history, start_history
from ..fst.lattice import Lattice
from .samplers.refined import RefinedLatticeSampler, Refinement
from .scorer import Scorer

DENSE_LIMIT = 2**27
"""Most entries of a dense θ (1 GiB in float64, Adam's state twice that): above it the
constructor refuses, and ``histories`` is needed."""


class NgramScorer(Scorer):
    """p_θ(ω_t | h_t) = softmax(θ[row(h_t)]) with θ (H, V + 1) (module docstring). Its
    recurrent state is the history id (n,) of ``nfst.fst.history``.

    ``histories``: the sorted ids (H,) of the histories θ has a row for; every other history
    reads the uniform distribution. None: all (V + 1)^(n − 1) have one (dense; refused above
    ``DENSE_LIMIT`` entries)."""

    def __init__(
        self,
        vocab_size: int,
        order: int = 1,
        dtype: torch.dtype = torch.float64,
        histories: Optional[Tensor] = None,
    ):
        super().__init__()
        if order < 1:
            raise ValueError(f"an n-gram has order n ≥ 1, got {order}")
        self.vocab_size, self.order = vocab_size, order
        if histories is None:
            rows = (vocab_size + 1) ** (order - 1)
            if rows * (vocab_size + 1) > DENSE_LIMIT:
                raise ValueError(
                    f"a dense {order}-gram over {vocab_size} marks has "
                    f"{rows * (vocab_size + 1):,} entries (more than "
                    f"{DENSE_LIMIT:,}): build it with NgramScorer.for_lattices"
                )
        else:
            histories = torch.as_tensor(histories, dtype=torch.long)
            rows = len(histories)
        self.register_buffer("histories", histories)
        self.logits = nn.Parameter(torch.zeros(rows, vocab_size + 1, dtype=dtype))
        self._expanded: dict[int, tuple[Lattice, HistoryLattice]] = {}
        self._last: tuple = (None,)  # the last batch refined, and its history lattices

    @classmethod
    def for_lattices(
        cls, lattices: Sequence[Lattice], order: int = 1, dtype: torch.dtype = torch.float64
    ) -> "NgramScorer":
        """An n-gram (θ = 0) with a row of θ for each history that occurs in ``lattices``
        (their history lattices are built here, once, and kept)."""
        built = [(lat, expand_history(lat, order - 1)) for lat in lattices]
        histories = np.unique(np.concatenate([h.history for _, h in built]))
        scorer = cls(len(lattices[0].mark_vocab), order, dtype, torch.from_numpy(histories))
        scorer._expanded.update((id(lat), (lat, h)) for lat, h in built)
        return scorer

    def rows(self, history: Tensor) -> Tensor:
        """The row of :meth:`log_table` (...) of each history id (...)."""
        if self.histories is None:
            return history
        known = len(self.histories)
        place = torch.searchsorted(self.histories, history).clamp(max=known - 1)
        return torch.where(self.histories[place] == history, place, known)

    @property
    def depth(self) -> int:
        """Marks of history, n − 1."""
        return self.order - 1

    def log_table(self) -> Tensor:
        """(H, V + 1), or (H + 1, V + 1) with ``histories``: log p_θ(m | h) for the history
        h of each row (:meth:`rows`) and every mark or EOS m; with ``histories`` the last
        row is the uniform distribution, every other history's."""
        table = torch.log_softmax(self.logits, dim=-1)
        if self.histories is None:
            return table
        # log_softmax of zeros, as a dense θ's unfitted rows compute it (bitwise the same)
        return torch.cat([table, torch.log_softmax(table.new_zeros(1, self.vocab_size + 1), -1)])

    # -- the Scorer interface ---------------------------------------------------------------
    def log_prob(self, marks: Tensor, lengths: Tensor) -> Tensor:
        table, N, L = self.log_table(), len(marks), marks.shape[1]
        marks = nn.functional.pad(marks, (0, 1), value=-1).clamp(min=0)  # junk past each end
        h, total = self.start(N), table.new_zeros(N)
        for t in range(L + 1):
            nxt = torch.where(lengths == t, self.eos, marks[:, t])
            total = total + torch.where(t <= lengths, table[self.rows(h), nxt], table.new_zeros(()))
            h = self.advance(h, marks[:, t])
        return total

    def start(self, n: int) -> Tensor:
        return torch.full(
            (n,),
            start_history(self.depth, self.vocab_size),
            dtype=torch.long,
            device=self.logits.device,
        )

    def next_log_probs(self, state: Tensor) -> Tensor:
        return self.log_table()[self.rows(state)]

    def advance(self, state: Tensor, marks: Tensor) -> Tensor:
        base = self.vocab_size + 1
        return (state * base + marks) % base**self.depth

    def select_state(self, state: Tensor, index: Tensor) -> Tensor:
        return state[index]

    # -- the WFST on each lattice -------------------------------------------------------------
    def expansion(self, lattice: Lattice) -> HistoryLattice:
        """The history lattice of ``lattice`` (built once per lattice object)."""
        hit = self._expanded.get(id(lattice))
        if hit is None or hit[0] is not lattice:
            hit = (lattice, expand_history(lattice, self.depth))
            self._expanded[id(lattice)] = hit
        return hit[1]

    def refine(self, batch: LatticeBatch) -> tuple[Refinement, Tensor]:
        """The n-gram as weights on the history lattices of ``batch`` (differentiable in θ),
        and (A_h,) the batch-global original arc of each history-lattice arc."""
        if self._last[0] is not batch:  # a training loop refines one batch again and again
            built = [self.expansion(lat) for lat in batch.lattices]
            split = LatticeBatch([h.lattice for h in built], batch.device)
            history = torch.as_tensor(
                np.concatenate([h.history for h in built]), device=batch.device
            )
            origin = torch.as_tensor(np.concatenate([h.arc for h in built]), device=batch.device)
            self._last = (
                batch,
                split,
                self.rows(history),
                origin + batch.arc_offsets[split.arc_lattice],
            )
        _, split, row, origin = self._last
        table = self.log_table().to(batch.device)
        arc_w = table[row[split.arc_src], split.arc_mark]
        final_w = table[row, self.eos].masked_fill(~split.final, float("-inf"))
        return Refinement(split, arc_w, final_w), origin

    def log_partition(self, batch: LatticeBatch) -> Tensor:
        """(B,) log p̃_θ(x, y) = log Σ_{ω ∈ T_{x,y}} p̃_θ(ω), exact (differentiable in θ)."""
        refinement, _ = self.refine(batch)
        return log_partition(refinement.batch, refinement.arc_weights, refinement.final_weights)

    @torch.no_grad()
    def arc_posteriors(self, batch: LatticeBatch) -> Tensor:
        """(A,) posterior p_θ(a ∈ path | x, y) of every arc of ``batch``."""
        refinement, origin = self.refine(batch)
        post = arc_posteriors(refinement.batch, refinement.arc_weights, refinement.final_weights)
        return post.new_zeros(batch.num_arcs).index_add_(0, origin, post)

    def posterior(self) -> "NgramPosterior":
        """The exact posterior p_θ(ω | x, y) as a sampler (for sampling and scoring paths)."""
        return NgramPosterior(self)


class NgramPosterior(RefinedLatticeSampler):
    """p_θ(ω | x, y) = p̃_θ(ω) / Z_{x,y} of an :class:`NgramScorer`, walked on its history
    lattices: exact samples, and exact log probabilities of any path (``score``)."""

    name = "ngram-posterior"

    def __init__(self, scorer: NgramScorer):
        super().__init__(scorer.vocab_size)
        self.scorer = scorer

    def refine(self, batch: LatticeBatch) -> Refinement:
        with torch.no_grad():
            return self.scorer.refine(batch)[0]
