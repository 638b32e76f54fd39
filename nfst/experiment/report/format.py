"""What every part of the report shares: the order of samplers and tasks, a run's samples per
pair, number formatting, reliability warnings and matplotlib set-up."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

SAMPLER_ORDER = ("swa", "sws", "sws-mlp", "swp", "swp-prefix", "nolookahead")
TASK_ORDER = ("tr", "scan", "cipher")


def ordered(names, order) -> list:
    """``names`` in ``order``, then any others alphabetically."""
    return [n for n in order if n in names] + sorted(set(names) - set(order))


def fmt(value, se=None, digits=1) -> str:
    """``value ± se`` with ``digits`` decimals; – when the value is missing or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = f"{value:.{digits}f}"
    return f"{text} ± {se:.{digits}f}" if se is not None else text


def samples_per_pair(run: dict, setting: str = "evaluate") -> int:
    """Samples per pair of the run's evaluation (``evaluate.k``), or of training's
    validation (``setting="sampler"``: ``sampler.eval_k``)."""
    preset = run["config"]["preset"]
    return preset["evaluate"]["k"] if setting == "evaluate" else preset["sampler"]["eval_k"]


def reliability(name: str, pareto: Optional[dict]) -> list[str]:
    """A warning line when an IS estimate's Pareto k̂ is above its threshold on some pairs, its
    share over all the pairs, and the pairs without a k̂ (``pareto``:
    ``nfst.evaluate.pareto.pareto_summary``'s: too few weights, or not diagnosable), said as
    such."""
    if not pareto:
        return []
    pairs = pareto["pairs"]
    apart = _without_k(pareto)
    if not pareto["over_threshold"]:
        return [f"{name}: {apart}.", ""] if apart else []
    share = pareto["over_threshold"]
    where = f"{round(share * pairs)} of {pairs} pairs ({share:.0%})"
    top = f"; max {pareto['max']:.2f}" if pareto["max"] is not None else ""
    return [
        f"**Warning: {name} is unreliable on {where}** "
        f"(Pareto k̂ {threshold_text(pareto)}{top}{'; ' + apart if apart else ''}): "
        f"the importance weights are so heavy-tailed that the estimate can be far off "
        f"whatever its standard error says. More samples or a better proposal are needed.",
        "",
    ]


def threshold_text(pareto: dict) -> str:
    """ "above its threshold, 0.585 at 256 paths" (one per number of paths among the pairs:
    min(1 − 1/log₁₀ S, 0.7))."""
    return "above its threshold, " + ", ".join(
        f"{t:.3g} at {s} paths" for s, t in pareto["thresholds"]
    )


def _without_k(pareto: dict) -> str:
    """The pairs of a k̂ summary without a k̂, and why; "" where every pair has one."""
    pairs, fitted, too_few = pareto["pairs"], pareto["fitted"], pareto["too_few"]
    if not pairs or fitted == pairs:
        return ""
    parts = (
        [
            f"k̂ is not fitted on {too_few} of the {pairs} pairs, which have fewer than 21 "
            f"nonzero importance weights"
        ]
        if too_few
        else []
    )
    if pareto["not_diagnosable"]:
        parts.append(
            f"k̂ is not diagnosable on {pareto['not_diagnosable']} of the {pairs} "
            f"pairs, whose tail is fewer than 5 distinct paths, repeated"
        )
    return "; ".join(parts)


def pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, ax, out: Path, name: str) -> str:
    """Write ``fig`` (with the legend of ``ax``) to ``out/name``; returns ``name``."""
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / name, dpi=120)
    pyplot().close(fig)
    return name
