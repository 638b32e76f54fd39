"""Training: objectives, the scorer and sampler trainers, training from particles, the n-gram
fit, the teacher's defensive mixture, sleep training on triples drawn from the scorer, early
stopping, and the one loop they share with its
checkpoints."""

from .defensive import defensive_loss
from .loop import LoopConfig, Trainer, train_loop
from .nasmc import AdaptConfig, adapt, mixture_loss, nasmc_loss
from .ngram import NgramConfig, NgramResult, fit_ngram
from .objectives import (
    EMABaseline,
    exclusive_kl_loss,
    inclusive_kl_loss,
    iwae_bound,
    iwae_loss,
    sampler_loss,
)
from .sampler import SamplerResult, SamplerTrainConfig, train_sampler
from .scorer import ScorerConfig, ScorerResult, train_scorer
from .sleep import TripleFeed
from .triples import DrawnTriples, TripleStats, TripleStream, draw_triples

__all__ = [
    "AdaptConfig",
    "DrawnTriples",
    "EMABaseline",
    "LoopConfig",
    "NgramConfig",
    "NgramResult",
    "SamplerResult",
    "SamplerTrainConfig",
    "ScorerConfig",
    "ScorerResult",
    "Trainer",
    "TripleFeed",
    "TripleStats",
    "TripleStream",
    "draw_triples",
    "adapt",
    "defensive_loss",
    "exclusive_kl_loss",
    "fit_ngram",
    "inclusive_kl_loss",
    "iwae_bound",
    "iwae_loss",
    "mixture_loss",
    "nasmc_loss",
    "sampler_loss",
    "train_loop",
    "train_sampler",
    "train_scorer",
]
