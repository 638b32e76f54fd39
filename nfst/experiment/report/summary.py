"""Committed run summaries, and the tables of the results page built from them.

A summary is the part of a run's ``results.json`` that the results page shows, with how it was
made: the command, the commit and the machine. ``docs/results/*.json`` holds the committed ones;
``docs/results.md`` holds, between ``<!-- table: NAME -->`` and ``<!-- end table -->``, the
table that :func:`render` makes of the summary ``NAME`` (a run, or a group of ablation runs;
``gaps:NAME,NAME`` puts the gaps of several runs side by side), and text written by hand
around them.

    python -m nfst.experiment.report.summary add RUN_DIR NAME --command CMD --machine TEXT \
        [--commit HASH]
    python -m nfst.experiment.report.summary page     # rewrites the tables of docs/results.md

A test checks that the committed page holds the tables its summaries make.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

from ...evaluate.tables import text_table
from .document import load_results
from .format import SAMPLER_ORDER, fmt, ordered
from .samplers import PAPER_PARTIAL_KL, gaps_to_best

DOCS = Path(__file__).resolve().parents[3] / "docs"
BLOCK = re.compile(r"(<!-- table: (\S+) -->\n).*?(<!-- end table -->)", re.S)
SAMPLER_KEYS = ("partial_kl", "partial_kl_se", "untrained_partial_kl", "stopped_by", "steps",
                "best_step", "ess", "expected_length", "exclusive_kl", "inclusive_kl")


def summarize(results: dict, command: str, commit: str, machine: str) -> dict:
    """The summary of one run's results (module docstring)."""
    samplers = results["samplers"]
    gaps = gaps_to_best(samplers)
    share = [k for k in results["scorer"] if k.startswith("generating") and
             not k.endswith("_se")]
    return {
        "task": results["task"], "preset": results["preset"], "command": command,
        "commit": commit, "machine": machine, "wall_seconds": results.get("wall_seconds"),
        "overrides": results.get("config", {}).get("run", {}).get("overrides", []),
        "scorer": {k: results["scorer"].get(k) for k in (
            "kind", "test_log_z", "test_log_z_se", "test_log_z_exact",
            "ngram_test_log_likelihood", *share)},
        "samplers": {s: {**{k: samplers[s].get(k) for k in (*SAMPLER_KEYS, *share)},
                         "gap": gaps[s][0] if s in gaps else None,
                         "gap_se": gaps[s][1] if s in gaps else None}
                     for s in ordered(samplers, SAMPLER_ORDER)}}


