"""Committed run summaries, and the tables of the results page built from them.

A summary is the part of a run's ``results.json`` that the results page shows, with how it was
made: the command, the commit and the machine. ``docs/results/*.json`` holds the committed ones;
the results pages (``docs/results.md`` and ``docs/results/*.md``) hold, between ``<!-- table:
BLOCK -->`` and ``<!-- end table -->``, the table that ``tools/render.py`` makes of the
summaries a block names: ``NAME`` (a run, a group of ablation runs, or a series),
``gaps:NAME,NAME`` (the gaps of several runs side by side), ``proposals:NAME`` (a run's
proposals for test pair 0), and text written by hand around them.
A run's summary carries, per sampler, the partial KL as a mean ± SE over training seeds and
test pairs, the validation partial KL, the gap to the run's reference sampler ± SE and the
per-pair partial KLs of every training seed they are computed from
(``nfst.evaluate.paired_gaps``, computed here from those values, so that a summary of an older
results.json gets today's standard errors), its training wall time and, where it was
sleep-trained, the triples' record (acceptance, lengths, seconds); and the run's reference,
seeds and ordering, which the per-pair values let a reader check. A series is a list of rows
with named columns (e.g. a sweep), written from a JSON file of rows.

From the checkout's root::

    python tools/summary.py add RUN_DIR NAME --command CMD --machine TEXT [--commit HASH]
    python tools/summary.py group NAME RUN_DIR [RUN_DIR ...] --command CMD --machine TEXT
    python tools/summary.py series NAME ROWS.json --command CMD --machine TEXT [--commit HASH]
    python tools/summary.py plot NAME --x COL --y COL [--group COL] [--paper COL] [--logx]
    python tools/summary.py page     # rewrites the tables of the results pages

``plot`` draws a series into ``docs/assets/NAME.png``. A test checks that the committed pages
hold the tables their summaries make, and that every summary is shown on one of them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from nfst.evaluate.paired_gaps import gap, mean_over_seeds_and_pairs, ordering
from nfst.experiment.config import training_seed, upgraded
from nfst.experiment.report import load_results
from nfst.experiment.report.format import SAMPLER_ORDER, ordered

if not __package__:  # run as a script (python tools/summary.py): the checkout's root first
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.checkout import head_commit  # noqa: E402
from tools.render import plot_series, render, render_gaps, render_proposals  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- table: (\S+) -->\n).*?(<!-- end table -->)", re.S)
KINDS = ("gaps:", "proposals:")
PAGES = [DOCS / "results.md", *sorted((DOCS / "results").glob("*.md"))]  # the results pages
SAMPLER_KEYS = (
    "partial_kl",
    "partial_kl_by_seed",
    "validation_partial_kl",
    "untrained_partial_kl",
    "stopped_by",
    "steps",
    "best_step",
    "ess",
    "expected_length",
    "exclusive_kl",
    "inclusive_kl",
)
OPTIONAL_KEYS = ("train_seconds", "sleep")  # where the run has them (sleep: sleep training)
NUMBERS = re.compile(r"\[\s*(-?[\d.e+-]+(?:,\s*-?[\d.e+-]+)*)\s*\]")  # a list of numbers


def summarize(results: dict, command: str, commit: str, machine: str) -> dict:
    """The summary of one run's results (module docstring)."""
    samplers = results["samplers"]
    structure = results["scorer"]["structure"]
    share = [] if structure is None else [structure]
    names = ordered(samplers, SAMPLER_ORDER)
    first = samplers[names[0]]["most_probable"]
    per_pair = {s: m["per_pair_partial_kl_by_seed"] for s, m in samplers.items()}
    seeding = upgraded(results["config"])["run"]["seeding"]
    return {
        "task": results["task"],
        "preset": results["preset"],
        "command": command,
        "commit": commit,
        "machine": machine,
        "wall_seconds": results["wall_seconds"],
        "overrides": results["config"]["run"]["overrides"],
        "task_settings": results["config"]["run"]["task_settings"],
        "seeds": [training_seed(results["seed"], s, seeding) for s in results["seeds"]],
        "reference": results["reference"],
        "pairs": results["pairs"],
        "structure": structure,
        "share_over_seeds": True,  # older summaries hold training seed 0's (tools/render.py)
        "validation_pairs": results["validation_pairs"],
        "ordering": ordering(per_pair),
        "scorer": {
            k: results["scorer"][k]
            for k in (
                "kind",
                "test_log_z",
                "test_log_z_se",
                "test_log_z_exact",
                "ngram_test_log_likelihood",
                *share,
            )
        },
        "samplers": {
            s: {k: samplers[s][k] for k in (*SAMPLER_KEYS, *share)}
            | {k: samplers[s][k] for k in OPTIONAL_KEYS if samplers[s].get(k)}
            | {
                "partial_kl_se": mean_over_seeds_and_pairs(per_pair[s])["se"],
                "gap": gap(per_pair[s], per_pair[results["reference"]]),
                "per_pair_partial_kl_by_seed": per_pair[s],
            }
            for s in names
        },
        "proposals": {
            "pair": 0,
            "x": first["x"],
            "y": first["y"],
            "samplers": {
                s: {k: samplers[s]["most_probable"][k] for k in ("proposal", "log_q", "log_p")}
                for s in names
            },
        },
    }


