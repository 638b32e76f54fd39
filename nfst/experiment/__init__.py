"""Experiments: presets, run configuration, the `nfst run` pipeline, reports, lattice
statistics, `nfst sample` and lattice pictures.

- ``presets``  – every training size and hyperparameter of a run, by name;
- ``config``   – :class:`RunConfig`, as ``config.json`` records it, and its one check;
- ``options``  – the ``--set``/``--option`` settings, read once (:func:`parse_option`) and
  described by :func:`describe_options`;
- ``opening``  – the run a command works on, from its :class:`~.opening.RunRequest`;
- ``rundir``   – a run directory's bookkeeping: recorded settings, stage files, barriers;
- ``run``      – :class:`Run`: the pipeline's stages, with its data (``data_stage``), its
  scorer (``scorer_stage``), its samplers (``sampler_stage``) and its evaluation
  (``evaluation``);
- ``schema``   – ``results.json``'s typed, versioned schema (:class:`Results`);
- ``results``  – ``results.json`` built from the stage files;
- ``report``   – ``report.md`` with tables and plots from one or more runs;
- ``stats``, ``sample``, ``picture`` – ``nfst stats``, ``nfst sample`` and lattice drawings;
- ``commands`` – what each ``nfst`` command does (``nfst.cli`` parses, then calls it).
"""

from .config import RunConfig
from .options import Option, apply_overrides, describe_options, parse_option
from .presets import PRESETS, Preset, preset
from .report import plot_offset_kl, write_report
from .results import build_results
from .run import Run
from .rundir import RunDir
from .sample import sample_pair
from .schema import SCHEMA_VERSION, Results, SamplerResults, ScorerResults
from .stats import format_stats_table, task_stats

__all__ = [
    "Option",
    "PRESETS",
    "Preset",
    "Results",
    "Run",
    "RunConfig",
    "RunDir",
    "SCHEMA_VERSION",
    "SamplerResults",
    "ScorerResults",
    "apply_overrides",
    "build_results",
    "describe_options",
    "format_stats_table",
    "parse_option",
    "plot_offset_kl",
    "preset",
    "sample_pair",
    "task_stats",
    "write_report",
]