def render(summary: dict | list) -> str:
    """The page's table of a run's summary, or of a list of runs' summaries (an ablation:
    one row per run and sampler)."""
    runs = summary if isinstance(summary, list) else [summary]
    share = next((k for r in runs for k in r["scorer"] if k.startswith("generating")), None)
    exact = any(m.get("exclusive_kl") is not None for r in runs for m in r["samplers"].values())
    single = len(runs) == 1  # one run: the paper's column; several: a column naming each
    head = ([] if single else ["run"]) + ["sampler", "partial KL: untrained → trained"]
    head += (["003 Fig. 4a"] if single else []) + ["gap to the best", "steps (best; stopped by)"]
    head += ["exclusive KL (exact)", "inclusive KL (exact)"] if exact else []
    head += [f"{share.replace('_', ' ')} share"] if share else []
    runs_label = [None] if single else [", ".join(r["overrides"]) or "as the preset"
                                        for r in runs]
    rows = [tuple(head)]
    for label, run in zip(runs_label, runs):
        for name, m in sorted(run["samplers"].items(), key=lambda kv: kv[1]["partial_kl"]):
            cells = [] if label is None else [label]
            cells += [name, f"{fmt(m['untrained_partial_kl'])} → "
                            f"{fmt(m['partial_kl'], m['partial_kl_se'])}"]
            if label is None:
                cells.append(fmt(PAPER_PARTIAL_KL.get(name, {}).get(run["task"])))
            cells += ["best" if m["gap"] == 0 else fmt(m["gap"], m["gap_se"]),
                      f"{m['steps']} ({m['best_step']}; {m['stopped_by']})"]
            if exact:
                cells += [fmt(m.get("exclusive_kl")), fmt(m.get("inclusive_kl"))]
            if share:
                cells.append(fmt(m.get(share), digits=2))
            rows.append(tuple(cells))
    lines = [text_table(rows, markdown=True), ""]
    for scorer in {r["scorer"]["kind"]: r["scorer"] for r in runs}.values():
        exact = scorer.get("test_log_z_exact") is not None
        line = (f"Scorer {scorer['kind']}: test log Ẑ {fmt(scorer['test_log_z'], digits=2)} "
                f"({'exact' if exact else 'a lower bound'})")
        if scorer.get("ngram_test_log_likelihood") is not None and not exact:
            line += (f"; the trigram's exact test log-likelihood "
                     f"{fmt(scorer['ngram_test_log_likelihood'], digits=2)}")
        lines.append(line + ".")
    wall = runs[0].get("wall_seconds")
    if len(runs) == 1 and wall and all(v is not None for v in wall.values()):
        lines.append("Wall seconds by stage: " + ", ".join(f"{k} {v:.0f}"
                                                          for k, v in wall.items()) + ".")
    lines.append(f"Command `{runs[0]['command']}`"
                 + (" (each row: the same with its settings)" if len(runs) > 1 else "")
                 + f"; commit `{runs[0]['commit']}`; machine: {runs[0]['machine']}.")
    return "\n".join(lines) + "\n"


def render_gaps(summaries: dict[str, dict]) -> str:
    """Each sampler's gap to the best sampler in each of several runs of one task (one column
    per run, by its summary's name): partial KLs of runs with different scorers do not
    compare, their gaps do."""
    samplers = ordered({s for r in summaries.values() for s in r["samplers"]}, SAMPLER_ORDER)
    rows = [("sampler", *(f"gap at {name}" for name in summaries))]
    for s in samplers:
        cells = []
        for run in summaries.values():
            m = run["samplers"].get(s)
            cells.append("–" if m is None else "best" if m["gap"] == 0
                         else fmt(m["gap"], m["gap_se"]))
        rows.append((s, *cells))
    return text_table(rows, markdown=True) + "\n"


def load_summary(name: str, folder: Path = DOCS / "results"):
    return json.loads((folder / f"{name}.json").read_text())


def block(name: str, folder: Path = DOCS / "results") -> str:
    """The table of a block: ``NAME`` (a summary) or ``gaps:NAME,NAME,...``."""
    if name.startswith("gaps:"):
        names = name.removeprefix("gaps:").split(",")
        return render_gaps({n: load_summary(n, folder) for n in names})
    return render(load_summary(name, folder))


def page(text: str, folder: Path = DOCS / "results") -> str:
    """``text`` (the results page) with each table block rewritten from its summaries."""
    return BLOCK.sub(lambda m: m.group(1) + block(m.group(2), folder) + m.group(3), text)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m nfst.experiment.report.summary")
    sub = parser.add_subparsers(dest="what", required=True)
    add = sub.add_parser("add", help="summarize a run into docs/results/NAME.json")
    add.add_argument("run_dir")
    add.add_argument("name")
    add.add_argument("--command", required=True)
    add.add_argument("--machine", required=True)
    add.add_argument("--commit", help="the commit of the code that ran (default: HEAD)")
    sub.add_parser("page", help="rewrite the tables of docs/results.md")
    o = parser.parse_args(argv)
    if o.what == "add":
        commit = o.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                            capture_output=True, text=True,
                                            check=True).stdout.strip()
        summary = summarize(load_results(o.run_dir), o.command, commit, o.machine)
        (DOCS / "results" / f"{o.name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    else:
        path = DOCS / "results.md"
        path.write_text(page(path.read_text()))


if __name__ == "__main__":
    main()
