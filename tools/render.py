"""The tables of docs/results.md made from committed summaries (``tools/summary.py``), and the
plot of a series summary. Four kinds of table:

- a run's summary (a dict with ``samplers``): a row per sampler, its partial KL (mean ± SE over
  training seeds and test pairs), validation partial KL, 003 Fig. 4a's figure where 003 has the
  task, gap to the run's reference sampler ± SE, training steps; a list of such summaries (an
  ablation) gets a row per run and sampler;
- ``gaps:NAME,NAME``: the gaps of several runs of one task side by side;
- ``proposals:NAME``: a run's most probable proposals for test pair 0 (003 Tables 4–6);
- a series (a dict with ``series``, a list of rows with named columns): the rows as they are,
  a column ``C`` shown with ``C_se`` as ``C ± C_se``.

Summaries written before the reference was chosen on validation pairs (``reference`` null)
measured gaps to the sampler best on the test pairs, and their tables say so. Every table says
which standard error its ± is (``standard_error``): summaries of several training seeds made
before the two-way decomposition hold no per-pair values, so theirs is the older one, which
counts the seed × pair interaction twice; a series says its own in its ``se`` key.
"""

from __future__ import annotations

from pathlib import Path

from nfst.evaluate.tables import text_table
from nfst.experiment.report.format import SAMPLER_ORDER, fmt, ordered, pyplot
from nfst.experiment.report.samplers import PAPER_PARTIAL_KL, cited

OLD_GAP = "gap to the best on test (old)"
Z_RULE = "`<` only where the paired gap exceeds 2 standard errors, `≈` otherwise"


def gap_cell(run: dict, name: str) -> str:
    g = run["samplers"][name]["gap"]
    if name == run["reference"] or (run["reference"] is None and g["mean"] == 0):
        return "reference" if run["reference"] else "best"
    return fmt(g["mean"], g["se"])


def _head(runs: list[dict], single: bool, share: str | None) -> list[str]:
    new = all(r["reference"] is not None for r in runs)
    head = ([] if single else ["run"]) + ["sampler", "partial KL: untrained → trained"]
    head += ["validation partial KL"] if new else []
    head += ["003 Fig. 4a"] if single and cited(PAPER_PARTIAL_KL, [runs[0]["task"]]) else []
    head += ["gap to the reference" if new else OLD_GAP, "steps (best; stopped by)"]
    head += (
        ["exclusive KL (exact)", "inclusive KL (exact)"]
        if any(m["exclusive_kl"] is not None for r in runs for m in r["samplers"].values())
        else []
    )
    return head + ([f"{share.replace('_', ' ')} share"] if share else [])


def _row(head: list[str], label: str | None, run: dict, name: str, share: str | None) -> tuple:
    m = run["samplers"][name]
    cells = {
        "run": label,
        "sampler": name,
        "partial KL: untrained → trained": f"{fmt(m['untrained_partial_kl'])} → "
        f"{fmt(m['partial_kl'], m['partial_kl_se'])}",
        "validation partial KL": fmt(m["validation_partial_kl"]),
        "003 Fig. 4a": fmt(PAPER_PARTIAL_KL.get(name, {}).get(run["task"])),
        "gap to the reference": gap_cell(run, name),
        OLD_GAP: gap_cell(run, name),
        "steps (best; stopped by)": f"{m['steps']} ({m['best_step']}; {m['stopped_by']})",
        "exclusive KL (exact)": fmt(m["exclusive_kl"]),
        "inclusive KL (exact)": fmt(m["inclusive_kl"]),
    }
    if share:
        cells[f"{share.replace('_', ' ')} share"] = fmt(m.get(share), digits=2)
    return tuple(cells[h] for h in head)


