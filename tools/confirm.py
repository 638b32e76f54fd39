"""The pre-registered confirmation of a default (docs/results/confirm-protocol.md): its runs'
per-pair values, collected into ``docs/results/confirm-TASK.json``, and the bound it rests on,
recomputed from that file alone.

A confirmation file is a list of runs on one task's frozen scorer and test pairs, each with its
``label`` (``default``: the candidate default; ``usual``: the usual training of the default
samplers; others as the protocol names them), its training ``seeds`` and, per sampler, its
``validation_partial_kl`` and ``per_pair_partial_kl_by_seed`` (S × P). The statistic: the
candidate's pick (its run's sampler of the lowest validation partial KL) against the best
configuration on validation (the lowest validation partial KL of every label's every sampler),
the one-sided 95% upper bound on their paired gap over seeds and pairs with a t quantile at
the Satterthwaite degrees of freedom (``nfst.evaluate.paired_gaps.upper_bound``); confirmed
where it is below the margin δ.

From the checkout's root::

    python tools/confirm.py collect TASK LABEL=RUN_DIR [LABEL=RUN_DIR ...] --command CMD
    python tools/confirm.py check docs/results/confirm-TASK.json --delta 1.0

``check`` prints the result, its last line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nfst.evaluate.paired_gaps import upper_bound  # noqa: E402
from nfst.experiment.config import training_seed, upgraded  # noqa: E402
from nfst.experiment.report import load_results  # noqa: E402
from nfst.experiment.rundir import sampler_key  # noqa: E402
from tools.checkout import head_commit  # noqa: E402

FOLDER = ROOT / "docs" / "results"
CANDIDATE = "default"


def collect(task: str, runs: dict[str, Path], command: str, commit: str) -> list[dict]:
    """The confirmation file's runs: ``runs`` maps a label to a run directory of ``task``."""
    out = []
    for label, run_dir in runs.items():
        results = load_results(run_dir)
        if results["task"] != task:
            raise SystemExit(f"{run_dir} is a run of {results['task']}, not {task}")
        seeding = upgraded(results["config"])["run"]["seeding"]
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


def check(runs: list[dict], delta: float) -> dict:
    """The protocol's statistic over a confirmation file's ``runs`` (module docstring)."""
    seeds = {tuple(run["seeds"]) for run in runs}
    if len(seeds) != 1:
        raise SystemExit(f"the runs do not share their training seeds: {sorted(seeds)}")
    configurations = {
        (run["label"], name): m for run in runs for name, m in run["samplers"].items()
    }
    candidate = [key for key in configurations if key[0] == CANDIDATE]
    if not candidate:
        raise SystemExit(f"no run labelled {CANDIDATE!r}")

    def validation(key):
        return configurations[key]["validation_partial_kl"]

    pick, best = min(candidate, key=validation), min(configurations, key=validation)
    bound = upper_bound(
        configurations[pick]["per_pair_partial_kl_by_seed"],
        configurations[best]["per_pair_partial_kl_by_seed"],
    )
    return {
        "pick": "/".join(pick),
        "best": "/".join(best),
        "seeds": list(seeds.pop()),
        "pairs": len(configurations[pick]["per_pair_partial_kl_by_seed"][0]),
        **{k: bound[k] for k in ("mean", "se", "df", "t", "upper")},
        "delta": delta,
        "confirmed": bound["upper"] < delta,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python tools/confirm.py")
    sub = parser.add_subparsers(dest="what", required=True)
    add = sub.add_parser("collect", help="write docs/results/confirm-TASK.json from runs")
    add.add_argument("task")
    add.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    add.add_argument("--command", required=True, help="the commands that made the runs")
    add.add_argument("--commit", help="default: the checkout's HEAD")
    test = sub.add_parser("check", help="the protocol's bound from a confirmation file")
    test.add_argument("file", type=Path)
    test.add_argument("--delta", type=float, required=True, help="the margin, in nats")
    o = parser.parse_args(argv)
    if o.what == "collect":
        runs = dict(item.split("=", 1) for item in o.runs)
        commit = o.commit or head_commit()
        path = FOLDER / f"confirm-{o.task}.json"
        path.write_text(
            json.dumps(
                collect(o.task, {k: Path(v) for k, v in runs.items()}, o.command, commit), indent=1
            )
            + "\n"
        )
        print(f"written: {path}")
        return
    result = check(json.loads(o.file.read_text()), o.delta)
    print(
        f"{o.file.name}: the candidate's pick {result['pick']} against the best on "
        f"validation {result['best']}: gap {result['mean']:+.3f} ± {result['se']:.3f} "
        f"(df {result['df']:.1f}), one-sided 95% upper bound {result['upper']:.3f} "
        f"{'<' if result['confirmed'] else '≥'} δ = {o.delta}"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
