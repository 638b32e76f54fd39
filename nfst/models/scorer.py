"""The scorer p̃_θ(ω): an unnormalised score of a mark string (003 §2.2, App. C).

Every scorer is autoregressive over Ω ∪ {EOS}, with mark ids 0..V-1 (V = ``vocab_size``,
the task's mark vocabulary) and EOS = V:

    log p̃_θ(ω) = Σ_{t=1}^{T+1} log p_θ(ω_t | ω_{<t}),   ω_{T+1} = EOS          (003:11)

``log_prob`` scores whole padded strings at once; ``start`` / ``next_log_probs`` / ``advance``
score them one mark at a time for the particle engine, which also reorders prefixes with
``select_state``. The two agree to float rounding (in eval mode, where dropout is off).

- :class:`LSTMScorer`: p_θ(ω_t | ω_{<t}) = softmax(W[1; h_{t-1}]), h an LSTM over the
  prefix (003:15); locally normalised, so Σ_ω p̃_θ(ω) ≤ 1.
- :class:`ArcFactoredScorer`: log p̃(ω) = Σ_t θ[ω_t] + θ[EOS] for a weight vector θ that need
  not be normalised. It is then a WFST on the lattice, so the exact posterior p(z | x, y) is
  computable by ``nfst.dp.backward`` with :meth:`ArcFactoredScorer.arc_weights` and
  :meth:`ArcFactoredScorer.final_weights`: the hook the tests use to check samplers and
  estimators against exact answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor, nn

from ..dp.batch import LatticeBatch


def distinct_strings(marks: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The distinct rows U (n, L) of mark strings ``marks`` (N, L), -1 after each end, their
    lengths (n,) and each row's place among them (N,): ``marks == U[index]``."""
    if not marks.numel():  # torch.unique refuses zero-width rows; nothing to share anyway
        return marks, (marks >= 0).sum(-1), torch.arange(len(marks), device=marks.device)
    distinct, index = torch.unique(marks, dim=0, return_inverse=True)
    return distinct, (distinct >= 0).sum(-1), index