def standard_error(run: dict) -> str:
    """Which standard error a run's ± is: over test pairs (one training seed), the two-way
    decomposition over seeds and pairs (recomputed from the per-pair values the summary holds),
    or, for an older summary of several seeds without them, the older sum that counts the
    seed × pair interaction twice."""
    if len(run["seeds"]) == 1:
        return "its standard error over test pairs"
    if all(m.get("per_pair_partial_kl_by_seed") for m in run["samplers"].values()):
        return "its standard error over seeds and pairs, each variance component counted once"
    return (
        "its standard error by the older formula SE_seeds² + SE_pairs², which counts the "
        "seed × pair interaction twice (up to √2 too wide); the summary holds no per-pair "
        "values to recompute it"
    )


def label(run: dict) -> str:
    """A run of a group, named by its settings."""
    return ", ".join(run["overrides"]) or "as the preset"


def _notes(runs: list[dict]) -> list[str]:
    """What the figures are over, the reference and ordering of each run, its scorer."""
    lines = []
    for run in runs:
        if run["reference"] is None:
            continue
        seeds = len(run["seeds"])
        first = (
            "untrained and steps"
            if run["structure"] is None or seeds == 1 or run.get("share_over_seeds")
            else f"untrained, steps and {run['structure'].replace('_', ' ')} share"
        )
        text = (
            f"Trained partial KL and gaps: the mean over {seeds} training seed"
            f"{'s' if seeds > 1 else ''} and {run['pairs']} test pairs ± "
            f"{standard_error(run)} ({first}: seed {run['seeds'][0]}'s); reference "
            f"{run['reference']} (the lowest validation partial KL, "
            f"{run['validation_pairs']} pairs); ordering {run['ordering']} ({Z_RULE})."
        )
        lines.append(f"{label(run)}: t{text[1:]}" if len(runs) > 1 else text)
    if any(r["reference"] is None for r in runs):
        lines.append(
            "Gaps to the sampler best on the test pairs, one training seed, ± the "
            "standard error over pairs (a summary made before references were chosen "
            "on validation pairs: choosing on the test pairs biases the others' gaps "
            "up)."
        )
    for scorer in {r["scorer"]["kind"]: r["scorer"] for r in runs}.values():
        exact = scorer["test_log_z_exact"] is not None
        line = (
            f"Scorer {scorer['kind']}: test log Ẑ {fmt(scorer['test_log_z'], digits=2)} "
            f"({'exact' if exact else 'a lower bound'})"
        )
        if scorer["ngram_test_log_likelihood"] is not None and not exact:
            line += (
                f"; the trigram's exact test log-likelihood "
                f"{fmt(scorer['ngram_test_log_likelihood'], digits=2)}"
            )
        lines.append(line + ".")
    return lines


def render(summary: dict | list) -> str:
    """The page's table of a run's summary, or of a list of runs' summaries (an ablation:
    one row per run and sampler), or of a series."""
    if isinstance(summary, dict) and "series" in summary:
        return render_series(summary)
    runs = summary if isinstance(summary, list) else [summary]
    share = next((r["structure"] for r in runs if r["structure"] is not None), None)
    single = len(runs) == 1  # one run: the paper's column; several: a column naming each
    head = _head(runs, single, share)
    rows = [tuple(head)]
    for run in runs:
        rows += [
            _row(head, None if single else label(run), run, name, share)
            for name, _ in sorted(run["samplers"].items(), key=lambda kv: kv[1]["partial_kl"])
        ]
    lines = [text_table(rows, markdown=True), ""] + _notes(runs)
    wall = runs[0]["wall_seconds"]
    if single and wall and all(v is not None for v in wall.values()):
        lines.append(
            "Wall seconds by stage: " + ", ".join(f"{k} {v:.0f}" for k, v in wall.items()) + "."
        )
    return "\n".join(lines + [_made(runs[0], several=not single)]) + "\n"


def _made(summary: dict, several: bool = False) -> str:
    return (
        f"Command `{summary['command']}`"
        + (" (each row: the same with its settings)" if several else "")
        + f"; commit `{summary['commit']}`; machine: {summary['machine']}."
    )


