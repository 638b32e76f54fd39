"""The samplers' part of the report: tables in the form of 003 Fig. 4a, 4b and Table 7 beside
the paper's figures, what training changed, training curves and qualitative proposals (003
Tables 4–6)."""

from __future__ import annotations

from pathlib import Path

from ...evaluate.metrics import mean_and_se
from ...evaluate.tables import text_table
from .format import SAMPLER_ORDER, TASK_ORDER, fmt, ordered, pyplot, reliability, save_figure

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


def _table(runs: list[dict], key: str, se_key: str | None, paper: dict | None, title: str,
           digits: int = 1) -> list[str]:
    tasks = ordered([r["task"] for r in runs], TASK_ORDER)
    samplers = ordered({s for r in runs for s in r.get("samplers", {})}, SAMPLER_ORDER)
    by_task = {r["task"]: r for r in runs}
    rows = [("sampler", *tasks)]
    for s in samplers:
        cells = []
        for t in tasks:
            res = by_task[t].get("samplers", {}).get(s)
            ours = fmt(res.get(key), res.get(se_key) if se_key else None, digits) if res else "–"
            ref = paper.get(s, {}).get(t) if paper else None
            cells.append(f"{ours} ({ref})" if ref is not None else ours)
        rows.append((s, *cells))
    lines = [f"### {title}", "", text_table(rows, markdown=True)]
    if paper:
        lines += ["", "Ours ± standard error; the paper's figure in parentheses. Absolute values "
                      "depend on the frozen scorer: compare orderings and ratios."]
    return lines + [""]


def _learning(runs: list[dict]) -> list[str]:
    """Per run: each sampler's test partial KL untrained → trained, the drop, the lower bound on
    the exclusive KL before and after (and, with a WFST scorer, the exact-log-Z exclusive KL
    and the inclusive KL), and the samplers' ordering with paired standard errors."""
    lines = []
    for run in runs:
        samplers = run.get("samplers", {})
        if not any("untrained_partial_kl" in r for r in samplers.values()):
            continue
        log_z = run.get("log_z") or {}
        exact = any("exclusive_kl" in r for r in samplers.values())
        lines += [f"### {run['task']}: what training changed (test pairs)", "",
                  "| sampler | partial KL untrained → trained | drop | exclusive KL lower bound "
                  "untrained → trained |" + (" exclusive KL untrained → trained | inclusive KL |"
                                              if exact else "") + " training ESS | steps "
                  "(best; stopped by) |",
                  "|---|---|---|---|---|---|" + ("---|---|" if exact else "")]
        for s in ordered(samplers, SAMPLER_ORDER):
            r = samplers[s]
            if "untrained_partial_kl" not in r:
                continue
            cells = [_change(r, "exclusive_kl_lower_bound")]
            if exact:
                cells += [_change(r, "exclusive_kl"),
                          fmt(r.get("inclusive_kl"), r.get("inclusive_kl_se"))]
            training = r.get("training") or {}
            lines.append(
                f"| {s} | {fmt(r['untrained_partial_kl'])} → {fmt(r['partial_kl'])} | "
                f"{fmt(r['untrained_partial_kl'] - r['partial_kl'])} | {' | '.join(cells)} | "
                f"{fmt(training.get('mean_ess'), digits=2)} | {_stopping(r, training)} |")
        lines.append("")
        if log_z:
            lines += [f"Exclusive KL lower bound: partial KL + log Ẑ per pair, log Ẑ by "
                      f"{log_z['method']}. The column is therefore low by the same "
                      f"log Z − E[log Ẑ] for every sampler: compare differences between "
                      f"samplers, not ratios."
                      + (" Exclusive KL: partial KL + the exact log Z of the WFST scorer "
                         "(unbiased); inclusive KL: from exact posterior samples (unbiased)."
                         if exact else "")
                      + " ± is the standard error over pairs. Training ESS: mean over steps "
                        "of 1/Σ w̄² of the k training weights.", ""]
        lines += _ordering(samplers)
    return lines


def _stopping(r: dict, training: dict) -> str:
    """``steps (best step; what stopped training)``, from results.json's per-sampler keys."""
    steps = r.get("steps", training.get("steps", "–"))
    if r.get("stopped_by") is None:
        return str(steps)
    return f"{steps} ({r.get('best_step')}; {r['stopped_by']})"


def gaps_to_best(samplers: dict) -> dict:
    """Per sampler: the mean over test pairs of its partial KL minus the best sampler's, and
    that difference's standard error (paired: on one scorer log Z cancels, so it is a
    difference of exclusive KLs)."""
    ranked = [s for s in samplers if "per_pair_partial_kl" in samplers[s]]
    if not ranked:
        return {}
    best = min(ranked, key=lambda s: samplers[s]["partial_kl"])
    return {s: mean_and_se([x - y for x, y in zip(samplers[s]["per_pair_partial_kl"],
                                                  samplers[best]["per_pair_partial_kl"])])
            for s in ranked}


