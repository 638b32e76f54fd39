"""The report's gaps to the reference: each sampler's gap to its run's reference sampler (the
lowest validation partial KL, ``nfst.evaluate.paired_gaps``), and each run's ordering, with
``<`` only where a paired gap exceeds twice its standard error."""

from __future__ import annotations

from ...evaluate.paired_gaps import ordering
from ...evaluate.tables import text_table
from .format import SAMPLER_ORDER, fmt, ordered

Z = 2.0
"""An ordering says ``<`` only where the paired gap exceeds Z standard errors."""


def seeds_words(run: dict) -> str:
    """``"3 training seeds"``, ``"1 training seed"``."""
    n = len(run["seeds"])
    return f"{n} training seed{'s' if n > 1 else ''}"


def run_ordering(run: dict) -> str:
    """The run's samplers from lowest to highest test partial KL, ``<`` between neighbours
    whose paired gap over seeds and pairs exceeds Z standard errors, else ``≈``."""
    return ordering({s: m["per_pair_partial_kl_by_seed"] for s, m in run["samplers"].items()}, z=Z)


def _gap_cell(run: dict, sampler: str) -> str:
    if sampler not in run["samplers"]:
        return "–"
    if sampler == run["reference"]:
        return "reference"
    g = run["samplers"][sampler]["gap"]
    return fmt(g["mean"], g["se"])


def gap_section(runs: list[dict]) -> list[str]:
    """Each sampler's gap to its run's reference, a column per run, and each run's ordering,
    with the rule each follows."""
    samplers = ordered({s for r in runs for s in r["samplers"]}, SAMPLER_ORDER)
    rows = [("sampler", *(f"{r['short']} (reference {r['reference']})" for r in runs))]
    rows += [(s, *(_gap_cell(r, s) for r in runs)) for s in samplers]
    seeds = {len(r["seeds"]) for r in runs}
    over = "training seeds and test pairs" if seeds != {1} else "test pairs"
    lines = [
        "### Gap to the reference sampler (test partial KL, paired)",
        "",
        text_table(rows, markdown=True),
        "",
        f"Each sampler's partial KL minus its run's reference sampler's, the mean over "
        f"{over} ± its standard error (over seeds and pairs, "
        f"`nfst.evaluate.paired_gaps`; with one seed, over pairs). The reference is the "
        f"sampler with the lowest validation partial KL, chosen without looking at the "
        f"test pairs. On one scorer log Z cancels: a gap is a difference of exclusive "
        f"KLs, and unlike the partial KLs, gaps compare across presets and scorers.",
        "",
    ]
    lines += [
        "Orderings by test partial KL, lowest first: `<` only where the paired gap "
        f"between neighbours exceeds {Z:g} standard errors, `≈` where it does not (no "
        "order claimed):",
        "",
    ]
    lines += [f"- {r['label']} ({seeds_words(r)}): {run_ordering(r)}" for r in runs]
    return lines + [""]
