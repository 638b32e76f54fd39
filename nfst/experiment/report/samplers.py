"""The samplers' part of the report: tables in the form of 003 Fig. 4a, 4b and Table 7, beside
the paper's figures for the tasks it has, the gaps to the reference sampler
(``reference_gaps``), what training changed, the sleep phase and training curves
(``training``)."""

from __future__ import annotations

from pathlib import Path

from ...evaluate.tables import text_table
from .between import between_section
from .format import SAMPLER_ORDER, TASK_ORDER, fmt, ordered, reliability, samples_per_pair
from .reference_gaps import gap_section, seeds_words
from .training import learning_section, plot_curves, sleep_section

# 003 Fig. 4a / Fig. 7 (partial KL, nats) and Table 7 (deduplicated ESS).
PAPER_PARTIAL_KL = {
    "swa": {"tr": 23.3, "scan": 38.1, "cipher": 101.3},
    "sws": {"tr": 21.8, "scan": 25.4, "cipher": 87.1},
    "swp": {"tr": 38.1, "scan": 102.9, "cipher": 73.9},
    "nolookahead": {"tr": 31.9, "scan": 39.9, "cipher": 95.5},
}
PAPER_LENGTH = {  # 003 Fig. 4b
    "swa": {"tr": 24.3, "scan": 65.6, "cipher": 68.4},
    "sws": {"tr": 24.3, "scan": 65.6, "cipher": 67.6},
    "swp": {"tr": 24.3, "scan": 65.6, "cipher": 59.9},
}
PAPER_ESS = {
    "swa": {"tr": 1.0, "scan": 7.9, "cipher": 1.1},
    "sws": {"tr": 1.1, "scan": 4.3, "cipher": 1.3},
    "swp": {"tr": 1.0, "scan": 1.1, "cipher": 1.0},
}


def cited(paper: dict | None, tasks: list[str]) -> list[str]:
    """The tasks of ``tasks`` that the paper's table ``paper`` (sampler -> task -> figure) has
    a figure for: only their columns show the paper's."""
    return [t for t in tasks if paper and any(t in figures for figures in paper.values())]


def _columns(runs: list[dict], papers: list[str]) -> list[tuple[dict, bool]]:
    """Each run (in task order), with whether the paper's column of its task follows it:
    after the task's last run, where the paper has the task."""
    return [
        (r, r["task"] in papers and (i + 1 == len(runs) or runs[i + 1]["task"] != r["task"]))
        for i, r in enumerate(runs)
    ]


def _table(
    runs: list[dict],
    key: str,
    se_key: str | None,
    paper: dict | None,
    title: str,
    digits: int = 1,
    figure: str = "",
    caption: str = "",
) -> list[str]:
    """One metric, a row per sampler and a column per run, beside a column of the paper's
    ``figure`` for each task it has (``paper``: sampler -> task -> value); ``caption`` below."""
    samplers = ordered({s for r in runs for s in r["samplers"]}, SAMPLER_ORDER)
    papers = cited(paper, ordered({r["task"] for r in runs}, TASK_ORDER))
    columns = _columns(runs, papers)
    rows = [
        (
            "sampler",
            *(c for r, cite in columns for c in [r["short"]] + [f"{r['task']}: 003"] * cite),
        )
    ]
    for s in samplers:
        cells = []
        for r, cite in columns:
            res = r["samplers"].get(s)
            cells.append(fmt(res[key], res[se_key] if se_key else None, digits) if res else "–")
            cells += [fmt(paper.get(s, {}).get(r["task"]))] if cite else []
        rows.append((s, *cells))
    lines = [
        f"### {title}" + (f" ({figure})" if papers else ""),
        "",
        text_table(rows, markdown=True),
    ]
    said = caption + (f" The `TASK: 003` columns: {figure}." if papers else "")
    return lines + (["", said.strip()] if said else []) + [""]


