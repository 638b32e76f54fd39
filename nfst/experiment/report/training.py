"""The samplers' training in the report: per run, what training changed (each sampler
untrained → trained: partial KL, the exclusive KL's lower bound, and with a WFST scorer the
exact KLs), the sleep phase, and the validation curves."""

from __future__ import annotations

from pathlib import Path

from .format import SAMPLER_ORDER, fmt, ordered, pyplot, samples_per_pair, save_figure


def learning_section(runs: list[dict]) -> list[str]:
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


def sleep_section(runs: list[dict]) -> list[str]:
    """Per run with sleep training, of training seed 0: each sampler's sleep phase (its steps
    and what ended them, its best validation partial KL and seconds) and its triples (kept of
    drawn); with more training seeds, every seed's sleep steps too."""
    lines = []
    for run in runs:
        slept = {s: r["sleep"] for s, r in run["samplers"].items() if r.get("sleep")}
        if not slept:
            continue
        seeds = len(run["seeds"]) > 1
        lines += [
            f"### {run['label']}: the sleep phase" + (", training seed 0" if seeds else ""),
            "",
            "| sampler | sleep steps (setting; ended by) | best validation partial KL "
            "| seconds | triples (the seed's) | acceptance (of strings drawn) |"
            + (" sleep steps, every seed |" if seeds else ""),
            "|---|---|---|---|---|---|" + ("---|" if seeds else ""),
        ]
        for s in ordered(slept, SAMPLER_ORDER):
            r = slept[s]
            lines.append(
                f"| {s} | {r['steps']} ({r.get('setting', r['steps'])}; "
                f"{r.get('stopped_by') or '–'}) | {fmt(r.get('best_dev_partial_kl'))} "
                f"| {fmt(r.get('sleep_seconds'), digits=0)} | {r['triples']:,} "
                f"| {r['acceptance']:.3f} (of {r['drawn']:,}) |"
                + (f" {_sleep_steps_by_seed(run['samplers'][s])} |" if seeds else "")
            )
        lines += [
            "",
            "Ended by: `steps` (a fixed `sampler.sleep_steps`), `patience` "
            "(`sampler.sleep_steps=auto`: `sampler.sleep_patience` validations without "
            "improvement) or `cap` (`sampler.sleep_cap`). Triples: those drawn for the "
            "training seed by the time each sampler's sleep phase ended (one stream, shared by "
            "the seed's samplers; a sampler's own are its sleep steps × the batch size); "
            "acceptance: the share of strings drawn from the scorer kept as triples "
            "(`nfst.train.triples`). The dotted lines of the training curves mark where each "
            "sleep phase ended.",
            "",
        ]
    return lines


def _sleep_steps_by_seed(sampler: dict) -> str:
    """Each training seed's sleep steps, comma-separated ("–" for results.json files written
    before they were recorded)."""
    by_seed = sampler.get("training_by_seed")
    if not by_seed:
        return "–"
    return ", ".join(str((t.get("sleep") or {}).get("steps", 0)) for t in by_seed)


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


def plot_curves(runs: list[dict], out: Path) -> list[str]:
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
            ylabel=f"validation partial KL (nats; k = {samples_per_pair(run, 'sampler')})",
        )
        trained.set(xlabel="training step", title="after step 0, on its own scale")
        fig.suptitle(f"{run['label']}: sampler training")
        names.append(save_figure(fig, trained, out, f"curves-{run['name']}.png"))
    return names
