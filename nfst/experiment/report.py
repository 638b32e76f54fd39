"""The partial-KL report: tables in the form of 003 Fig. 4a, 4b and Table 7, training curves,
offset KL against the number of particles (000 Fig. 2) and qualitative proposals (003 Tables
4–6), from the ``results.json`` of one or more runs (``nfst report RUN_DIR ...``).

Writes ``report.md``, ``report.json`` (the same numbers) and PNG plots into one folder.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional, Sequence

from ..errors import ReportError
from ..evaluate.metrics import mean_and_se
from ..evaluate.pareto import PARETO_K_WARN
from ..evaluate.tables import text_table

SAMPLER_ORDER = ("swa", "sws", "swp", "swp-prefix", "nolookahead")
TASK_ORDER = ("tr", "scan", "cipher")

# 003 Fig. 4a / Fig. 7 (partial KL, nats) and Table 7 (deduplicated ESS).
PAPER_PARTIAL_KL = {
    "swa": {"tr": 23.3, "scan": 38.1, "cipher": 101.3},
    "sws": {"tr": 21.8, "scan": 25.4, "cipher": 87.1},
    "swp": {"tr": 38.1, "scan": 102.9, "cipher": 73.9},
    "nolookahead": {"tr": 31.9, "scan": 39.9, "cipher": 95.5},
}
PAPER_ESS = {
    "swa": {"tr": 1.0, "scan": 7.9, "cipher": 1.1},
    "sws": {"tr": 1.1, "scan": 4.3, "cipher": 1.3},
    "swp": {"tr": 1.0, "scan": 1.1, "cipher": 1.0},
}


def load_runs(run_dirs: Sequence[str | Path]) -> list[dict]:
    runs = []
    for d in run_dirs:
        path = Path(d) / "results.json"
        try:
            runs.append(json.loads(path.read_text()) | {"run_dir": str(d)})
        except FileNotFoundError:
            raise ReportError(f"{path}: not found (has the run finished its evaluate stage?)")
        except json.JSONDecodeError as exc:
            raise ReportError(f"{path}: not valid JSON ({exc})")
    return runs


def _ordered(names, order):
    return [n for n in order if n in names] + sorted(set(names) - set(order))


def _fmt(value, se=None, digits=1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = f"{value:.{digits}f}"
    return f"{text} ± {se:.{digits}f}" if se is not None else text


def _table(runs: list[dict], key: str, se_key: str | None, paper: dict | None, title: str,
           digits: int = 1) -> list[str]:
    tasks = _ordered([r["task"] for r in runs], TASK_ORDER)
    samplers = _ordered({s for r in runs for s in r.get("samplers", {})}, SAMPLER_ORDER)
    by_task = {r["task"]: r for r in runs}
    rows = [("sampler", *tasks)]
    for s in samplers:
        cells = []
        for t in tasks:
            res = by_task[t].get("samplers", {}).get(s)
            ours = _fmt(res.get(key), res.get(se_key) if se_key else None, digits) if res else "–"
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
                                              if exact else "") + " training ESS | steps |",
                  "|---|---|---|---|---|---|" + ("---|---|" if exact else "")]
        for s in _ordered(samplers, SAMPLER_ORDER):
            r = samplers[s]
            if "untrained_partial_kl" not in r:
                continue
            cells = [_change(r, "exclusive_kl_lower_bound")]
            if exact:
                cells += [_change(r, "exclusive_kl"),
                          _fmt(r.get("inclusive_kl"), r.get("inclusive_kl_se"))]
            training = r.get("training") or {}
            lines.append(
                f"| {s} | {_fmt(r['untrained_partial_kl'])} → {_fmt(r['partial_kl'])} | "
                f"{_fmt(r['untrained_partial_kl'] - r['partial_kl'])} | {' | '.join(cells)} | "
                f"{_fmt(training.get('mean_ess'), digits=2)} | {training.get('steps', '–')} |")
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
        ranked = sorted((s for s in samplers if "per_pair_partial_kl" in samplers[s]),
                        key=lambda s: samplers[s]["partial_kl"])
        if len(ranked) > 1:
            chain = ranked[0]
            for a, b in zip(ranked, ranked[1:]):
                diff, se = mean_and_se([x - y for x, y in zip(
                    samplers[b]["per_pair_partial_kl"], samplers[a]["per_pair_partial_kl"])])
                chain += f" < {b} (+{diff:.2f} ± {se:.2f})"
            lines += ["Ordering by trained partial KL; in parentheses the mean paired "
                      "difference to the sampler before ± its standard error: " + chain, ""]
    return lines


def _change(r: dict, key: str) -> str:
    """``untrained_KEY → KEY``, each ± its standard error, or – when absent."""
    if key not in r:
        return "–"
    before = _fmt(r.get(f"untrained_{key}"), r.get(f"untrained_{key}_se"))
    return f"{before} → {_fmt(r[key], r.get(f'{key}_se'))}"


def _smc_table(smc: dict, key: str, digits: int) -> list[str]:
    """One metric of an SMC evaluation as a markdown table: methods × M."""
    lines = ["| method | " + " | ".join(f"M={m}" for m in smc["M"]) + " |",
             "|---" * (len(smc["M"]) + 1) + "|"]
    return lines + [f"| {method} | " + " | ".join(_fmt(v, digits=digits) for v in res[key])
                    + " |" for method, res in smc["methods"].items() if key in res]


def _reliability(name: str, pareto: Optional[dict]) -> list[str]:
    """A warning line when an IS estimate's Pareto k̂ is above the threshold on some pairs."""
    if not pareto or not pareto.get("over_threshold"):
        return []
    top = f"; max {pareto['max']:.2f}" if pareto.get("max") is not None else ""
    return [f"**Warning: {name} is unreliable on {pareto['over_threshold']:.0%} of the pairs** "
            f"(Pareto k̂ > {pareto['threshold']}{top}): the importance "
            f"weights are so heavy-tailed that the estimate can be far off whatever its "
            f"standard error says. More samples or a better proposal are needed.", ""]


