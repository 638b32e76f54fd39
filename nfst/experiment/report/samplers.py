"""The samplers' part of the report: tables in the form of 003 Fig. 4a, 4b and Table 7, beside
the paper's figures for the tasks it has, the gaps to the reference sampler
(``reference_gaps``), what training changed, the sleep phase and training curves."""

from __future__ import annotations

from pathlib import Path

from ...evaluate.tables import text_table
from .between import between_section
from .format import SAMPLER_ORDER, TASK_ORDER, fmt, ordered, pyplot, reliability, save_figure
from .reference_gaps import gap_section, seeds_words

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
                    f"{r['short']}: validation (k = {_k(r)})",
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


def _k(run: dict, setting: str = "evaluate") -> int:
    """Samples per pair of the run's evaluation (``evaluate.k``), or of training's
    validation (``setting="sampler"``: ``sampler.eval_k``)."""
    preset = run["config"]["preset"]
    return preset["evaluate"]["k"] if setting == "evaluate" else preset["sampler"]["eval_k"]


def _learning(runs: list[dict]) -> list[str]:
    """Per run, of training seed 0: each sampler's test partial KL untrained → trained, the
    drop, the lower bound on the exclusive KL before and after (and, with a WFST scorer, the
    exact-log-Z exclusive KL and the inclusive KL), its training ESS and what stopped it."""
    lines = []
    for run in runs:
        samplers, log_z = run["samplers"], run["log_z"]
        exact = any(r["exclusive_kl"] is not None for r in samplers.values())
        seed = ", training seed 0" if len(run["seeds"]) > 1 else ""
        lines += [
            f"### {run['label']}: what training changed (test pairs{seed})",
            "",
            "| sampler | partial KL untrained → trained | drop | exclusive KL lower bound "
            "untrained → trained |"
            + (" exclusive KL untrained → trained | inclusive KL |" if exact else "")
            + " training ESS | steps "
            "(best; stopped by) |",
            "|---|---|---|---|---|---|" + ("---|---|" if exact else ""),
        ]
        for s in ordered(samplers, SAMPLER_ORDER):
            r = samplers[s]
            cells = [_change(r, "exclusive_kl_lower_bound")]
            if exact:
                cells += [_change(r, "exclusive_kl"), fmt(r["inclusive_kl"], r["inclusive_kl_se"])]
            training = r["training"]
            trained = r["partial_kl_by_seed"][0]
            lines.append(
                f"| {s} | {fmt(r['untrained_partial_kl'])} → {fmt(trained)} | "
                f"{fmt(r['untrained_partial_kl'] - trained)} | {' | '.join(cells)} | "
                f"{fmt(training['mean_ess'], digits=2)} | {_stopping(r)} |"
            )
        lines.append("")
        if log_z:
            caption = (
                f"Exclusive KL lower bound: partial KL + log Ẑ per pair, log Ẑ by "
                f"{log_z['method']}. The column is therefore low by the same "
                f"log Z − E[log Ẑ] for every sampler: compare differences between "
                f"samplers, not ratios."
                + (
                    " Exclusive KL: partial KL + the exact log Z of the WFST scorer "
                    "(unbiased); inclusive KL: from exact posterior samples (unbiased)."
                    if exact
                    else ""
                )
                + " ± is the standard error over pairs. Training ESS: mean over steps "
                "of 1/Σ w̄² of the k training weights."
            )
            lines += [caption, ""] if caption not in lines else []  # said once, for all
    return lines


