"""Training the scorer p̃_θ (003 §4): θ is fitted on training pairs by the IWAE bound (003:14),

    log p̃_θ(x, y) ≥ E[log (1/K) Σ_k p̃_θ(z_k) / r(z_k)],   z_1..z_K ~ r,

whose θ-gradient is Σ_k w̄_k ∇_θ log p̃_θ(z_k), w̄ = softmax_k(log p̃_θ − log r). It only ever
shows θ the paths r proposes, so r decides what the scorer can learn. ``ScorerConfig.proposal``
chooses r:

- ``"ngram"`` (default): exact samples of the posterior of a mark n-gram scorer fitted first by
  exact maximum likelihood (``nfst.train.ngram``). It integrates over every path of T_{x,y}, so
  it finds the paths that explain (x, y) well (on cipher: the generating cipher, with copies)
  without any gold path, and its log r is exact.
- ``"bootstrap"``: 003's recipe. A bootstrap sampler (SWA) proposes the paths and is itself
  trained by inclusive KL on them (003 §4: "alternately optimizing θ and φ"; here each
  minibatch updates both, from one draw). Where the sampler cannot find the paths that explain
  the pair, neither does the scorer: on cipher it learns to delete every letter and insert
  every output letter.
- ``"mixture"``: both, a share ``ngram_share`` of the K paths from the n-gram's posterior and
  the rest from the co-trained sampler, every path weighted against the mixture
  (``nfst.train.defensive``).

Label smoothing and gradient clipping as in 003 Table 3. The scorer is returned frozen and any
bootstrap sampler is discarded. The loop, its checkpoints and its ranks: ``nfst.train.loop``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Literal, Optional, Sequence

import torch

from ..dp.batch import LatticeBatch
from ..fst.lattice import Lattice
from ..models.ngram import NgramScorer
from ..models.samplers import Sampler, SamplerConfig, Vocabulary, make_sampler
from ..models.samplers.mixture import mixture_draw
from ..models.scorer import LSTMScorer, distinct_strings
from ..runtime.distributed import stream_seed
from .loop import LoopConfig, Trainer, check_config, train_loop
from .ngram import NgramConfig, fit_ngram
from .objectives import inclusive_kl_loss, iwae_bound, iwae_loss

Proposal = Literal["ngram", "bootstrap", "mixture"]
Kind = Literal["lstm", "ngram"]


@dataclass
class ScorerConfig(LoopConfig):
    """``train_scorer``'s settings, beside those every trainer shares
    (:class:`~nfst.train.loop.LoopConfig`; some with other defaults here)."""

    steps: int = 2_000
    """Training steps, one minibatch each."""
    kind: Kind = "lstm"
    """The scorer p̃_θ: "lstm" (003's, trained as the module docstring says) or "ngram": the
    fitted ``ngram`` itself, a WFST, so that log Z and every KL are exact
    (``nfst.evaluate.exact``) and the estimates an LSTM needs can be checked against them."""
    hidden: int = 256
    """Hidden size of the LSTM and of its mark embedding (003 App. D: 256)."""
    layers: int = 2
    """LSTM layers (003 App. D: 2)."""
    dropout: float = field(default=0.3, metadata={"range": "[0, 1)"})
    """Dropout of the LSTM's inputs and outputs and between its layers (003 Table 3: 0.3)."""
    K: int = 32
    """Paths per pair for the IWAE bound (003:14)."""
    label_smoothing: float = field(default=0.1, metadata={"range": "[0, 1)"})
    """Label smoothing of the next-mark distributions in the loss (003 Table 3: 0.1); 0: none."""
    proposal: Proposal = "ngram"
    """Where the K paths come from: "ngram", "bootstrap" (003's recipe) or "mixture" (module
    docstring)."""
    ngram: NgramConfig = field(default_factory=lambda: NgramConfig(order=3))
    """The n-gram whose posterior proposes ("ngram", "mixture")."""
    ngram_share: float = field(default=0.5, metadata={"range": "(0, 1)"})
    """"mixture": the share of the K paths drawn from the n-gram's posterior."""
    bootstrap: SamplerConfig = field(default_factory=SamplerConfig)
    """The bootstrap sampler's sizes ("bootstrap", "mixture")."""
    bootstrap_sampler: str = "swa"
    """Which sampler is co-trained to propose (003 §4: SWA)."""
    bootstrap_lr: float = field(default=1e-3, metadata={"range": "(0, inf)"})
    """Adam learning rate of the bootstrap sampler ("bootstrap", "mixture")."""


@dataclass
class ScorerResult:
    scorer: LSTMScorer
    """Frozen (no gradients, eval mode)."""
    history: list[dict]
    """Per logged step: step, iwae (mean bound, nats), sampler_loss (None without a
    bootstrap sampler)."""
    seconds: float = 0.0
    """The training's wall time, every process that resumed it counted."""


def train_scorer(
    train: Sequence[Lattice],
    config: ScorerConfig = ScorerConfig(),
    *,
    vocabulary: Optional[Vocabulary] = None,
    seed: int = 0,
    device: torch.device | str = "cpu",
    ngram: Optional[NgramScorer] = None,
    checkpoint: Optional[str | os.PathLike] = None,
    quiet: bool = False,
    callback: Optional[Callable[[int, dict], None]] = None,
) -> ScorerResult:
    """Fit an LSTM scorer to the training lattices (module docstring).

    ``vocabulary``: the task's (``Vocabulary.of(T)``), for a bootstrap sampler; None: the
    lattices' marks alone, enough for a bootstrap sampler that reads neither x nor y. ``ngram``:
    the fitted n-gram whose posterior proposes (fitted here by ``config.ngram`` if the
    proposal needs one and none is given). ``checkpoint``: a file to checkpoint to and resume
    from. ``callback(step, record)`` is called after every step (e.g. to log or to stop)."""
    if not train:
        raise ValueError("train_scorer needs training lattices")
    check_config(config)
    device = torch.device(device)
    if config.proposal != "bootstrap" and ngram is None:
        ngram = fit_ngram(train, config.ngram, device=device, quiet=quiet).scorer
    torch.manual_seed(stream_seed(seed, "init"))
    vocab = len(train[0].mark_vocab)
    scorer = LSTMScorer(vocab, config.hidden, config.layers, config.dropout).to(device)
    boot = (
        None
        if config.proposal == "ngram"
        else make_sampler(
            config.bootstrap_sampler,
            vocabulary or Vocabulary(train[0].mark_vocab),
            config.bootstrap,
        ).to(device)
    )
    torch.manual_seed(stream_seed(seed, "train"))
    trainer = _ScorerTrainer(train, config, scorer, boot, ngram, seed, device)
    history = train_loop(trainer, checkpoint=checkpoint, quiet=quiet, callback=callback)
    return ScorerResult(scorer.freeze(), history, trainer.elapsed())


class _ScorerTrainer(Trainer):
    """``train_scorer``'s part of the loop: the scorer and any bootstrap sampler, each with
    its optimiser. Under torchrun, as for a sampler, each process takes its share of every
    minibatch and DDP averages the gradients of both."""

    def __init__(
        self,
        train: Sequence[Lattice],
        config: ScorerConfig,
        scorer: LSTMScorer,
        boot: Optional[Sampler],
        ngram: Optional[NgramScorer],
        seed: int,
        device: torch.device,
    ):
        super().__init__("train scorer", config, train, seed, device)
        opt_p = torch.optim.Adam(scorer.parameters(), lr=config.lr)
        # every parameter gets a gradient: DDP needs no search for unused ones
        self.loss = _StepLoss(scorer, boot, ngram, config)
        self.loss_names = ("the scorer's IWAE loss", "the bootstrap sampler's loss")
        self.optimizers = {"the scorer": opt_p}
        self.saved = {"scorer": scorer, "opt_p": opt_p}
        self.train_modules = (scorer,)
        if boot is not None:
            opt_q = torch.optim.Adam(boot.parameters(), lr=config.bootstrap_lr)
            self.optimizers["the bootstrap sampler"] = opt_q
            self.saved |= {"sampler": boot, "opt_q": opt_q}
            self.train_modules += (boot,)

    def record(self, step, losses, out, norms) -> dict:
        log_p, log_r = out
        return {
            "iwae": float(iwae_bound(log_p.detach(), log_r).mean()),
            "sampler_loss": None if len(self.optimizers) < 2 else float(losses[1].detach()),
        }

    def progress(self, record: dict) -> dict:
        return {"iwae": f"{record['iwae']:.2f}"}


class _StepLoss(torch.nn.Module):
    """One minibatch as a module's forward, for DDP."""

    def __init__(
        self,
        scorer: LSTMScorer,
        boot: Optional[Sampler],
        ngram: Optional[NgramScorer],
        config: ScorerConfig,
    ):
        super().__init__()
        self.scorer, self.boot, self.config = scorer, boot, config
        self.posterior = None if ngram is None else ngram.posterior()

    def propose(self, batch: LatticeBatch, generator: torch.Generator):
        """K paths per pair from r: their arcs (B, K, L), log q of the bootstrap sampler (with
        gradient; None without one) and log r (no gradient)."""
        K = self.config.K
        if self.config.proposal == "bootstrap":
            paths = self.boot.sample(batch, K, generator)
            return paths.arcs, paths.log_q, paths.log_q.detach()
        if self.config.proposal == "mixture":
            share = self.config.ngram_share
            draw = mixture_draw(
                [self.boot, self.posterior], [1 - share, share], batch, K, generator, grad=[0]
            )
            return draw.arcs, draw.log_q[0], draw.log_r
        with torch.no_grad():
            paths = self.posterior.sample(batch, K, generator)
        return paths.arcs, None, paths.log_q

    def forward(self, batch: LatticeBatch, generator: torch.Generator):
        """((scorer loss, bootstrap sampler loss (0 without one)), (log p̃ (B, K), log r
        (B, K)))."""
        arcs, log_q, log_r = self.propose(batch, generator)
        B, K, L = arcs.shape
        # A good proposal repeats paths: score each distinct mark string once.
        marks, lengths, index = distinct_strings(batch.marks_of(arcs).reshape(B * K, L))
        log_p, smoothed = self.scorer.log_prob_smoothed(marks, lengths, self.config.label_smoothing)
        log_p, smoothed = log_p[index].view(B, K), smoothed[index].view(B, K)
        loss_p = iwae_loss(log_p.detach(), log_r, surrogate=smoothed)
        loss_q = (
            log_p.new_zeros(())
            if log_q is None
            else inclusive_kl_loss(log_p.detach(), log_q, log_r)
        )
        return (loss_p, loss_q), (log_p, log_r)
