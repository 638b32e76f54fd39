"""The neural models: scorers p̃_θ of mark strings (``scorer``: the LSTM of 003 and an
arc-factored one; ``ngram``: a mark n-gram, an exact WFST; ``scorer_calls``: a counting
wrapper) and the proposal samplers q_φ (``samplers``)."""

from .ngram import NgramScorer
from .samplers import SAMPLERS, Sampler, SamplerConfig, Vocabulary, make_sampler
from .scorer import ArcFactoredScorer, LSTMScorer, Scorer
from .scorer_calls import CountingScorer

__all__ = [
    "ArcFactoredScorer",
    "CountingScorer",
    "LSTMScorer",
    "NgramScorer",
    "SAMPLERS",
    "Sampler",
    "SamplerConfig",
    "Scorer",
    "Vocabulary",
    "make_sampler",
]