def series(rows: list[dict], command: str, commit: str, machine: str) -> dict:
    """A series summary: ``rows`` (dicts with the same keys) with how they were made."""
    if not rows or any(set(r) != set(rows[0]) for r in rows):
        raise ValueError("a series is a non-empty list of rows with the same columns")
    return {"command": command, "commit": commit, "machine": machine, "series": rows}


def load_summary(name: str, folder: Path = DOCS / "results"):
    return json.loads((folder / f"{name}.json").read_text())


def names(block_name: str) -> list[str]:
    """The summaries a block shows: ``NAME``, ``gaps:NAME,NAME,...`` or ``proposals:NAME``."""
    for kind in KINDS:
        block_name = block_name.removeprefix(kind)
    return block_name.split(",")


def block(name: str, folder: Path = DOCS / "results") -> str:
    """The table of a block (module docstring)."""
    if name.startswith("gaps:"):
        return render_gaps({n: load_summary(n, folder) for n in names(name)})
    if name.startswith("proposals:"):
        return render_proposals(load_summary(names(name)[0], folder))
    return render(load_summary(name, folder))


def page(text: str, folder: Path = DOCS / "results") -> str:
    """``text`` (the results page) with each table block rewritten from its summaries."""
    return BLOCK.sub(lambda m: m.group(1) + block(m.group(2), folder) + m.group(3), text)


def _write(name: str, summary: dict) -> None:
    text = json.dumps(summary, indent=1, ensure_ascii=False)
    # a list of numbers on one line, so that per-pair values take a line per seed
    text = NUMBERS.sub(lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)
    (DOCS / "results" / f"{name}.json").write_text(text + "\n", encoding="utf-8")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python tools/summary.py")
    sub = parser.add_subparsers(dest="what", required=True)
    add = sub.add_parser("add", help="summarize a run into docs/results/NAME.json")
    add.add_argument("run_dir")
    group = sub.add_parser(
        "group",
        help="summarize runs (an ablation: a row per run and sampler) into docs/results/NAME.json",
    )
    rows = sub.add_parser("series", help="a JSON list of rows into docs/results/NAME.json")
    for p in (add, group, rows):
        p.add_argument("name")
        if p is group:
            p.add_argument("run_dirs", nargs="+")
        if p is rows:
            p.add_argument("rows", help="a JSON file: a list of objects with the same keys")
        p.add_argument("--command", required=True)
        p.add_argument("--machine", required=True)
        p.add_argument("--commit", help="the commit of the code that ran (default: HEAD)")
    plot = sub.add_parser("plot", help="draw a series into docs/assets/NAME.png")
    plot.add_argument("name")
    plot.add_argument("--x", required=True)
    plot.add_argument("--y", required=True)
    plot.add_argument("--group", help="a line per value of this column")
    plot.add_argument("--paper", help="a column of the paper's figures, drawn dashed")
    plot.add_argument("--logx", action="store_true", help="x on a log2 scale")
    plot.add_argument("--title", default="")
    sub.add_parser("page", help="rewrite the tables of the results pages")
    return parser


def main(argv=None) -> None:
    o = _parser().parse_args(argv)
    if o.what in ("add", "group", "series"):
        commit = o.commit or head_commit()
        if o.what == "series":
            _write(
                o.name, series(json.loads(Path(o.rows).read_text()), o.command, commit, o.machine)
            )
        else:
            made = [
                summarize(load_results(d), o.command, commit, o.machine)
                for d in ([o.run_dir] if o.what == "add" else o.run_dirs)
            ]
            _write(o.name, made[0] if o.what == "add" else made)
    elif o.what == "plot":
        plot_series(
            load_summary(o.name),
            o.x,
            o.y,
            DOCS / "assets" / f"{o.name}.png",
            group=o.group,
            paper=o.paper,
            logx=o.logx,
            title=o.title,
        )
    else:
        for path in PAGES:
            path.write_text(page(path.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
