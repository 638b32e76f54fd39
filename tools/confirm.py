"""The pre-registered confirmation of a default (docs/results/confirm-protocol.md): its runs'
per-pair values, collected into ``docs/results/confirm-TASK.json``, and the bound it rests on,
recomputed from that file alone.

A confirmation file is a list of runs on one task's frozen scorer and test pairs, each with its
``label`` (``default``: the candidate default; ``usual``: the usual training of the default
samplers; others as the protocol names them), its training ``seeds`` and, per sampler, its
``validation_partial_kl`` and ``per_pair_partial_kl_by_seed`` (S × P), and where the task has a
generating structure, its share of the test samples as results.json gives it (e.g.
``generating_cipher`` ± ``generating_cipher_se``, over seeds and pairs). The statistic: the
candidate's pick (its run's sampler of the lowest validation partial KL) against the best
configuration on validation (the lowest validation partial KL of every label's every sampler),
the one-sided 95% upper bound on their paired gap over seeds and pairs with a t quantile at
the Satterthwaite degrees of freedom (``nfst.evaluate.paired_gaps.upper_bound``); confirmed
where it is below the margin δ.

A candidate may also be one run's samplers with some of them trained again in another run:
``--candidate default+swa-cap`` takes the samplers of ``default``, each one that ``swa-cap``
has replaced by its own (docs/results/swa-cap-protocol.md); ``--changes NEW,OLD`` names the
two labels whose samplers' paired gaps are each sampler's own change.

From the checkout's root::

    python tools/confirm.py collect TASK LABEL=RUN_DIR [LABEL=RUN_DIR ...] --command CMD [--name N]
    python tools/confirm.py check docs/results/confirm-TASK.json --delta 1.0 [--candidate L+L]
    python tools/confirm.py table docs/results/confirm-TASK.json [--candidate L+L] [--changes N,O]

``collect`` writes ``docs/results/N-TASK.json`` (N: ``confirm``, the first protocol's);
``check`` prints the result, its last line one JSON object; ``table`` the protocol page's
table of every configuration and each sampler's own change (by default ``default`` −
``usual``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nfst.evaluate.paired_gaps import gap, upper_bound  # noqa: E402
from nfst.experiment.config import training_seed, upgraded  # noqa: E402
from nfst.experiment.report import load_results  # noqa: E402
from nfst.experiment.rundir import sampler_key  # noqa: E402
from tools.checkout import head_commit  # noqa: E402

FOLDER = ROOT / "docs" / "results"
CANDIDATE = ("default",)
PROTOCOLS = ("confirm", "swa-cap")
"""The protocols' names: each task's confirmation file is FOLDER/NAME-TASK.json (``--name``)."""


def collect(task: str, runs: dict[str, Path], command: str, commit: str) -> list[dict]:
    """The confirmation file's runs: ``runs`` maps a label to a run directory of ``task``."""
    out = []
    for label, run_dir in runs.items():
        results = load_results(run_dir)
        if results["task"] != task:
            raise SystemExit(f"{run_dir} is a run of {results['task']}, not {task}")
        seeding = upgraded(results["config"])["run"]["seeding"]
        share = results["scorer"].get("structure")  # e.g. cipher's generating_cipher
        out.append(
            {
                "label": label,
                "run": Path(run_dir).name,
                "commit": commit,
                "command": command,
                "seeds": [training_seed(results["seed"], s, seeding) for s in results["seeds"]],
                "overrides": results["config"]["run"]["overrides"],
                "scorer_from": results["config"]["run"]["from_run"],
                "samplers": {
                    name: {
                        "validation_partial_kl": m["validation_partial_kl"],
                        "partial_kl": m["partial_kl"],
                        "per_pair_partial_kl_by_seed": m["per_pair_partial_kl_by_seed"],
                        **_sleep_by_seed(Path(run_dir), name, len(results["seeds"])),
                        **{k: m[k] for k in (share, f"{share}_se") if share and k in m},
                    }
                    for name, m in results["samplers"].items()
                },
            }
        )
    return out


