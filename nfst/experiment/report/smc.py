"""The particle-smoothing part of the report: offset KL against the number of particles M
(000 Fig. 2), scorer calls and Pareto k̂ per method, as tables and plots."""

from __future__ import annotations

import math
from pathlib import Path

from ...evaluate.pareto import pareto_threshold
from ...evaluate.tables import text_table
from .format import fmt, pyplot


def _smc_table(smc: dict, key: str, digits: int) -> list[str]:
    """One metric of an SMC evaluation as a markdown table: methods × M."""
    rows = [("method", *(f"M={m}" for m in smc["M"]))]
    rows += [
        (method, *(fmt(v, digits=digits) for v in res[key]))
        for method, res in smc["methods"].items()
        if key in res
    ]
    return text_table(rows, markdown=True).split("\n")


def plot_offset_kl(result: dict, path: str | Path, title: str = "") -> Path:
    """Offset KL per SMC method (``nfst.evaluate.smc.evaluate_smc``'s result), with standard
    errors, against M on a log scale like 000 Fig. 2 and, beside it, against scorer calls per
    pair (the comparison at equal cost: methods spend different calls at the same M) (a PNG)."""
    plt = pyplot()
    methods = result["methods"]
    by_calls = all("scorer_calls" in res for res in methods.values())
    fig, axes = plt.subplots(
        1, 2 if by_calls else 1, figsize=(12 if by_calls else 7.5, 4), squeeze=False
    )
    plain = plt.FuncFormatter(lambda v, _: f"{v:g}")  # 10, not 10¹
    # label the minor ticks at 2, 3 and 5 times a power of ten: readable over a few decades
    sparse = plt.FuncFormatter(
        lambda v, _: f"{v:g}" if round(v / 10 ** math.floor(math.log10(v))) in (2, 3, 5) else ""
    )
    for i, ax in enumerate(axes[0]):
        for name, res in methods.items():
            ax.errorbar(
                res["scorer_calls"] if i else result["M"],
                res["offset_kl"],
                yerr=res["offset_kl_se"],
                label=name,
                marker="o",
                capsize=2,
                linestyle="--" if name.startswith(("IS", "PS:R[")) else "-",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")  # the methods differ by orders of magnitude
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(sparse)
        ax.xaxis.set_major_formatter(plain)
        ax.set(xlabel="scorer calls per pair" if i else "particles M", ylabel="offset KL (nats)")
    axes[0, 0].set_xticks(result["M"])
    fig.suptitle(title or f"offset KL on {result['pairs']} pairs (000 Fig. 2)")
    axes[0, -1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _plot_smc(runs: list[dict], out: Path) -> list[str]:
    names = []
    for run in runs:
        smc = run["smc"]
        if smc:
            name = f"smc-{run['name']}.png"
            plot_offset_kl(smc, out / name, f"{run['label']}: SMC with {smc['sampler']} proposals")
            names.append(name)
    return names


def _run_tables(smc: dict) -> list[str]:
    """One run's SMC tables: offset KL, scorer calls and Pareto k̂ (with a warning where k̂ is
    above the threshold)."""
    lines = _smc_table(smc, "offset_kl", 2)
    lines += ["", "Scorer calls per pair:", ""] + _smc_table(smc, "scorer_calls", 0)
    lines += [
        "",
        "Pareto k̂ of the final weights (mean over runs and pairs; – where "
        "it cannot be fitted: the beam, fewer than 21 particles, or a tail of one "
        "repeated particle, as after resampling):",
        "",
    ]
    lines += _smc_table(smc, "pareto_k", 2)
    high = [
        f"{method} at M={m}"
        for method, res in smc["methods"].items()
        for m, k in zip(smc["M"], res["pareto_k"])
        if k is not None and k > pareto_threshold(m)
    ]
    if high:
        lines += [
            "",
            "**Warning: Pareto k̂ above its threshold min(1 − 1/log₁₀ M, 0.7) for "
            + ", ".join(high)
            + "**: the weights are so heavy-tailed that "
            "these offset KLs can be far off whatever their standard errors say.",
        ]
    return lines + [""]


def smc_section(runs: list[dict], out: Path) -> list[str]:
    """Offset KL against M of each run that did particle smoothing (plots written to
    ``out``)."""
    plots = _plot_smc(runs, out)
    if not plots:
        return []
    lines = ["## Particle smoothing: offset KL against M (000 Fig. 2)", ""]
    for run in runs:
        if run["smc"]:
            lines += [f"### {run['label']}", ""] + _run_tables(run["smc"])
    return lines + [f"![offset KL]({name})" for name in plots] + [""]
