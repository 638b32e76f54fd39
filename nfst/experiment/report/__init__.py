"""The partial-KL report: tables in the form of 003 Fig. 4a, 4b and Table 7, gaps to the
reference sampler chosen on validation pairs, training curves, offset KL against the number
of particles (000 Fig. 2) and the samplers' proposals side by side (003 Tables 4–6), from the
results of one or more runs (``nfst report RUN_DIR ...``).

``document`` assembles ``report.md`` and ``report.json`` from the parts: ``scorer``,
``samplers`` (with ``reference_gaps``, the gaps to the reference sampler and the orderings,
and ``between``, the gaps between runs on one scorer, which ``nfst compare`` prints), ``smc``
and ``proposals`` (each a section of the report), with ``format`` shared by all and ``labels``
naming the runs.
"""

from .document import load_results, load_runs, write_report
from .smc import plot_offset_kl

__all__ = ["load_results", "load_runs", "plot_offset_kl", "write_report"]
