"""The comparison of runs (``between.compare``) as ``nfst compare`` prints it: the runs, then
per group of runs on one scorer a table per sampler and the group's configurations against its
reference, then the within-run gaps of runs that are not compared, with the reason."""

from __future__ import annotations

from textwrap import fill as wrap

from ...evaluate.tables import text_table
from .format import SAMPLER_ORDER, fmt, ordered
from .labels import settings_words

WIDTH = 100
"""The text's paragraphs are wrapped at this many columns."""


def format_text(result: dict) -> str:
    """:func:`~nfst.experiment.report.between.compare`'s result as text: per group, a table
    per sampler of each run's partial KL and its paired gap to the baseline, and the ordering;
    then the within-run gaps of runs that are not compared, with the reason."""
    lines = ["Runs:"] + [
        f"  {r['short']}: {r['run_dir']}, {r['task']}"
        + (f", {settings_words(r['differs'])}" if r["differs"] else "")
        + f"; reference sampler {r['reference']}"
        for r in result["runs"]
    ]
    for group in result["groups"]:
        lines += _group_lines(group, result)
    if "within_run" in result:
        lines += _within_run_lines(result)
    return "\n".join(lines)


def _group_lines(group: dict, result: dict) -> list[str]:
    """One group of runs on one scorer: a table per sampler of each run's partial KL and its
    paired gap to the baseline, with the ordering; then every (run, sampler) against the
    group's reference."""
    seeds = group["seeds"]
    more = any(r["seeds"] > seeds for r in result["runs"] if r["short"] in group["runs"])
    lines = [
        "",
        wrap(
            f"{', '.join(group['runs'])}: one scorer ({group['scorer']}, sha256 "
            f"{group['scorer_sha256'][:12]}) and {group['pairs']} test pairs. Per "
            f"sampler, each run's test partial KL and its gap to the baseline run, "
            f"paired over {seeds} training seed{'s' if seeds > 1 else ''}"
            f"{' (the first of each run)' if more else ''} and the test pairs, mean ± "
            f"SE; in the order, `<` where the gap between neighbours exceeds "
            f"{result['z']:g} SE, `≈` where not.",
            WIDTH,
        ),
    ]
    for name, s in group["samplers"].items():
        rows = [("run", "partial KL", f"gap to {s['baseline']}")]
        rows += [
            (
                label,
                fmt(kl["mean"], kl["se"], 2),
                "baseline"
                if label == s["baseline"]
                else fmt(s["gap"][label]["mean"], s["gap"][label]["se"], 2),
            )
            for label, kl in s["partial_kl"].items()
        ]
        lines += ["", name, text_table(rows), f"order: {s['ordering']}"]
    lines += [
        "",
        wrap(
            f"Every run's samplers against {group['reference']}, the lowest "
            f"validation partial KL of them all: the test partial KL's gap, "
            f"paired as above; level where within {result['z']:g} SE.",
            WIDTH,
        ),
        "",
    ]
    rows = [("run:sampler", f"gap to {group['reference']}", "")]
    rows += [
        (c, "reference", "")
        if c == group["reference"]
        else (c, fmt(g["mean"], g["se"], 2), _side(g, result["z"]))
        for c, g in group["configurations"].items()
    ]
    return lines + [text_table(rows)]


def _side(g: dict, z: float) -> str:
    """Where a gap ``g`` to the reference puts a configuration: behind, level or ahead."""
    return "behind" if g["mean"] > z * g["se"] else "ahead" if -g["mean"] > z * g["se"] else "level"


def _within_run_lines(result: dict) -> list[str]:
    """Why the runs are not compared, and each run's own gaps: a column per run of every
    sampler's gap to the run's reference."""
    lines = [
        "",
        wrap(
            "Runs without one scorer and one set of test pairs are not "
            "compared (" + "; ".join(result["apart"]) + "): a partial KL is offset "
            "by −log Z of its run's scorer. Each run's own gaps, every sampler's "
            "test partial KL minus its run's reference's, mean ± SE:",
            WIDTH,
        ),
        "",
    ]
    within = result["within_run"]
    samplers = ordered({s for gaps in within.values() for s in gaps}, SAMPLER_ORDER)
    rows = [("sampler", *within)]
    rows += [
        (
            s,
            *(
                "–"
                if s not in gaps
                else "reference"
                if gaps[s] is None
                else fmt(gaps[s]["mean"], gaps[s]["se"], 2)
                for gaps in within.values()
            ),
        )
        for s in samplers
    ]
    return lines + [text_table(rows)]