def _sleep_by_seed(run_dir: Path, sampler: str, seeds: int) -> dict:
    """``{"sleep_by_seed": [...]}``, each training seed's sleep record from its stage file
    (runs of an nfst before results.json's ``training_by_seed`` keep only the first seed's
    there), or {} for a sampler trained without sleep."""
    records = []
    for s in range(seeds):
        stage = run_dir / "stages" / f"sampler-{sampler_key(sampler, s)}.json"
        records.append(json.loads(stage.read_text()).get("sleep"))
    return {"sleep_by_seed": records} if any(records) else {}


def check(
    runs: list[dict],
    delta: float,
    labels: tuple[str, ...] = CANDIDATE,
    changes: tuple[str, str] | None = None,
) -> dict:
    """The protocol's statistic over a confirmation file's ``runs`` (module docstring), for
    the candidate made of the runs ``labels``; with ``changes`` (NEW, OLD) also each shared
    sampler's own change NEW − OLD with its upper bound (``own``): confirmed only where each is
    below δ too, and ``pays`` where one is below 0."""
    seeds = {tuple(run["seeds"]) for run in runs}
    if len(seeds) != 1:
        raise SystemExit(f"the runs do not share their training seeds: {sorted(seeds)}")
    configurations = _configurations(runs)
    candidate = _candidate(configurations, labels)

    def validation(key):
        return configurations[key]["validation_partial_kl"]

    pick, best = min(candidate, key=validation), min(configurations, key=validation)
    bound = upper_bound(
        configurations[pick]["per_pair_partial_kl_by_seed"],
        configurations[best]["per_pair_partial_kl_by_seed"],
    )
    result = {
        "pick": "/".join(pick),
        "best": "/".join(best),
        "seeds": list(seeds.pop()),
        "pairs": len(configurations[pick]["per_pair_partial_kl_by_seed"][0]),
        **{k: bound[k] for k in ("mean", "se", "df", "t", "upper")},
        "delta": delta,
        "confirmed": bound["upper"] < delta,
    }
    if changes is None:
        return result
    own = own_changes(runs, *changes)
    return result | {
        "own": {
            name: {k: b[k] for k in ("mean", "se", "df", "t", "upper")} for name, b in own.items()
        },
        "confirmed": result["confirmed"] and all(b["upper"] < delta for b in own.values()),
        "pays": any(b["upper"] < 0 for b in own.values()),
    }


def _configurations(runs: list[dict]) -> dict[tuple[str, str], dict]:
    """Every (label, sampler) of a confirmation file's runs, and its values."""
    return {(run["label"], name): m for run in runs for name, m in run["samplers"].items()}


def _candidate(configurations: dict, labels: tuple[str, ...]) -> list[tuple[str, str]]:
    """The candidate's (label, sampler)s: the samplers of the runs ``labels``, a later run's
    replacing an earlier one's of the same name."""
    chosen = {
        name: (label, name) for label in labels for lab, name in configurations if lab == label
    }
    if not chosen:
        raise SystemExit(f"no run labelled {' or '.join(map(repr, labels))}")
    return list(chosen.values())


def table(runs: list[dict], labels: tuple[str, ...] = CANDIDATE) -> list[str]:
    """The protocol page's table: every (label, sampler) by validation partial KL, its test
    partial KL (mean over seeds and pairs), its paired gap to the best configuration on
    validation, and its sleep steps per seed (with what ended them, for the candidate's runs
    ``labels``)."""
    configurations = _configurations(runs)
    ranked = sorted(configurations, key=lambda k: configurations[k]["validation_partial_kl"])
    best = configurations[ranked[0]]["per_pair_partial_kl_by_seed"]
    lines = [
        "| label | sampler | validation partial KL | test partial KL | gap to the best (test) "
        "| sleep steps by seed |",
        "|---|---|---|---|---|---|",
    ]
    for key in ranked:
        m = configurations[key]
        values = m["per_pair_partial_kl_by_seed"]
        test = statistics.mean(statistics.mean(v) for v in values)
        g = gap(values, best)
        shown = "best" if key == ranked[0] else f"{g['mean']:+.2f} ± {g['se']:.2f}"
        lines.append(
            f"| {key[0]} | {key[1]} | {m['validation_partial_kl']:.2f} | {test:.2f} | {shown} "
            f"| {_sleep_steps(m.get('sleep_by_seed'), key[0] in labels)} |"
        )
    return lines


