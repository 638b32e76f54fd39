"""Samplers compared between runs (``nfst compare RUN ...``, and the report of several runs).

Runs that share one frozen scorer (the same scorer file, by its SHA-256: a copy counts) and
one set of test pairs are compared sampler by sampler: the paired gap between two runs'
partial KLs, over their training seeds and the test pairs, with its standard error
(``nfst.evaluate.paired_gaps.gap``), and an ordering of the runs with ``<`` only beyond Z
standard errors. On one scorer log Z cancels from the gap, and what the pairs share (hard
pairs are hard for every run) cancels too. Runs with different scorers have partial KLs offset
by different log Z: they are not compared, only each run's within-run gaps (every sampler
against its run's reference) are given, and said to be so. Within a group, every run's
samplers are also set against one reference, the (run, sampler) with the lowest validation
partial KL of them all: which settings and sampler to use, chosen as a run chooses its
reference. ``between_text`` prints the comparison as ``nfst compare`` does.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from ...evaluate.paired_gaps import gap, mean_over_seeds_and_pairs, ordering
from ...evaluate.tables import text_table
from .format import SAMPLER_ORDER, fmt, ordered
from .reference_gaps import Z


def scorer_file(run: dict) -> Path:
    """The run's frozen scorer: ``scorer.pt``, or ``ngram.pt`` where the n-gram is the
    scorer."""
    kind = run["config"]["preset"]["scorer"]["kind"]
    return Path(run["run_dir"]) / ("ngram.pt" if kind == "ngram" else "scorer.pt")


def scorer_digest(run: dict) -> Optional[str]:
    """The SHA-256 of the run's scorer file (hex); None where the file is missing."""
    path = scorer_file(run)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _test_pairs(run: dict) -> str:
    """What fixes a run's test pairs: its task and task settings, the preset's numbers of
    test and validation pairs (tr without a test file tests on dev after the validation
    pairs), the pairs evaluated and test pair 0 itself."""
    preset, first = run["config"]["preset"], next(iter(run["samplers"].values()))
    shown = first["most_probable"] or {}
    return json.dumps(
        [
            run["task"],
            run["config"]["task_settings"],
            preset["test_pairs"],
            preset["dev_pairs"],
            run["pairs"],
            shown.get("x"),
            shown.get("y"),
        ]
    )


def _group(runs: list[dict], digest: str) -> dict:
    """The comparison of runs that share the scorer ``digest`` and their test pairs, over
    their common training seeds (the first ones): per sampler that two or more of them have,
    each run's partial KL ± SE (over those seeds and the pairs), its paired gap to the first
    of them that has the sampler (the baseline) and the ordering of the runs."""
    seeds = min(len(r["seeds"]) for r in runs)
    samplers = {}
    for name in ordered({s for r in runs for s in r["samplers"]}, SAMPLER_ORDER):
        values = {
            r["short"]: r["samplers"][name]["per_pair_partial_kl_by_seed"][:seeds]
            for r in runs
            if name in r["samplers"]
        }
        if len(values) < 2:
            continue
        base = next(iter(values))
        samplers[name] = {
            "baseline": base,
            "partial_kl": {run: mean_over_seeds_and_pairs(v) for run, v in values.items()},
            "gap": {run: gap(v, values[base]) for run, v in values.items() if run != base},
            "ordering": ordering(values, z=Z),
        }
    return {
        "runs": [r["short"] for r in runs],
        "scorer": str(scorer_file(runs[0])),
        "scorer_sha256": digest,
        "seeds": seeds,
        "pairs": runs[0]["pairs"],
        "samplers": samplers,
    } | _configurations(runs, seeds)


def _configurations(runs: list[dict], seeds: int) -> dict:
    """Every (run, sampler) of a group, ``RUN:SAMPLER``, against the group's ``reference``:
    the one with the lowest validation partial KL of them all (ties: the first run's, in
    sampler order), so that which setting and sampler is best is chosen as a run chooses
    its reference. ``configurations``: each one's gap to it (:func:`gap`), best first."""
    values = {
        f"{r['short']}:{name}": r["samplers"][name]
        for r in runs
        for name in ordered(r["samplers"], SAMPLER_ORDER)
    }
    reference = min(values, key=lambda c: values[c]["validation_partial_kl"])
    best = values[reference]["per_pair_partial_kl_by_seed"][:seeds]
    gaps = {c: gap(v["per_pair_partial_kl_by_seed"][:seeds], best) for c, v in values.items()}
    return {
        "reference": reference,
        "configurations": dict(sorted(gaps.items(), key=lambda item: item[1]["mean"])),
    }