def render_gaps(summaries: dict[str, dict]) -> str:
    """Each sampler's gap to the reference (or, in old summaries, to the best sampler on the
    test pairs) in each of several runs of one task, a column per run by its summary's name:
    partial KLs of runs with different scorers do not compare, their gaps do."""
    samplers = ordered({s for r in summaries.values() for s in r["samplers"]}, SAMPLER_ORDER)
    rows = [
        (
            "sampler",
            *(
                f"gap at {name} (to {r['reference']})"
                if r["reference"]
                else f"gap at {name} (to the best on test, old)"
                for name, r in summaries.items()
            ),
        )
    ]
    rows += [
        (s, *(gap_cell(r, s) if s in r["samplers"] else "–" for r in summaries.values()))
        for s in samplers
    ]
    notes = [f"At {name}: ± {standard_error(r)}." for name, r in summaries.items()]
    return "\n".join([text_table(rows, markdown=True), ""] + notes) + "\n"


def render_proposals(summary: dict) -> str:
    """A run's most probable proposal of each sampler for test pair 0 (003 Tables 4–6)."""
    shown = summary["proposals"]
    rows = [("sampler", "log q", "log p̃", "most probable proposal")]
    rows += [
        (s, f"{m['log_q']:.2f}", f"{m['log_p']:.2f}", f"`{m['proposal']}`")
        for s, m in shown["samplers"].items()
    ]
    return (
        "\n".join(
            [
                f"x = `{shown['x']}`, y = `{shown['y']}`",
                "",
                text_table(rows, markdown=True),
                "",
                _made(summary),
            ]
        )
        + "\n"
    )


def _value(value, digits: int) -> str:
    """A series' cell: a float to ``digits`` decimals, – for None, anything else as it is."""
    return fmt(value, digits=digits) if value is None or isinstance(value, float) else str(value)


def render_series(summary: dict) -> str:
    """A series' rows as a table: its ``columns`` (default: the first row's keys) in order,
    ``C_se`` folded into ``C ± C_se``; floats to ``digits`` decimals (default 1); ``se``, where
    given, says which standard error ± is."""
    rows = summary["series"]
    columns = summary.get("columns") or list(rows[0])
    shown = [c for c in columns if not (c.endswith("_se") and c.removesuffix("_se") in columns)]
    digits = summary.get("digits", 1)
    table = [tuple(shown)]
    for row in rows:
        table.append(
            tuple(
                fmt(row[c], row[c + "_se"], digits)
                if c + "_se" in columns
                else _value(row[c], digits)
                for c in shown
            )
        )
    se = [f"± is {summary['se']}."] if "se" in summary else []
    return "\n".join([text_table(table, markdown=True), ""] + se + [_made(summary)]) + "\n"


def plot_series(
    summary: dict,
    x: str,
    y: str,
    path: Path,
    group: str | None = None,
    paper: str | None = None,
    logx: bool = False,
    title: str = "",
) -> Path:
    """A series' column ``y`` against ``x`` (error bars from ``y_se`` where the rows have it),
    a line per value of ``group``; with ``paper``, that column (e.g. 003's figures) dashed
    beside each line. Written to ``path`` (a PNG)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    groups = ordered({r[group] for r in summary["series"]} if group else {""}, SAMPLER_ORDER)
    for g in groups:
        rows = sorted(
            (r for r in summary["series"] if not group or r[group] == g), key=lambda r: r[x]
        )
        line = ax.errorbar(
            [r[x] for r in rows],
            [r[y] for r in rows],
            yerr=[r[f"{y}_se"] for r in rows] if f"{y}_se" in rows[0] else None,
            marker="o",
            capsize=2,
            label=g or y,
        )
        shown = [r for r in rows if paper and r.get(paper) is not None]
        if shown:
            ax.plot(
                [r[x] for r in shown],
                [r[paper] for r in shown],
                linestyle="--",
                marker="x",
                color=line[0].get_color(),
                label=f"{g} (003)".strip(),
            )
    if logx:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r[x] for r in summary["series"]}))
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set(xlabel=x, ylabel=y, title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