class Scorer(nn.Module):
    """Base class; see the module docstring."""

    vocab_size: int

    @property
    def eos(self) -> int:
        return self.vocab_size

    def log_prob(self, marks: Tensor, lengths: Tensor) -> Tensor:
        """marks (N, L) long, -1 after each string's end; lengths (N,) -> log p̃ (N,), EOS
        included."""
        raise NotImplementedError

    def start(self, n: int) -> Any:
        """Recurrent state of n empty prefixes."""
        raise NotImplementedError

    def next_log_probs(self, state: Any) -> Tensor:
        """(n, vocab_size + 1): log p_θ(ω_t = m | prefix) for each mark m and EOS (last)."""
        raise NotImplementedError

    def advance(self, state: Any, marks: Tensor) -> Any:
        """The state after appending ``marks`` (n,) to each prefix."""
        raise NotImplementedError

    def select_state(self, state: Any, index: Tensor) -> Any:
        """The prefixes ``index`` (n',) of ``state``, in that order."""
        raise NotImplementedError

    def log_prob_tree(
        self, marks: Tensor, lengths: Tensor, groups: Optional[Tensor] = None
    ) -> Tensor:
        """``log_prob`` (N,) of marks (N, L) and lengths (N,), by the one-mark-at-a-time
        interface over the strings' prefix tree: each distinct prefix's next-mark
        distribution is computed once, however many strings share it, so scoring costs
        |{(g_i, ω_i,<t) : t ≤ |ω_i|}| calls rather than Σ_i (|ω_i| + 1). Strings of different
        ``groups`` (N,) long share no prefix: one tree per lattice keeps a pair's cost
        independent of the batch it is scored in."""
        N, V = len(marks), self.vocab_size
        if not N:
            return self.log_prob(marks, lengths)
        marks = nn.functional.pad(marks, (0, 1), value=-1)  # column L: read where strings end
        if groups is None:
            groups = torch.zeros(N, dtype=torch.long, device=marks.device)
        roots, node = torch.unique(groups, return_inverse=True)  # node: each row's prefix id
        state, t = self.start(len(roots)), 0
        rows = torch.arange(N, device=marks.device)  # the strings of at least t marks
        read, tokens = [], []
        while True:
            nxt = torch.where(lengths[rows] == t, self.eos, marks[rows, t])
            read.append(rows)
            tokens.append(self.next_log_probs(state)[node[rows], nxt])
            rows = rows[lengths[rows] > t]
            if not len(rows):
                break
            child, node[rows] = torch.unique(
                node[rows] * (V + 1) + marks[rows, t], return_inverse=True
            )
            state = self.advance(self.select_state(state, child // (V + 1)), child % (V + 1))
            t += 1
        tokens = torch.cat(tokens)
        return tokens.new_zeros(N).index_add_(0, torch.cat(read), tokens)

    def score_marks(self, marks: Tensor) -> Tensor:
        """log p̃ (...) of mark strings (..., L), -1 after each end. A trained sampler repeats
        its paths, so each distinct string is scored once (:func:`distinct_strings`): for a
        frozen scorer the same values as scoring every row, to float rounding (the LSTM's length
        buckets hold other rows then: ``LSTMScorer.log_prob_smoothed``)."""
        distinct, lengths, index = distinct_strings(marks.flatten(0, -2))
        return self.log_prob(distinct, lengths)[index].view(marks.shape[:-1])

    def score_paths(self, paths) -> Tensor:
        """log p̃ (B, k) of sampled paths (a ``nfst.models.samplers.Paths``)."""
        return self.score_marks(paths.marks)

    def score_arcs(self, batch: LatticeBatch, arcs: Tensor) -> Tensor:
        """log p̃ (B, k) of paths given by their arcs (B, k, L) in ``batch``, -1 padded."""
        return self.score_marks(batch.marks_of(arcs))

    def freeze(self) -> "Scorer":
        """Read-only from now on: no gradients, eval mode (dropout off)."""
        self.requires_grad_(False)
        return self.eval()


@dataclass
class LSTMState:
    h: Tensor
    """(layers, n, hidden)."""
    c: Tensor
    """(layers, n, hidden)."""
    top: Tensor
    """(n, hidden): the top layer's output after the last mark read, h_{t-1} of (003:15)."""


class LSTMScorer(Scorer):
    """p_θ(ω_t | ω_{<t}) ∝ exp(W[1; h_{t-1}]) with h a multi-layer LSTM (003:15, App. D: 2
    layers, hidden 256). Input id ``vocab_size`` is BOS; output id ``vocab_size`` is EOS."""

    bucket_rows: int = 32
    """Strings per length bucket on a CPU (``log_prob_smoothed``): fewer buckets read more
    padding, more pay more per-step overhead (on cipher's paths at hidden 64 and 256, 32 was
    within 4% of the fastest choice, scoring and training alike)."""

    def __init__(self, vocab_size: int, hidden: int = 256, layers: int = 2, dropout: float = 0.3):
        super().__init__()
        self.vocab_size = vocab_size
        self.embed = nn.Embedding(vocab_size + 1, hidden)
        self.lstm = nn.LSTM(
            hidden, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0
        )
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, vocab_size + 1)

    def step_log_probs(self, marks: Tensor) -> Tensor:
        """(N, L + 1, vocab_size + 1): the next-mark distribution after each prefix of
        ``marks`` (N, L) (padding -1 reads as mark 0: callers mask those positions).

        Without dropout on a CPU (a frozen scorer), when there are fewer marks than hidden
        units, the first layer reads one-hot rows of the ids through W_ih Eᵀ (4H, V + 1), E the
        embeddings: the same input gates W_ih e[ω], each the one nonzero term of its sum, from
        a matmul over V + 1 columns instead of H (a quarter of the scorer's work at 2 layers);
        the products round differently, so log p̃ moves by float rounding."""
        bos = marks.new_full((len(marks), 1), self.vocab_size)
        ids = torch.cat([bos, marks.clamp(min=0)], dim=1)
        lstm = self.lstm
        if (
            (self.training and self.drop.p > 0)
            or marks.device.type != "cpu"
            or self.vocab_size + 1 >= lstm.hidden_size
        ):
            top, _ = lstm(self.drop(self.embed(ids)))
            return torch.log_softmax(self.out(self.drop(top)), dim=-1)
        weights = lstm._flat_weights
        first = weights[0] @ self.embed.weight.T  # (4H, V + 1): W_ih e of every id
        h0 = first.new_zeros(lstm.num_layers, len(ids), lstm.hidden_size)
        top = torch._VF.lstm(
            nn.functional.one_hot(ids, self.vocab_size + 1).to(first.dtype),
            (h0, h0),
            [first] + weights[1:],
            lstm.bias,
            lstm.num_layers,
            lstm.dropout,
            self.training,
            False,
            True,
        )[0]
        return torch.log_softmax(self.out(top), dim=-1)

    def log_prob_smoothed(
        self, marks: Tensor, lengths: Tensor, smoothing: float
    ) -> tuple[Tensor, Tensor]:
        """(log p̃ (N,), label-smoothed log-likelihood (N,)) in one pass; in the second each
        token contributes (1 − ε) log p(ω_t | ω_{<t}) + ε · mean_m log p(m | ω_{<t}).

        On a CPU the strings are scored in length buckets: sorted by length (stably) and cut
        into ⌈N / ``bucket_rows``⌉ runs of equal count, each run to its own longest string
        rather than to L, so the LSTM reads little padding. The cut depends only on
        ``lengths``, so the same strings give the same bits; a string's bits can differ from
        scoring it in another batch by float rounding, as the LSTM's kernels depend on how many
        rows go through together. On other devices, where small steps are launch-bound, one
        bucket."""
        rows = self.bucket_rows if marks.device.type == "cpu" else len(marks)
        if len(marks) <= rows:
            return self._log_prob_padded(marks, lengths, smoothing)
        order = torch.argsort(lengths, stable=True)
        parts = [
            self._log_prob_padded(marks[run, : int(lengths[run[-1]])], lengths[run], smoothing)
            for run in torch.tensor_split(order, -(-len(marks) // rows))
        ]
        unsort = torch.argsort(order)  # row i of the input is row unsort[i] of the runs
        return tuple(torch.cat(part)[unsort] for part in zip(*parts))

    def _log_prob_padded(
        self, marks: Tensor, lengths: Tensor, smoothing: float
    ) -> tuple[Tensor, Tensor]:
        """``log_prob_smoothed`` with every string run to L."""
        logp = self.step_log_probs(marks)
        L = marks.shape[1]
        position = torch.arange(L + 1, device=marks.device)
        target = torch.cat([marks, marks.new_full((len(marks), 1), -1)], dim=1)
        target = torch.where(position == lengths[:, None], self.eos, target)
        valid = position <= lengths[:, None]
        token = logp.gather(2, target.clamp(min=0)[..., None]).squeeze(2)
        smooth = (1 - smoothing) * token + smoothing * logp.mean(-1)
        zero = torch.zeros_like(token)
        return torch.where(valid, token, zero).sum(1), torch.where(valid, smooth, zero).sum(1)

    def log_prob(self, marks: Tensor, lengths: Tensor) -> Tensor:
        return self.log_prob_smoothed(marks, lengths, 0.0)[0]

    def start(self, n: int) -> LSTMState:
        layers, hidden = self.lstm.num_layers, self.lstm.hidden_size
        weight = self.out.weight
        zeros = torch.zeros(layers, n, hidden, dtype=weight.dtype, device=weight.device)
        state = LSTMState(zeros, zeros, zeros[0])
        bos = torch.full((n,), self.vocab_size, dtype=torch.long, device=zeros.device)
        return self.advance(state, bos)

    def next_log_probs(self, state: LSTMState) -> Tensor:
        return torch.log_softmax(self.out(self.drop(state.top)), dim=-1)

    def advance(self, state: LSTMState, marks: Tensor) -> LSTMState:
        inputs = self.drop(self.embed(marks))[:, None]  # (n, 1, hidden)
        top, (h, c) = self.lstm(inputs, (state.h, state.c))
        return LSTMState(h, c, top[:, 0])

    def select_state(self, state: LSTMState, index: Tensor) -> LSTMState:
        return LSTMState(state.h[:, index], state.c[:, index], state.top[index])


class ArcFactoredScorer(Scorer):
    """log p̃(ω) = Σ_t θ[ω_t] + θ[EOS], θ = ``weights`` (vocab_size + 1,), EOS last.

    With θ = log_softmax(anything) it is a locally normalised unigram model; otherwise an
    unnormalised WFST scorer. Its recurrent state is just a placeholder of shape (n,)."""

    def __init__(self, weights: Tensor):
        super().__init__()
        self.vocab_size = len(weights) - 1
        self.weights = nn.Parameter(weights.detach().clone())

    def log_prob(self, marks: Tensor, lengths: Tensor) -> Tensor:
        per_mark = torch.where(
            marks >= 0,
            self.weights[marks.clamp(min=0)],
            torch.zeros((), dtype=self.weights.dtype, device=marks.device),
        )
        return per_mark.sum(1) + self.weights[self.eos]

    def start(self, n: int) -> Tensor:
        return torch.zeros(n, device=self.weights.device)

    def next_log_probs(self, state: Tensor) -> Tensor:
        return self.weights.expand(len(state), -1)

    def advance(self, state: Tensor, marks: Tensor) -> Tensor:
        return state

    def select_state(self, state: Tensor, index: Tensor) -> Tensor:
        return state[index]

    def arc_weights(self, batch: LatticeBatch) -> Tensor:
        """(A,) log weight θ[mark] of every arc of the batch."""
        return self.weights[batch.arc_mark]

    def final_weights(self, batch: LatticeBatch) -> Tensor:
        """(S,) log weight of STOP: θ[EOS] at final states, -inf elsewhere."""
        eos = self.weights[self.eos].expand(batch.num_states)
        return eos.masked_fill(~batch.final, float("-inf"))