def _sleep_steps(sleeps, ended: bool) -> str:
    """Each seed's sleep steps ("N each" where equal), and with ``ended`` what ended them."""
    if not sleeps:
        return "–"
    steps = [s["steps"] for s in sleeps]
    shown = f"{steps[0]:,} each" if len(set(steps)) == 1 else ", ".join(f"{n:,}" for n in steps)
    why = ", ".join(sorted({s["stopped_by"] for s in sleeps}))
    return f"{shown} ({why})" if ended else shown


def own_changes(runs: list[dict], new: str = "default", old: str = "usual") -> dict[str, dict]:
    """Each sampler's paired gap ``new`` − ``old`` on the test pairs (the samplers of both),
    with its one-sided upper bound (``upper_bound``)."""
    by_label = {run["label"]: run["samplers"] for run in runs}
    return {
        name: upper_bound(
            m["per_pair_partial_kl_by_seed"], by_label[old][name]["per_pair_partial_kl_by_seed"]
        )
        for name, m in by_label[new].items()
        if name in by_label[old]
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python tools/confirm.py")
    sub = parser.add_subparsers(dest="what", required=True)
    add = sub.add_parser("collect", help="write docs/results/NAME-TASK.json from runs")
    add.add_argument("task")
    add.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    add.add_argument("--command", required=True, help="the commands that made the runs")
    add.add_argument("--commit", help="default: the checkout's HEAD")
    add.add_argument("--name", default="confirm", choices=PROTOCOLS, help="the protocol's name")
    test = sub.add_parser("check", help="the protocol's bound from a confirmation file")
    test.add_argument("file", type=Path)
    test.add_argument("--delta", type=float, required=True, help="the margin, in nats")
    shown = sub.add_parser("table", help="the protocol page's table from a confirmation file")
    shown.add_argument("file", type=Path)
    shown.add_argument("--changes", default="default,usual", help="NEW,OLD: own changes")
    test.add_argument("--changes", help="NEW,OLD: bound each sampler's own change too")
    for p in (test, shown):
        p.add_argument("--candidate", default="+".join(CANDIDATE), help="its runs' labels, L+L")
    o = parser.parse_args(argv)
    if o.what == "collect":
        runs = dict(item.split("=", 1) for item in o.runs)
        commit = o.commit or head_commit()
        path = FOLDER / f"{o.name}-{o.task}.json"
        path.write_text(
            json.dumps(
                collect(o.task, {k: Path(v) for k, v in runs.items()}, o.command, commit), indent=1
            )
            + "\n"
        )
        print(f"written: {path}")
        return
    runs, labels = json.loads(o.file.read_text()), tuple(o.candidate.split("+"))
    if o.what == "table":
        print("\n".join(table(runs, labels)) + "\n")
        new, old = o.changes.split(",")
        changes = own_changes(runs, new, old)
        for name, g in sorted(changes.items(), key=lambda kv: kv[1]["mean"]):
            print(f"{name}: {new} − {old} {g['mean']:+.2f} ± {g['se']:.2f} (df {g['df']:.1f})")
        return
    changes = tuple(o.changes.split(",")) if o.changes else None
    result = check(runs, o.delta, labels, changes)
    for what, b in [("the candidate's pick " + result["pick"], result)] + [
        (f"{name}'s own change ({' − '.join(changes)})", b)
        for name, b in result.get("own", {}).items()
    ]:
        against = f" against the best on validation {result['best']}" if b is result else ""
        print(
            f"{o.file.name}: {what}{against}: gap {b['mean']:+.3f} ± {b['se']:.3f} "
            f"(df {b['df']:.1f}), one-sided 95% upper bound {b['upper']:.3f} "
            f"{'<' if b['upper'] < o.delta else '≥'} δ = {o.delta}"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
