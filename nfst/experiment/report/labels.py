"""How a report or a comparison names its runs: a label for its tables and headings, and a
stem for each run's plot files. A task with one run among them is named by the task alone (a
report of one run per task reads as it always has); the runs of a task with several are named
by their directory and the settings in which they differ (:func:`differing`), after the task
where the runs are of several tasks. The report's list of runs gives each label in full; its
tables name a run by the label without the settings (``short``), which that list explains."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .format import TASK_ORDER, ordered

SHOWN = 3
"""A label names at most this many differing settings, then how many more there are."""


def _dotted(settings: dict, prefix: str = "") -> dict:
    """Nested settings as ``{"sampler.lr": 0.003, ...}``."""
    flat = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat |= _dotted(value, f"{prefix}{key}.")
        else:
            flat[prefix + key] = value
    return flat


def settings_of(run: dict) -> dict:
    """Everything a run's results depend on, by name: its ``preset`` and ``seed``, each task
    setting as ``task.NAME`` and each preset value by its ``--option`` key (``sampler.lr``),
    from its ``config``."""
    config = run["config"]
    return (
        {"preset": run["preset"], "seed": run["seed"]}
        | _dotted(config["task_settings"], "task.")
        | _dotted(config["preset"])
    )


def differing(runs: list[dict]) -> list[dict]:
    """Per run, its settings (:func:`settings_of`) that are not the same in every run."""
    settings = [settings_of(r) for r in runs]
    keys = list(dict.fromkeys(k for s in settings for k in s))
    keys = [k for k in keys if len({json.dumps(s.get(k)) for s in settings}) > 1]
    return [{k: s.get(k) for k in keys} for s in settings]


def settings_words(settings: dict) -> str:
    """``sampler.lr=0.01, seed=1``: the first :data:`SHOWN` settings, and how many more."""
    items = [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in settings.items()]
    more = f", +{len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def named(runs: list[dict]) -> list[dict]:
    """The runs (their results with ``run_dir``), in task order (``TASK_ORDER``, a task's runs
    as given), each with its ``label``, ``short`` and ``differs`` (the label without the
    settings, and the settings, :func:`differing`) and its plot files' stem ``name`` added:
    the task where it has one run here, else the directory's name (its path where two share a
    name) and the settings in which the task's runs differ, e.g. ``B (sampler.lr=0.01)``,
    after the task where the runs are of several (``cipher B (sampler.lr=0.01)``)."""
    tasks = ordered({r["task"] for r in runs}, TASK_ORDER)
    runs = sorted(runs, key=lambda r: tasks.index(r["task"]))
    out, stems = [], set()
    for task in tasks:
        mine = [r for r in runs if r["task"] == task]
        folders = [Path(r["run_dir"]).name or str(r["run_dir"]) for r in mine]
        folders = [f if folders.count(f) == 1 else str(r["run_dir"]) for f, r in zip(folders, mine)]
        for run, folder, diff in zip(mine, folders, differing(mine)):
            if len(mine) == 1:
                short = stem = task
            else:
                short = (f"{task} " if len(tasks) > 1 else "") + folder
                stem = f"{task}-" + re.sub(r"[^\w.-]+", "_", folder).strip("_")
            differs = diff if len(mine) > 1 else {}
            name, n = stem, 2
            while name in stems:  # two paths that clean to one name
                name, n = f"{stem}-{n}", n + 1
            stems.add(name)
            out.append(
                run
                | {
                    "label": short + (f" ({settings_words(differs)})" if differs else ""),
                    "short": short,
                    "differs": differs,
                    "name": name,
                }
            )
    return out