def _apart(runs: list[dict], digests: list, groups: list[list[dict]]) -> list[str]:
    """Why the runs are not one group (``groups``: the runs by scorer and test pairs): runs
    without a scorer file, scorers that differ, test pairs that differ on one scorer."""
    missing = [r["short"] for r, d in zip(runs, digests) if d is None]
    scorers = {
        d: [r["short"] for r, e in zip(runs, digests) if e == d]
        for d in dict.fromkeys(digests)
        if d
    }
    scored = [g for g in groups if digests[runs.index(g[0])]]
    apart = [f"no scorer file in {', '.join(missing)}"] if missing else []
    if len(scorers) > 1:
        apart.append(
            "scorers: "
            + "; ".join(f"{', '.join(shorts)} {d[:12]}" for d, shorts in scorers.items())
        )
    if len(scored) > len(scorers):  # one scorer, several sets of test pairs
        apart.append("test pairs: " + " | ".join(", ".join(r["short"] for r in g) for g in scored))
    return apart


def compare(runs: list[dict]) -> dict:
    """The comparison of ``runs`` (their results with ``run_dir``, ``short`` and ``differs``:
    ``labels.named``; ``short`` names a run here): ``runs`` (each one's directory, short name,
    differing settings, task, scorer digest, training seeds, test pairs and reference),
    ``groups`` (one per two or more runs that share a scorer and test pairs, :func:`_group`)
    and, where the runs are not all one group, ``apart`` (why, in words) and ``within_run``:
    every run's gap of each sampler to its reference (run -> sampler -> the gap's ``mean``,
    ``se``, ...; None for the reference), since partial KLs under other scorers are not
    comparable."""
    digests = [scorer_digest(r) for r in runs]
    keys = [(d, _test_pairs(r)) if d else (None, r["run_dir"]) for r, d in zip(runs, digests)]
    groups = [[r for r, k in zip(runs, keys) if k == key] for key in dict.fromkeys(keys)]
    result = {
        "runs": [
            {
                "run_dir": r["run_dir"],
                "short": r["short"],
                "differs": r["differs"],
                "task": r["task"],
                "scorer_sha256": d,
                "seeds": len(r["seeds"]),
                "pairs": r["pairs"],
                "reference": r["reference"],
            }
            for r, d in zip(runs, digests)
        ],
        "z": Z,
        "groups": [_group(g, digests[runs.index(g[0])]) for g in groups if len(g) > 1],
    }
    if len(groups) > 1:
        result |= {
            "apart": _apart(runs, digests, groups),
            "within_run": {
                r["short"]: {
                    s: None if s == r["reference"] else m["gap"] for s, m in r["samplers"].items()
                }
                for r in runs
            },
        }
    return result


def between_section(runs: list[dict]) -> list[str]:
    """The report's comparison of runs that share a scorer and test pairs (:func:`compare`):
    per group, each sampler's paired gap of every run to the baseline, and the ordering;
    nothing where no two runs share them."""
    groups = compare(runs)["groups"]
    if not groups:
        return []
    lines = ["### Between runs on one scorer (test partial KL, paired)", ""]
    for group in groups:
        first, others = group["runs"][0], group["runs"][1:]

        def cell(s: dict, run: str, first: str = first) -> str:  # to the first run, or the baseline
            if run not in s["gap"]:
                return "–"
            to = f" (− {s['baseline']})" if s["baseline"] != first else ""
            return fmt(s["gap"][run]["mean"], s["gap"][run]["se"]) + to

        rows = [("sampler", *(f"{r} − {first}" for r in others), "order")]
        rows += [
            (name, *(cell(s, r) for r in others), s["ordering"])
            for name, s in group["samplers"].items()
        ]
        seeds = group["seeds"]
        lines += [
            text_table(rows, markdown=True),
            "",
            f"{', '.join(group['runs'])} share one scorer (`{group['scorer']}`, SHA-256 "
            f"{group['scorer_sha256'][:12]}) and their {group['pairs']} test pairs: each "
            f"sampler's partial KL in one run minus in the other, the mean over "
            f"{seeds} training seed{'s' if seeds > 1 else ''} and the test pairs ± its "
            f"standard error, paired as the gaps above (`nfst compare` prints the same). "
            f"Orders: `<` only where the gap between neighbours exceeds {Z:g} standard "
            f"errors.",
            "",
        ]
    return lines
