"""Training the scorer p̃_θ (003 §4): θ is fitted on training pairs by the IWAE bound (003:14)
with K paths from a bootstrap SWA sampler, which is itself trained by inclusive KL on the same
paths (003 §4: "alternately optimizing θ and φ"; here each minibatch updates both, from one
draw). Label smoothing and gradient clipping as in 003 Table 3. The scorer is returned frozen
and the bootstrap sampler is discarded. Checkpoints and resumption: ``nfst.train.checkpoint``;
under torchrun the ranks share every minibatch (DDP), as in ``nfst.train.sampler``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import torch
from tqdm.auto import tqdm

from ..dp.batch import LatticeBatch
from ..errors import Interrupted
from ..fst.dataset import minibatch
from ..fst.lattice import Lattice
from ..models.samplers import SamplerConfig, make_sampler
from ..models.scorer import LSTMScorer
from ..runtime.distributed import from_every_rank, rank_and_world
from ..runtime.interrupt import checkpointed, interrupt_requested
from ..runtime.threads import cpu_threads
from .checkpoint import check_finite, load_checkpoint, restore_rng, save_checkpoint
from .objectives import inclusive_kl_loss, iwae_bound, iwae_loss


@dataclass
class ScorerConfig:
    hidden: int = 256
    layers: int = 2
    dropout: float = 0.3
    lr: float = 1e-3
    steps: int = 2_000
    batch_size: int = 16
    K: int = 32
    """Paths per pair for the IWAE bound (003:14)."""
    label_smoothing: float = 0.1
    grad_clip: float = 5.0
    bootstrap: SamplerConfig = field(default_factory=SamplerConfig)
    """The bootstrap sampler's sizes."""
    bootstrap_sampler: str = "swa"
    """Which sampler proposes the K paths (003 §4: SWA)."""
    bootstrap_lr: float = 1e-3
    checkpoint_every: int = 100


@dataclass
class ScorerResult:
    scorer: LSTMScorer
    """Frozen (no gradients, eval mode)."""
    history: list[dict]
    """Per logged step: step, iwae (mean bound, nats), sampler_loss."""


def train_scorer(train: Sequence[Lattice], config: ScorerConfig = ScorerConfig(), *,
                 symbols: Sequence[str] = (), seed: int = 0,
                 device: torch.device | str = "cpu",
                 checkpoint: Optional[str | os.PathLike] = None, quiet: bool = False,
                 callback: Optional[Callable[[int, dict], None]] = None) -> ScorerResult:
    """Fit an LSTM scorer to the training lattices (module docstring, step 1).

    ``symbols``: the MFST's input and output alphabets, for the bootstrap SWA sampler.
    ``checkpoint``: a file to checkpoint to and resume from. ``callback(step, record)`` is
    called after every step (e.g. to log or to stop)."""
    if not train:
        raise ValueError("train_scorer needs training lattices")
    device = torch.device(device)
    torch.manual_seed(seed)
    vocab = len(train[0].mark_vocab)
    scorer = LSTMScorer(vocab, config.hidden, config.layers, config.dropout).to(device)
    boot = make_sampler(config.bootstrap_sampler, vocab, config.bootstrap, symbols).to(device)
    opt_p = torch.optim.Adam(scorer.parameters(), lr=config.lr)
    opt_q = torch.optim.Adam(boot.parameters(), lr=config.bootstrap_lr)
    rank, world = rank_and_world()
    # Under torchrun, as for a sampler: each process takes its share of every minibatch and
    # DDP averages the gradients of the scorer and the bootstrap sampler.
    step_loss: torch.nn.Module = _StepLoss(scorer, boot, config)
    if world > 1:  # every parameter of both gets a gradient
        step_loss = torch.nn.parallel.DistributedDataParallel(step_loss)
    generator = torch.Generator(device=device).manual_seed(seed + 7919 * rank)
    history: list[dict] = []
    start = 0
    state = load_checkpoint(checkpoint, config)
    if state is not None:
        scorer.load_state_dict(state["scorer"])
        boot.load_state_dict(state["sampler"])
        opt_p.load_state_dict(state["opt_p"])
        opt_q.load_state_dict(state["opt_q"])
        restore_rng(state, generator)
        history, start = state["history"], state["step"]

    def save(step: int) -> None:
        save_checkpoint(checkpoint, config, step, {
            "history": history, "scorer": scorer.state_dict(), "sampler": boot.state_dict(),
            "opt_p": opt_p.state_dict(), "opt_q": opt_q.state_dict()}, generator)

    scorer.train()
    boot.train()
    bar = tqdm(range(start, config.steps), desc="train scorer", disable=quiet,
               initial=start, total=config.steps)
    with checkpointed():
        for step in bar:
            batch = LatticeBatch(minibatch(train, config.batch_size, seed, step)[rank::world],
                                 device)
            with cpu_threads(device):
                loss_p, loss_q, log_p, log_q = step_loss(batch, generator)
                check_finite(loss_p, "the scorer's IWAE loss", step, checkpoint)
                check_finite(loss_q, "the bootstrap sampler's loss", step, checkpoint)
                opt_p.zero_grad()
                opt_q.zero_grad()
                (loss_p + loss_q).backward()  # disjoint parameters: one backward serves both
                for module in (scorer, boot):
                    norm = torch.nn.utils.clip_grad_norm_(module.parameters(), config.grad_clip)
                    check_finite(norm, "a gradient norm", step, checkpoint)
                opt_p.step()
                opt_q.step()
            record = {"step": step + 1,
                      "iwae": float(iwae_bound(log_p.detach(), log_q.detach()).mean()),
                      "sampler_loss": float(loss_q.detach())}
            history.append(record)
            bar.set_postfix(iwae=f"{record['iwae']:.2f}")
            if (step + 1) % config.checkpoint_every == 0:
                save(step + 1)
            if callback is not None:
                callback(step + 1, record)
            if any(from_every_rank(interrupt_requested(), world)):  # all ranks stop together
                save(step + 1)
                raise Interrupted(f"interrupted after step {step + 1}; checkpoint {checkpoint}")
        save(config.steps)
    return ScorerResult(scorer.freeze(), history)


class _StepLoss(torch.nn.Module):
    """One minibatch as a module's forward, for DDP: (scorer loss, bootstrap sampler loss,
    log p̃ (B, K), log q (B, K))."""

    def __init__(self, scorer: LSTMScorer, boot: torch.nn.Module, config: ScorerConfig):
        super().__init__()
        self.scorer, self.boot, self.config = scorer, boot, config

    def forward(self, batch: LatticeBatch, generator: torch.Generator):
        paths = self.boot.sample(batch, self.config.K, generator)
        B, K, L = paths.marks.shape
        log_p, smoothed = self.scorer.log_prob_smoothed(paths.marks.reshape(B * K, L),
                                                        paths.lengths.reshape(-1),
                                                        self.config.label_smoothing)
        log_p, smoothed = log_p.view(B, K), smoothed.view(B, K)
        loss_p = iwae_loss(log_p.detach(), paths.log_q, surrogate=smoothed)
        loss_q = inclusive_kl_loss(log_p.detach(), paths.log_q)
        return loss_p, loss_q, log_p, paths.log_q