def _scorer(runs: list[dict]) -> list[str]:
    """Per run: how the scorer was trained and how well it explains the test pairs."""
    rows = [r for r in runs if r.get("scorer")]
    if not rows:
        return []
    structures = sorted({k for r in rows for k in r["scorer"]
                         if k.startswith("generating") and not k.endswith("_se")})
    exact = any(r["scorer"].get("test_log_z_exact") is not None for r in rows)
    lines = ["## The scorer", "",
             "| task | scorer | train IWAE bound | test log Ẑ (lower bound) | Pareto k̂ | spread |"
             + (" exact log Z |" if exact else "")
             + " n-gram test log-likelihood (exact) |"
             + "".join(f" posterior {k} |" for k in structures),
             "|---|---|---|---|---|---|---|" + "---|" * (len(structures) + exact)]
    for r in rows:
        sc = r["scorer"]
        ngram = sc.get("ngram_test_log_likelihood")
        pareto = sc.get("test_log_z_pareto_k") or {}
        kind = "n-gram (WFST)" if sc.get("kind") == "ngram" else f"LSTM, {sc.get('proposal')}"
        lines.append(
            f"| {r['task']} | {kind} | {_fmt(sc.get('train_iwae'))} | "
            f"{_fmt(sc['test_log_z'], sc.get('test_log_z_se'))} | "
            f"{_fmt(pareto.get('mean'), digits=2)} | {_fmt(sc.get('test_log_z_spread'))} |"
            + (f" {_fmt(sc.get('test_log_z_exact'))} |" if exact else "")
            + f" {_fmt(ngram)} ({sc.get('ngram_order')}-gram) |"
            + "".join(f" {_fmt(sc.get(k), sc.get(k + '_se'), digits=2)} |" for k in structures))
    lines += ["", "Nats per pair. Test log Ẑ: " + rows[0]["scorer"]["test_log_z_estimator"]
              + "; ± is the standard error over pairs. Pareto k̂: mean over pairs of the PSIS "
                "diagnostic of the importance weights (above 0.7 an estimate is unreliable). "
                "Spread: the mixture's log Ẑ minus the best single proposal's, from the same "
                "draw. The n-gram's log-likelihood is exact (backward pass over its history "
                "lattice); an LSTM scorer should exceed it."
              + (" Posterior shares are self-normalised over the same samples." if structures
                 else ""), ""]
    for r in rows:
        lines += _reliability(f"{r['task']}'s test log Ẑ", r["scorer"].get("test_log_z_pareto_k"))
    for r in rows:
        sc, samplers = r["scorer"], r.get("samplers", {})
        ll = sc.get("ngram_test_log_likelihood")
        if ll is not None and sc["test_log_z"] < ll and sc.get("kind") != "ngram":
            lines += [f"**{r['task']}: the LSTM's test log Ẑ is below the n-gram's exact "
                      f"log-likelihood** ({sc['test_log_z']:.1f} < {ll:.1f}): either the LSTM "
                      f"scorer is worse than the n-gram, or the bound is loose.", ""]
        for k in structures:
            shares = {s: m[k] for s, m in samplers.items() if k in m}
            if shares:
                lines += [f"Share of each sampler's test samples with the {k.replace('_', ' ')}"
                          f" ({r['task']}): " + ", ".join(
                              f"{s} {shares[s]:.2f}" for s in _ordered(shares, SAMPLER_ORDER)),
                          ""]
    return lines


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    return plt