def _gaps(runs: list[dict]) -> list[str]:
    """Each sampler's gap to the best sampler of its run, per task (runs of one preset)."""
    tasks = ordered([r["task"] for r in runs], TASK_ORDER)
    gaps = {r["task"]: gaps_to_best(r.get("samplers", {})) for r in runs}
    samplers = ordered({s for g in gaps.values() for s in g}, SAMPLER_ORDER)
    if not samplers:
        return []
    rows = [("sampler", *tasks)]
    rows += [(s, *(fmt(*gaps[t][s], digits=1) if s in gaps[t] else "–" for t in tasks))
             for s in samplers]
    return ["### Gap to the best sampler (test partial KL, paired)", "",
            text_table(rows, markdown=True), "",
            "The mean over test pairs of each sampler's partial KL minus the best sampler's ± "
            "its standard error. Unlike the partial KLs, gaps compare across presets and "
            "scorers.", ""]


def _ordering(samplers: dict) -> list[str]:
    """The samplers by trained partial KL, each with its mean paired difference to the one
    before ± its standard error."""
    ranked = sorted((s for s in samplers if "per_pair_partial_kl" in samplers[s]),
                    key=lambda s: samplers[s]["partial_kl"])
    if len(ranked) <= 1:
        return []
    chain = ranked[0]
    for a, b in zip(ranked, ranked[1:]):
        diff, se = mean_and_se([x - y for x, y in zip(
            samplers[b]["per_pair_partial_kl"], samplers[a]["per_pair_partial_kl"])])
        chain += f" < {b} (+{diff:.2f} ± {se:.2f})"
    return ["Ordering by trained partial KL; in parentheses the mean paired "
            "difference to the sampler before ± its standard error: " + chain, ""]


def _change(r: dict, key: str) -> str:
    """``untrained_KEY → KEY``, each ± its standard error, or – when absent."""
    if key not in r:
        return "–"
    before = fmt(r.get(f"untrained_{key}"), r.get(f"untrained_{key}_se"))
    return f"{before} → {fmt(r[key], r.get(f'{key}_se'))}"


def _plot_curves(runs: list[dict], out: Path) -> list[str]:
    plt = pyplot()
    names = []
    for run in runs:
        curves = {s: r["curve"] for s, r in run.get("samplers", {}).items() if r.get("curve")}
        if not curves:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for s in ordered(curves, SAMPLER_ORDER):
            ax.plot(curves[s]["step"], curves[s]["val_partial_kl"], label=s, marker=".")
        ax.set(xlabel="training step", ylabel="validation partial KL (nats)",
               title=f"{run['task']}: sampler training")
        names.append(save_figure(fig, ax, out, f"curves-{run['task']}.png"))
    return names


def sampler_sections(runs: list[dict], out: Path) -> list[str]:
    """The samplers' tables, what training changed and the training curves (written to
    ``out``)."""
    lines = _table(runs, "partial_kl", "partial_kl_se", PAPER_PARTIAL_KL,
                   "Partial KL, lower is better (003 Fig. 4a)")
    lines += _gaps(runs)
    lines += _learning(runs)
    lines += _table(runs, "expected_length", "expected_length_se", PAPER_LENGTH,
                    "Expected mark-string length under p, by self-normalised IS (003 Fig. 4b)")
    lines += _table(runs, "ess", None, PAPER_ESS, "Deduplicated ESS (003 Table 7)")
    if any(res.get("pareto_k") is not None for r in runs for res in r.get("samplers", {}).values()):
        lines += _table(runs, "pareto_k", None, None,
                        "Pareto k̂ of the importance weights behind the two tables above (mean "
                        "over the pairs with a k̂; above its threshold min(1 − 1/log₁₀ k, 0.7) "
                        "unreliable, for k samples per pair; – where the evaluation's k samples "
                        "per pair are too few to fit a tail, k < 21)", digits=2)
        for run in runs:
            for s, res in run.get("samplers", {}).items():
                lines += reliability(f"{run['task']} / {s}'s expected length and ESS",
                                     res.get("pareto_k_summary")
                                     or {"over_threshold": res.get("pareto_k_over_threshold")})
    else:
        lines += ["The Pareto k̂ of the importance weights behind the two tables above is not "
                  "fitted: the evaluation draws fewer than 21 samples per pair, too few to fit "
                  "a tail.", ""]
    lines += _table(runs, "ess_wor", "ess_wor_se", None,
                    "Deduplicated ESS of k distinct samples (without replacement, priority weights)")
    for name in _plot_curves(runs, out):
        lines += [f"![training curves]({name})", ""]
    return lines


def proposals_section(runs: list[dict]) -> list[str]:
    """For each test pair, the sample with the largest importance weight (003 Tables 4–6)."""
    lines = ["## Qualitative proposals (003 Tables 4–6)", "",
             "For each test pair, the sample with the largest importance weight p̃/q.", ""]
    for run in runs:
        for s in ordered(run.get("samplers", {}), SAMPLER_ORDER):
            examples = run["samplers"][s].get("proposals", [])
            if not examples:
                continue
            lines += [f"**{run['task']} / {s}**", "", "| x | y | log q | log p̃ | marks |",
                      "|---|---|---|---|---|"]
            lines += [f"| `{ex['x']}` | `{ex['y']}` | {ex['log_q']:.2f} | {ex['log_p']:.2f} | "
                      f"`{ex['proposal']}` |" for ex in examples]
            lines.append("")
    return lines
