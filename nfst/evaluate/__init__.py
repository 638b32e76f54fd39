"""Evaluation on held-out pairs: samplers (``samplers``: partial KL, ESS, expected length, on
the samples ``drawing`` draws and scores), log Z by importance sampling and the bounds built on
it (``log_z``), exact values under a WFST scorer (``exact``), the whole evaluation ``nfst run``
writes (``whole``: :func:`evaluate_all`, its typed result in ``evaluation``:
:class:`Evaluation`), gaps and orderings over training seeds and pairs (``paired_gaps``), SMC
methods (``smc``: offset KL against M; per pair, ``offset_kl``), the per-pair metrics
(``metrics``), the Pareto k̂ diagnostic (``pareto``) and text tables (``tables``)."""

from ..fst.structure import Structure
from .drawing import PairSamples, draw
from .evaluation import Evaluation, SamplerEvaluation
from .exact import add_exact, exact_log_z, inclusive_kl, is_exact
from .log_z import add_exclusive_kl, estimate_log_z
from .metrics import mean_and_se
from .pareto import pareto_k, pareto_threshold
from .samplers import evaluate, paired_difference
from .smc import SMCEvalConfig, evaluate_smc
from .whole import evaluate_all

__all__ = [
    "Evaluation",
    "PairSamples",
    "SMCEvalConfig",
    "SamplerEvaluation",
    "Structure",
    "add_exact",
    "add_exclusive_kl",
    "draw",
    "estimate_log_z",
    "evaluate",
    "evaluate_all",
    "evaluate_smc",
    "exact_log_z",
    "inclusive_kl",
    "is_exact",
    "mean_and_se",
    "paired_difference",
    "pareto_k",
    "pareto_threshold",
]