def _save(fig, ax, out: Path, name: str) -> str:
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / name, dpi=120)
    _pyplot().close(fig)
    return name


def _plot_curves(runs: list[dict], out: Path) -> list[str]:
    plt = _pyplot()
    names = []
    for run in runs:
        curves = {s: r["curve"] for s, r in run.get("samplers", {}).items() if r.get("curve")}
        if not curves:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for s in _ordered(curves, SAMPLER_ORDER):
            ax.plot(curves[s]["step"], curves[s]["val_partial_kl"], label=s, marker=".")
        ax.set(xlabel="training step", ylabel="validation partial KL (nats)",
               title=f"{run['task']}: sampler training")
        names.append(_save(fig, ax, out, f"curves-{run['task']}.png"))
    return names


def plot_offset_kl(result: dict, path: str | Path, title: str = "") -> Path:
    """Offset KL per SMC method (``nfst.evaluate.smc.evaluate_smc``'s result), with standard
    errors, against M on a log scale like 000 Fig. 2 and, beside it, against scorer calls per
    pair (the comparison at equal cost: methods spend different calls at the same M) (a PNG)."""
    plt = _pyplot()
    methods = result["methods"]
    by_calls = all("scorer_calls" in res for res in methods.values())
    fig, axes = plt.subplots(1, 2 if by_calls else 1, figsize=(12 if by_calls else 7.5, 4),
                             squeeze=False)
    plain = plt.FuncFormatter(lambda v, _: f"{v:g}")  # 10, not 10¹
    # label the minor ticks at 2, 3 and 5 times a power of ten: readable over a few decades
    sparse = plt.FuncFormatter(
        lambda v, _: f"{v:g}" if round(v / 10 ** math.floor(math.log10(v))) in (2, 3, 5) else "")
    for i, ax in enumerate(axes[0]):
        for name, res in methods.items():
            ax.errorbar(res["scorer_calls"] if i else result["M"], res["offset_kl"],
                        yerr=res.get("offset_kl_se"), label=name, marker="o", capsize=2,
                        linestyle="--" if name.startswith(("IS", "PS:R[")) else "-")
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
        smc = run.get("smc")
        if smc:
            name = f"smc-{run['task']}.png"
            plot_offset_kl(smc, out / name,
                           f"{run['task']}: SMC with {smc.get('sampler', '?')} proposals")
            names.append(name)
    return names


