"""The report's proposals: for one test pair fixed in advance (pair 0), every sampler's most
probable of its k samples side by side (003 Tables 4–6), and each sampler's highest-weight
sample of the first test pairs; paths in the task's notation (``Task.abbreviate``)."""

from __future__ import annotations

from .format import SAMPLER_ORDER, ordered

PAPER_TABLES = {"tr": "Table 4", "scan": "Table 5", "cipher": "Table 6"}
"""003's table of proposals for each of its tasks."""


def _side_by_side(run: dict) -> list[str]:
    """Each sampler's most probable proposal for test pair 0, with its log q and log p̃."""
    shown = {
        s: run["samplers"][s]["most_probable"] for s in ordered(run["samplers"], SAMPLER_ORDER)
    }
    first = next(iter(shown.values()))
    paper = PAPER_TABLES.get(run["task"])
    lines = [
        f"### {run['label']}: test pair 0" + (f" (003 {paper})" if paper else ""),
        "",
        f"x = `{first['x']}`, y = `{first['y']}`",
        "",
        "| sampler | log q | log p̃ | most probable proposal |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {s} | {m['log_q']:.2f} | {m['log_p']:.2f} | `{m['proposal']}` |"
        for s, m in shown.items()
    ]
    return lines + [""]


def _highest_weight(run: dict) -> list[str]:
    lines = []
    for s in ordered(run["samplers"], SAMPLER_ORDER):
        examples = run["samplers"][s]["proposals"]
        if examples:
            lines += [
                f"**{run['label']} / {s}**",
                "",
                "| x | y | log q | log p̃ | proposal |",
                "|---|---|---|---|---|",
            ]
            lines += [
                f"| `{ex['x']}` | `{ex['y']}` | {ex['log_q']:.2f} | {ex['log_p']:.2f} | "
                f"`{ex['proposal']}` |"
                for ex in examples
            ]
            lines.append("")
    return lines


def proposals_section(runs: list[dict]) -> list[str]:
    """Per run, the samplers' proposals for test pair 0 side by side, then each sampler's
    highest-weight samples of the first test pairs."""
    cited = any(r["task"] in PAPER_TABLES for r in runs)
    seed = " (training seed 0's samplers)" if any(len(r["seeds"]) > 1 for r in runs) else ""
    lines = [
        "## Proposals side by side" + (" (003 Tables 4–6)" if cited else ""),
        "",
        "For test pair 0 (fixed in advance, not chosen by the results), each sampler's "
        f"most probable of its k samples, the one of highest log q{seed}, in the task's "
        "notation (`Task.abbreviate`), with its log q and its score log p̃.",
        "",
    ]
    for run in runs:
        lines += _side_by_side(run)
    lines += [
        "### The highest-weight samples of the first test pairs",
        "",
        "For each of the first test pairs, each sampler's sample with the largest "
        "importance weight p̃/q.",
        "",
    ]
    for run in runs:
        lines += _highest_weight(run)
    return lines