def _sleep(runs: list[dict]) -> list[str]:
    """Per run with sleep training, of training seed 0: each sampler's sleep phase (its steps
    and what ended them, its best validation partial KL and seconds) and its triples (kept of
    drawn)."""
    lines = []
    for run in runs:
        slept = {s: r["sleep"] for s, r in run["samplers"].items() if r.get("sleep")}
        if not slept:
            continue
        seed = ", training seed 0" if len(run["seeds"]) > 1 else ""
        lines += [
            f"### {run['label']}: the sleep phase{seed}",
            "",
            "| sampler | sleep steps (setting; ended by) | best validation partial KL "
            "| seconds | triples | acceptance (of strings drawn) |",
            "|---|---|---|---|---|---|",
        ]
        for s in ordered(slept, SAMPLER_ORDER):
            r = slept[s]
            lines.append(
                f"| {s} | {r['steps']} ({r.get('setting', r['steps'])}; "
                f"{r.get('stopped_by') or '–'}) | {fmt(r.get('best_dev_partial_kl'))} "
                f"| {fmt(r.get('sleep_seconds'), digits=0)} | {r['triples']:,} "
                f"| {r['acceptance']:.3f} (of {r['drawn']:,}) |"
            )
        lines += [
            "",
            "Ended by: `steps` (a fixed `sampler.sleep_steps`), `patience` "
            "(`sampler.sleep_steps=auto`: `sampler.sleep_patience` validations without "
            "improvement) or `cap` (`sampler.sleep_cap`). Triples: those drawn for the "
            "training seed, shared by its samplers; acceptance: the share of strings "
            "drawn from the scorer kept as triples (`nfst.train.triples`). The dotted "
            "lines of the training curves mark where each sleep phase ended.",
            "",
        ]
    return lines


def _stopping(r: dict) -> str:
    """``steps (best step; what stopped training)``, from results.json's per-sampler keys."""
    if r["stopped_by"] is None:
        return str(r["steps"])
    return f"{r['steps']} ({r['best_step']}; {r['stopped_by']})"


def _change(r: dict, key: str) -> str:
    """``untrained_KEY → KEY``, each ± its standard error, or – when null."""
    if r[key] is None:
        return "–"
    before = fmt(r[f"untrained_{key}"], r[f"untrained_{key}_se"])
    return f"{before} → {fmt(r[key], r[f'{key}_se'])}"


def _plot_curves(runs: list[dict], out: Path) -> list[str]:
    """Each run's validation curves (``curves-NAME.png``, ``NAME`` its plot stem): every
    sampler's validation partial KL against the training step, as training measured it
    (``sampler.eval_k`` samples per pair), from step 0 (untrained) and, beside it, from the
    first validation after it on a scale of its own: step 0 is often tens of nats above the
    rest, which would flatten a difference of a nat between trained samplers. A dotted line
    in the sampler's colour marks the end of its sleep phase."""
    plt = pyplot()
    names = []
    for run in runs:
        curves = {s: r["curve"] for s, r in run["samplers"].items() if r["curve"]["step"]}
        if not curves:
            continue
        fig, (whole, trained) = plt.subplots(1, 2, figsize=(11, 4))
        for i, s in enumerate(ordered(curves, SAMPLER_ORDER)):
            points = list(zip(curves[s]["step"], curves[s]["val_partial_kl"]))
            whole.plot(*zip(*points), label=s, marker=".", color=f"C{i}")
            later = [(step, kl) for step, kl in points if step > 0]
            if later:
                trained.plot(*zip(*later), label=s, marker=".", color=f"C{i}")
            switch = (run["samplers"][s].get("sleep") or {}).get("steps")
            for ax in (whole, trained) if switch else ():
                ax.axvline(switch, color=f"C{i}", linestyle=":")
        whole.set(
            xlabel="training step",
            title="from step 0 (untrained)",
            ylabel=f"validation partial KL (nats; k = {_k(run, 'sampler')})",
        )
        trained.set(xlabel="training step", title="after step 0, on its own scale")
        fig.suptitle(f"{run['label']}: sampler training")
        names.append(save_figure(fig, trained, out, f"curves-{run['name']}.png"))
    return names


def sampler_sections(runs: list[dict], out: Path) -> list[str]:
    """The samplers' tables, what training changed and the training curves (written to
    ``out``)."""
    of = " Training seed 0's samplers." if any(len(r["seeds"]) > 1 for r in runs) else ""
    lines = _partial_kl(runs) + gap_section(runs) + between_section(runs) + _learning(runs)
    lines += _sleep(runs)
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
    for name in _plot_curves(runs, out):
        lines += [f"![training curves]({name})", ""]
    return lines