def write_report(run_dirs: Sequence[str | Path], out_dir: str | Path) -> Path:
    """Merge the runs (one per task) into ``out_dir/report.md``; returns its path."""
    runs = load_runs(run_dirs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# nfst report", "",
             "Runs: " + ", ".join(f"`{r['run_dir']}` ({r['task']}, preset {r.get('preset')})"
                                  for r in runs), ""]
    lines += _scorer(runs)
    lines += _table(runs, "partial_kl", "partial_kl_se", PAPER_PARTIAL_KL,
                    "Partial KL, lower is better (003 Fig. 4a)")
    lines += _learning(runs)
    lines += _table(runs, "expected_length", "expected_length_se", None,
                    "Expected mark-string length under p, by self-normalised IS (003 Fig. 4b)")
    lines += _table(runs, "ess", None, PAPER_ESS, "Deduplicated ESS (003 Table 7)")
    lines += _table(runs, "pareto_k", None, None,
                    f"Pareto k̂ of the importance weights behind the two tables above (mean over "
                    f"pairs; above {PARETO_K_WARN} unreliable; – where the evaluation's k samples "
                    f"per pair are too few to fit a tail, k < 21)", digits=2)
    for run in runs:
        for s, res in run.get("samplers", {}).items():
            lines += _reliability(f"{run['task']} / {s}'s expected length and ESS",
                                  {"over_threshold": res.get("pareto_k_over_threshold"),
                                   "threshold": PARETO_K_WARN})
    lines += _table(runs, "ess_wor", "ess_wor_se", None,
                    "Deduplicated ESS of k distinct samples (without replacement, priority weights)")
    for name in _plot_curves(runs, out):
        lines += [f"![training curves]({name})", ""]
    smc_plots = _plot_smc(runs, out)
    if smc_plots:
        lines += ["## Particle smoothing: offset KL against M (000 Fig. 2)", ""]
        for run in runs:
            smc = run.get("smc")
            if not smc:
                continue
            lines += [f"### {run['task']}", ""] + _smc_table(smc, "offset_kl", 2)
            if any("scorer_calls" in res for res in smc["methods"].values()):
                lines += ["", "Scorer calls per pair:", ""] + _smc_table(smc, "scorer_calls", 0)
            if any("pareto_k" in res for res in smc["methods"].values()):
                lines += ["", "Pareto k̂ of the final weights (mean over runs and pairs; – where "
                          "it cannot be fitted: the beam, fewer than 21 particles, or too few "
                          "distinct weights):", ""]
                lines += _smc_table(smc, "pareto_k", 2)
                high = [f"{method} at M={m}" for method, res in smc["methods"].items()
                        for m, k in zip(smc["M"], res.get("pareto_k", []))
                        if k is not None and k > PARETO_K_WARN]
                if high:
                    lines += ["", f"**Warning: Pareto k̂ > {PARETO_K_WARN} for "
                              + ", ".join(high) + "**: the weights are so heavy-tailed that "
                              "these offset KLs can be far off whatever their standard errors say."]
            lines.append("")
        lines += [f"![offset KL]({name})" for name in smc_plots] + [""]
    lines += ["## Qualitative proposals (003 Tables 4–6)", "",
              "For each test pair, the sample with the largest importance weight p̃/q.", ""]
    for run in runs:
        for s in _ordered(run.get("samplers", {}), SAMPLER_ORDER):
            examples = run["samplers"][s].get("proposals", [])
            if not examples:
                continue
            lines += [f"**{run['task']} / {s}**", "", "| x | y | log q | log p̃ | marks |",
                      "|---|---|---|---|---|"]
            lines += [f"| `{ex['x']}` | `{ex['y']}` | {ex['log_q']:.2f} | {ex['log_p']:.2f} | "
                      f"`{ex['proposal']}` |" for ex in examples]
            lines.append("")
    path = out / "report.md"
    path.write_text("\n".join(lines))
    (out / "report.json").write_text(json.dumps({"runs": runs}, indent=1))
    return path
