"""The interface every proposal sampler q_φ(ω | T_{x,y}) implements (003 §3).

A sampler walks a lattice from its start state, choosing at each state s one of s's out-arcs
(equivalently its mark, since out-arcs carry distinct marks) or STOP if s is final:

    q_φ(ω | T_{x,y}) = Π_{t=1}^{T} q_φ(ω_t | ω_{<t}, T_{x,y}) · q_φ(STOP | ω, T_{x,y})

Illegal marks have probability exactly 0: a sampler scores only the columns of
``batch.out_arcs[s]`` (D of them, -1 padded) plus a last STOP column, and the generic code
masks padding and STOP at non-final states to -inf.

A subclass implements four methods over a :class:`Walk` of N walkers (particles):

    prepare(batch)                       per-batch context (encodings, SWP's Algorithm 1, ...)
    start(batch, context, lattice, record)   N fresh walkers, lattice (N,) says which
                                         lattice each walks; the walk carries ``record``
    log_probs(batch, context, walk)      (N, D + 1) log q of each column at the current state
    advance(batch, context, walk, choice)   take column ``choice`` (N,); STOP kills the walker

and inherits :meth:`Sampler.sample` (k paths per lattice) and :meth:`Sampler.score` (log q of
given paths, by teacher forcing), both differentiable in φ. The particle-smoothing engine drives
the four methods itself, resampling walkers with :meth:`Walk.select`. A network's logits over
the marks become log q over the legal columns by ``choices.legal_log_softmax``; ``choices``
also has the forced rows, where a walker has one legal choice and no network need run.

Optionally, ``path_log_probs(batch, context, route, record)`` gives (N, T, D + 1) log q at every
position of known paths up to their STOP (``route.valid``; later entries are unspecified) in one
batched pass (the paths laid out by ``nfst.models.samplers.route``); a sampler that has it
samples without gradients and scores the drawn paths in that pass. Its walk and pass share a
``record.WalkRecord``, made by :meth:`Sampler.sample` and handed to ``start(batch, context,
lattice, record)`` and to the pass: each walker's dropout masks, and what the walk computed
that the pass would compute again.

How :meth:`Sampler.sample` walks: on a CPU, step by step, computing the heads only for the
walkers with a choice (``eager``); on a GPU (``SamplerConfig.static_walk``), with static shapes
and the step captured as a CUDA graph and replayed (``graph``). A sampler that scores in one
pass reports the pass's log q, which equals the walk's (``_walk`` returns the walk's, for tests).

Mark ids index the task's mark vocabulary (``lattice.mark_vocab``, shared by all lattices of a
task); samplers embed a beginning-of-string id ``BOS = vocab_size`` before the first mark.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, ClassVar, Optional

import torch
from torch import Tensor

from ...dp.batch import LatticeBatch
from ...runtime.threads import cpu_threads
from .config import SamplerConfig
from .eager import eager_walk
from .graph import static_walk
from .record import WalkRecord
from .route import Route, route_of_arcs
from .symbols import Vocabulary
from .walk import Paths, Walk


class Sampler(torch.nn.Module):
    """Base class: see the module docstring. ``vocabulary``: the task's marks and the symbols
    of x and y (``symbols.Vocabulary``; saved with the sampler); internal proposals that are
    never saved by name may give the number of marks V instead (``vocabulary`` is then None)."""

    name: ClassVar[str] = ""
    requires_acyclic: ClassVar[bool] = False
    """True for samplers built on the backward algorithm (SWP); they raise CyclicLatticeError."""
    reads_symbols: ClassVar[bool] = False
    """True for samplers that embed the symbols of x and y: their vocabulary must list them."""

    def __init__(self, vocabulary: Vocabulary | int, config: Optional[SamplerConfig] = None):
        super().__init__()
        self.vocabulary = vocabulary if isinstance(vocabulary, Vocabulary) else None
        self.vocab_size = vocabulary.size if self.vocabulary else int(vocabulary)
        self.config = config if config is not None else SamplerConfig()
        if self.reads_symbols and not (self.vocabulary and self.vocabulary.symbols):
            # Without them every x and y symbol would read as unknown: a sampler blind to x, y.
            raise ValueError(
                f"the {self.name} sampler reads x and y, but its vocabulary lists "
                f"no symbols: build it with Vocabulary.of(T) for the task's MFST T"
            )

    @property
    def bos(self) -> int:
        return self.vocab_size

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    # -- what a sampler implements ------------------------------------------------------
    def prepare(self, batch: LatticeBatch) -> Any:
        """Per-batch context shared by every walker (computed once, with gradients)."""
        return None

    def start(
        self,
        batch: LatticeBatch,
        context: Any,
        lattice: Tensor,
        record: Optional[WalkRecord] = None,
    ) -> Walk:
        """N fresh walkers; the walk carries ``record`` (only samplers that score in one pass
        are given one: see :meth:`path_log_probs`)."""
        raise NotImplementedError

    def log_probs(self, batch: LatticeBatch, context: Any, walk: Walk) -> Tensor:
        raise NotImplementedError

    def advance(self, batch: LatticeBatch, context: Any, walk: Walk, choice: Tensor) -> Walk:
        raise NotImplementedError

    def path_log_probs(
        self, batch: LatticeBatch, context: Any, route: Route, record: Optional[WalkRecord] = None
    ) -> Tensor:
        """(N, T, D + 1): log q of every column at every position of known paths up to their
        STOP (teacher forcing; ``route`` from :func:`~.route.route_of_arcs`). This default
        steps through the positions; samplers override it with one batched pass, which reads
        in ``record`` the masks and states of the walk that drew the paths, if one did."""
        walk = self.start(batch, context, route.lattice, record)
        out = []
        for t in range(route.states.shape[1]):
            out.append(self.log_probs(batch, context, walk))
            walk = self.advance(batch, context, walk, route.choice[:, t])
        return torch.stack(out, dim=1)

    # -- helpers for subclasses ---------------------------------------------------------
    def initial_walk(
        self, batch: LatticeBatch, lattice: Tensor, hidden: Any, record: Optional[WalkRecord] = None
    ) -> Walk:
        n = len(lattice)
        return Walk(
            lattice=lattice,
            state=batch.start[lattice],
            alive=torch.ones(n, dtype=torch.bool, device=lattice.device),
            length=torch.zeros(n, dtype=torch.long, device=lattice.device),
            last_mark=torch.full((n,), self.bos, dtype=torch.long, device=lattice.device),
            hidden=hidden,
            record=record,
        )

    @staticmethod
    def moved(batch: LatticeBatch, walk: Walk, choice: Tensor, hidden: Any = None) -> Walk:
        """The walk after taking column ``choice`` (N,); dead walkers stay as they are.
        ``hidden`` is the sampler's new recurrent state (already masked to the movers)."""
        stop = choice == batch.out_arcs.shape[1]
        arc = batch.out_arcs[walk.state, choice.clamp(max=batch.out_arcs.shape[1] - 1)]
        moving = walk.alive & ~stop
        if not walk.static and bool((moving & (arc < 0)).any()):  # a check syncs a GPU
            raise ValueError("a walker chose a padding column (not an out-arc of its state)")
        safe = arc.clamp(min=0)
        return Walk(
            lattice=walk.lattice,
            state=torch.where(moving, batch.arc_dst[safe], walk.state),
            alive=walk.alive & ~stop,
            length=walk.length + moving.long(),
            last_mark=torch.where(moving, batch.arc_mark[safe], walk.last_mark),
            hidden=hidden,
            record=walk.record,
        )

    @property
    def one_pass(self) -> bool:
        """Whether :meth:`path_log_probs` is batched, so that sampling walks without gradients
        and scores the drawn paths in one pass."""
        return type(self).path_log_probs is not Sampler.path_log_probs

    def check_batch(self, batch: LatticeBatch) -> None:
        """Raise if the batch's mark vocabulary is not the sampler's, or if this sampler needs
        acyclic lattices and one is cyclic."""
        if self.requires_acyclic:
            for lattice in batch.lattices:
                lattice.require_acyclic(f"the {self.name} sampler")
        known = self.vocabulary.marks if self.vocabulary else batch.mark_vocab
        if (len(batch.mark_vocab) != self.vocab_size and self.vocab_size) or (
            known is not batch.mark_vocab and known != batch.mark_vocab
        ):
            raise ValueError(
                f"the {self.name} sampler's {self.vocab_size} marks are not the "
                f"batch's {len(batch.mark_vocab)}: it belongs to another task"
            )

    # -- generic sampling and scoring ---------------------------------------------------
    def _cap(self, batch: LatticeBatch, max_length: Optional[int]) -> int:
        if max_length is None:
            max_length = self.config.max_length
        return batch.max_height if max_length is None else max_length

    def sample(
        self,
        batch: LatticeBatch,
        k: int,
        generator: Optional[torch.Generator] = None,
        max_length: Optional[int] = None,
    ) -> Paths:
        """Draw k paths per lattice (ancestral sampling); log q keeps its gradient.

        ``generator`` must live on the batch's device. Raises PathTooLongError if a path
        would exceed ``max_length`` marks (default: see SamplerConfig.max_length)."""
        self.check_batch(batch)
        with cpu_threads(batch.device):  # a step is many small ops: threads only add overhead
            return self._sample(batch, k, generator, max_length)

    def _sample(
        self,
        batch: LatticeBatch,
        k: int,
        generator: Optional[torch.Generator],
        max_length: Optional[int],
    ) -> Paths:
        context = self.prepare(batch)
        B = batch.batch_size
        lattice = torch.arange(B, device=batch.device).repeat_interleave(k)
        # A sampler that scores in one pass walks without gradients and then scores the drawn
        # paths with them; the record carries the walk's dropout masks and states to the pass.
        record = WalkRecord(len(lattice), self.walks_statically(batch)) if self.one_pass else None
        with torch.no_grad() if record else nullcontext():
            route, arcs, step_log_q = self._walk(
                batch, context, lattice, k, generator, self._cap(batch, max_length), record
            )
        if record is not None:
            step_log_q = self._route_log_q(batch, context, route, record)
        return Paths(
            arcs=arcs.view(B, k, -1),
            marks=route.marks.view(B, k, -1),
            lengths=route.lengths.view(B, k),
            log_q=step_log_q.sum(1).view(B, k),
            step_log_q=step_log_q.view(B, k, -1),
            context=context,
        )

    def walks_statically(self, batch: LatticeBatch) -> bool:
        """Whether :meth:`sample` walks ``batch`` with static shapes (``config.static_walk``)."""
        static = self.config.static_walk
        return self.one_pass and (batch.device.type == "cuda" if static is None else static)

    def _walk(
        self,
        batch: LatticeBatch,
        context: Any,
        lattice: Tensor,
        k: int,
        generator: Optional[torch.Generator],
        cap: int,
        record: Optional[WalkRecord],
    ) -> tuple[Route, Tensor, Optional[Tensor]]:
        """Walk ``lattice`` (N,) (k walkers per lattice) to the end: the paths' route, their
        arcs (N, L) and log q of each choice (N, L + 1) as the walk computed it (None from an
        eager walk without gradients that has a record: the one pass gives it). With a static
        record, the walk of ``graph``; else the step-by-step walk of ``eager``."""
        if record is not None and record.static:
            return static_walk(self, batch, context, lattice, k, generator, cap, record)
        return eager_walk(self, batch, context, lattice, k, generator, cap, record)

    def _route_log_q(
        self, batch: LatticeBatch, context: Any, route: Route, record: Optional[WalkRecord] = None
    ) -> Tensor:
        """(N, T) log q of each choice of ``route``, 0 after STOP."""
        lp = self.path_log_probs(batch, context, route, record)
        step = lp.gather(2, route.choice[..., None]).squeeze(2)
        return torch.where(route.valid, step, torch.zeros_like(step))

    def score_steps(self, batch: LatticeBatch, arcs: Tensor, context: Any = None) -> Tensor:
        """(B, k, L + 1) log q of each choice of the given paths ``arcs`` (B, k, L), -1 padded,
        by teacher forcing; the choice after a path's last arc is STOP. ``context``: a
        :meth:`prepare` context of this batch to score under (e.g. ``Paths.context``, so that
        a randomized sampler scores with the selection it sampled with); None prepares anew."""
        self.check_batch(batch)
        B, k, L = arcs.shape
        lattice = torch.arange(B, device=batch.device).repeat_interleave(k)
        route = route_of_arcs(batch, lattice, arcs.reshape(B * k, L), per_lattice=k)
        # one dropout mask per path, the same at every position, as a walk would have it
        record = WalkRecord(B * k) if self.one_pass else None
        with cpu_threads(batch.device):
            if context is None:
                context = self.prepare(batch)
            return self._route_log_q(batch, context, route, record).view(B, k, L + 1)

    def score(self, batch: LatticeBatch, arcs: Tensor, context: Any = None) -> Tensor:
        """(B, k) log q of the given paths ``arcs`` (B, k, L), -1 padded (differentiable);
        ``context`` as in :meth:`score_steps`."""
        return self.score_steps(batch, arcs, context).sum(-1)
