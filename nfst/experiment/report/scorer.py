"""The scorer's part of the report: how it was trained and how well it explains the test
pairs (its log Ẑ lower bound, the exact log Z of a WFST scorer, the n-gram's exact
log-likelihood), with warnings where the estimates are unreliable."""

from __future__ import annotations

from pathlib import Path

from .between import scorer_digest
from .format import SAMPLER_ORDER, fmt, ordered, pyplot, reliability, save_figure


def _structures(rows: list[dict]) -> list[str]:
    """The structures (``scorer.structure``) whose shares of posterior samples some run
    records."""
    return sorted({r["scorer"]["structure"] for r in rows} - {None})


def _share(scorer: dict, structure: str) -> str:
    """The posterior's share on ``structure`` ± SE, or – for a run with another structure."""
    if scorer["structure"] != structure:
        return "–"
    return fmt(scorer[structure], scorer[f"{structure}_se"], digits=2)


def _table(rows: list[dict]) -> list[str]:
    structures = _structures(rows)
    exact = any(r["scorer"]["test_log_z_exact"] is not None for r in rows)
    lines = [
        "| run | scorer | train IWAE bound | test log Ẑ (lower bound) | Pareto k̂ | spread |"
        + (" exact log Z |" if exact else "")
        + " n-gram test log-likelihood (exact) |"
        + "".join(f" posterior {k} |" for k in structures),
        "|---|---|---|---|---|---|---|" + "---|" * (len(structures) + exact),
    ]
    for r in rows:
        sc = r["scorer"]
        ngram, pareto = sc["ngram_test_log_likelihood"], sc["test_log_z_pareto_k"]
        kind = "n-gram (WFST)" if sc["kind"] == "ngram" else f"LSTM, {sc['proposal']}"
        counted = f" (on {pareto['fitted']} of {pareto['pairs']})"
        lines.append(
            f"| {r['short']} | {kind} | {fmt(sc['train_iwae'])} | "
            f"{fmt(sc['test_log_z'], sc['test_log_z_se'])} | "
            f"{fmt(pareto['mean'], digits=2)}{counted} | {fmt(sc['test_log_z_spread'])} |"
            + (f" {fmt(sc['test_log_z_exact'])} |" if exact else "")
            + f" {fmt(ngram)} ({sc['ngram_order']}-gram) |"
            + "".join(f" {_share(sc, k)} |" for k in structures)
        )
    lines += [
        "",
        "Nats per pair. Test log Ẑ: "
        + rows[0]["scorer"]["test_log_z_estimator"]
        + "; ± is the standard error over pairs. Pareto k̂: mean over pairs of the PSIS "
        "diagnostic of the importance weights, repeated paths' equal weights included "
        "(above its threshold min(1 − 1/log₁₀ S, 0.7) for S paths an estimate is "
        "unreliable: 0.585 at 256), over the pairs it is fitted on, of all the test "
        "pairs (a fit needs 21 nonzero weights, and a tail of more than one path). "
        "Spread: the mixture's log Ẑ minus the best single proposal's, from the same "
        "draw. The n-gram's log-likelihood is exact (backward pass over its history "
        "lattice); an LSTM scorer should exceed it."
        + (" Posterior shares are self-normalised over the same samples." if structures else ""),
        "",
    ]
    return lines


def _warnings(rows: list[dict]) -> list[str]:
    """Unreliable log Ẑ estimates, an LSTM below the n-gram, and each sampler's share of
    samples with the generating structure."""
    lines = []
    for r in rows:
        lines += reliability(f"{r['label']}'s test log Ẑ", r["scorer"]["test_log_z_pareto_k"])
    for r in rows:
        sc, samplers = r["scorer"], r["samplers"]
        ll = sc["ngram_test_log_likelihood"]
        if sc["test_log_z"] < ll and sc["kind"] != "ngram":
            lines += [
                f"**{r['label']}: the LSTM's test log Ẑ is below the n-gram's exact "
                f"log-likelihood** ({sc['test_log_z']:.1f} < {ll:.1f}): either the LSTM "
                f"scorer is worse than the n-gram, or the bound is loose.",
                "",
            ]
        for k in _structures(rows):
            shares = {s: m[k] for s, m in samplers.items() if k in m}
            if shares:
                lines += [
                    f"Share of each sampler's test samples with the {k.replace('_', ' ')}"
                    f" ({r['label']}): "
                    + ", ".join(f"{s} {shares[s]:.2f}" for s in ordered(shares, SAMPLER_ORDER)),
                    "",
                ]
    return lines


def _plot_curve(rows: list[dict], out: Path) -> list[str]:
    """The training curve of each LSTM scorer, its IWAE bound on the training minibatch
    against the step (``scorer-NAME.png``, ``NAME`` the plot stem of the first run that has
    it, ``labels``): once for the runs that share it (the same file, by its SHA-256,
    ``between.scorer_digest``); none for the n-gram, fitted exactly."""
    plt = pyplot()
    lines, digests = [], [scorer_digest(r) for r in rows]
    for i, r in enumerate(rows):
        curve, digest = r["scorer"]["curve"], digests[i]
        if not curve or (digest is not None and digest in digests[:i]):  # drawn already
            continue
        sharing = [s["short"] for s, d in zip(rows, digests) if digest is not None and d == digest]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(curve["step"], curve["iwae"], label="IWAE bound, training minibatch")
        ax.set(
            xlabel="training step",
            ylabel="nats per pair",
            title=f"{', '.join(sharing) if len(sharing) > 1 else r['label']}: scorer training",
        )
        name = save_figure(fig, ax, out, f"scorer-{r['name']}.png")
        lines += [f"![scorer training]({name})", ""]
    return lines


def scorer_section(runs: list[dict], out: Path) -> list[str]:
    """Per run: how the scorer was trained and how well it explains the test pairs, and the
    scorer's training curve (written to ``out``)."""
    rows = runs
    return ["## The scorer", ""] + _table(rows) + _warnings(rows) + _plot_curve(rows, out)