def _partial_kl(runs: list[dict]) -> list[str]:
    """Test partial KL (mean ± SE over seeds and pairs) and validation partial KL per sampler
    and run, beside 003 Fig. 4a where it has the task."""
    papers = cited(PAPER_PARTIAL_KL, ordered({r["task"] for r in runs}, TASK_ORDER))
    columns = _columns(runs, papers)
    rows = [
        (
            "sampler",
            *(
                c
                for r, cite in columns
                for c in [
                    f"{r['short']}: test ({seeds_words(r)})",
                    f"{r['short']}: validation (k = {samples_per_pair(r)})",
                ]
                + [f"{r['task']}: 003"] * cite
            ),
        )
    ]
    for s in ordered({s for r in runs for s in r["samplers"]}, SAMPLER_ORDER):
        cells = []
        for r, cite in columns:
            m = r["samplers"].get(s)
            cells += (
                [fmt(m["partial_kl"], m["partial_kl_se"]), fmt(m["validation_partial_kl"])]
                if m
                else ["–", "–"]
            )
            cells += [fmt(PAPER_PARTIAL_KL.get(s, {}).get(r["task"]))] if cite else []
        rows.append((s, *cells))
    pairs = "; ".join(
        f"{r['short']}: {r['pairs']} test pairs, {r['validation_pairs']} validation pairs"
        for r in runs
    )
    return [
        "### Partial KL, lower is better" + (" (003 Fig. 4a)" if papers else ""),
        "",
        text_table(rows, markdown=True),
        "",
        "Test: the mean over the training seeds and the test pairs ± its standard error "
        "(over seeds and pairs; with one seed, over pairs). Validation: the mean over "
        "training seeds of the partial KL on the validation pairs, which chooses the "
        f"reference sampler ({pairs}), measured after training from the header's k "
        "samples per pair (`evaluate.k`, as on test). Training measured it with "
        "`sampler.eval_k` samples per pair, on other draws (the training curves below): "
        "the two agree up to sampling noise. A partial KL is offset by −log Z of the "
        "run's scorer, so only differences between the samplers of one run mean anything: "
        "their gaps, next." + (" The `TASK: 003` columns: 003 Fig. 4a." if papers else ""),
        "",
    ]


def sampler_sections(runs: list[dict], out: Path) -> list[str]:
    """The samplers' tables, what training changed and the training curves (written to
    ``out``)."""
    of = " Training seed 0's samplers." if any(len(r["seeds"]) > 1 for r in runs) else ""
    lines = _partial_kl(runs) + gap_section(runs) + between_section(runs) + learning_section(runs)
    lines += sleep_section(runs)
    lines += _table(
        runs,
        "expected_length",
        "expected_length_se",
        PAPER_LENGTH,
        "Expected mark-string length under p, by self-normalised IS",
        figure="003 Fig. 4b",
        caption="The mean over test pairs ± its standard error over pairs." + of,
    )
    lines += _table(
        runs,
        "ess",
        None,
        PAPER_ESS,
        "Deduplicated ESS",
        figure="003 Table 7",
        caption="The mean over test pairs." + of + " 1 is not a failure on its "
        "own: a sampler whose samples' weight sits on one path scores 1, and so "
        "does a perfect one where the posterior is (nearly) one path, one "
        "alignment, which it draws k times. Read it beside the gap above.",
    )
    if any(res["pareto_k"] is not None for r in runs for res in r["samplers"].values()):
        lines += _table(
            runs,
            "pareto_k",
            None,
            None,
            "Pareto k̂ of the importance weights behind the two tables above (mean "
            "over the pairs with a k̂; above its threshold min(1 − 1/log₁₀ k, 0.7) "
            "unreliable, for k samples per pair; – where the evaluation's k samples "
            "per pair are too few to fit a tail, k < 21)",
            digits=2,
        )
        for run in runs:
            for s, res in run["samplers"].items():
                lines += reliability(
                    f"{run['label']} / {s}'s expected length and ESS", res["pareto_k_summary"]
                )
    else:
        lines += [
            "The Pareto k̂ of the importance weights behind the two tables above is not "
            "fitted: the evaluation draws fewer than 21 samples per pair, too few to fit "
            "a tail.",
            "",
        ]
    lines += _table(
        runs,
        "ess_wor",
        "ess_wor_se",
        None,
        "Deduplicated ESS of k distinct samples (without replacement, priority weights)",
        caption="The mean over test pairs ± its standard error over pairs." + of,
    )
    for name in plot_curves(runs, out):
        lines += [f"![training curves]({name})", ""]
    return lines
