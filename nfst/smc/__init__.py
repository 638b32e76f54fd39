"""Sequential Monte Carlo over lattice paths: particle filtering and smoothing (``engine``),
resampling schemes (``resampling``), lookaheads and their fitting (``lookahead``,
``fitting``), the beam-search baseline (``beam``), abstract particles (001, ``abstract``) and
distinct samples without replacement (``without_replacement``)."""

from .abstract import AbstractConfig, AbstractProposal, fit_abstract_proposal
from .beam import beam_search
from .engine import Particles, SMCConfig, SMCResult, smc, trace
from .fitting import fit_lookahead
from .lookahead import BetaLookahead, LearnedLookahead, Lookahead, LookaheadProposal, ZeroLookahead
from .resampling import ess, get_resampler, log_mean_exp, register_resampler
from .without_replacement import DistinctPaths, distinct_particles, sample_without_replacement

__all__ = [
    "AbstractConfig",
    "AbstractProposal",
    "BetaLookahead",
    "DistinctPaths",
    "LearnedLookahead",
    "Lookahead",
    "LookaheadProposal",
    "Particles",
    "SMCConfig",
    "SMCResult",
    "ZeroLookahead",
    "beam_search",
    "distinct_particles",
    "ess",
    "fit_abstract_proposal",
    "fit_lookahead",
    "get_resampler",
    "log_mean_exp",
    "register_resampler",
    "sample_without_replacement",
    "smc",
    "trace",
]
