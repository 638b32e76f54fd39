"""``nfst report RUN_DIR ...``: the runs' results, merged into ``report.md`` (with its PNG
plots) and ``report.json`` (the same numbers) in one folder. Each run is a column of the
tables, named as ``labels`` names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ...errors import ReportError
from ..results import build_results
from ..rundir import RunDir
from ..schema import Results, SchemaError
from .labels import named
from .proposals import proposals_section
from .samplers import sampler_sections
from .scorer import scorer_section
from .smc import smc_section


def load_results(run_dir: str | Path) -> dict:
    """A run's ``results.json`` in its JSON form (every key of ``nfst.experiment.schema``'s
    :class:`~nfst.experiment.schema.Results`), checked: a file of another schema version is an
    error with a hint. For a run that has finished its evaluate stage but not the rest
    (``nfst evaluate``), the same built from its stage files."""
    path = Path(run_dir)
    if not path.is_dir():
        raise ReportError(
            f"{path}: no such directory",
            "give run directories that `nfst run` or `nfst evaluate` wrote",
        )
    try:
        if (path / "results.json").exists():
            raw = json.loads((path / "results.json").read_text())
            return Results.from_json(raw).to_json()
        if (path / "config.json").exists() and (path / "stages" / "evaluate.json").exists():
            settings = json.loads((path / "config.json").read_text())
            return build_results(RunDir(path, settings)).to_json()
    except SchemaError as exc:
        raise SchemaError(f"{path}: {exc.args[0]}", exc.hint.replace("RUN", str(path))) from None
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{path}: a file is not valid JSON ({exc})",
            "the run was written by another program, or damaged",
        ) from None
    except KeyError as exc:
        raise ReportError(
            f"{path}: evaluated by an older nfst (no {exc} in its results)",
            f"delete {path / 'stages' / 'evaluate.json'} and "
            f"{path / 'stages' / 'smc.json'} and finish the run again with `nfst "
            f"run TASK --run-dir {path}`: its trained models are reused",
        ) from None
    raise ReportError(
        f"{path}: no finished evaluate stage to report (no {path / 'stages' / 'evaluate.json'})",
        f"finish it with `nfst evaluate TASK --run-dir {path}` or `nfst run TASK --run-dir {path}`",
    )


def load_runs(run_dirs: Sequence[str | Path]) -> list[dict]:
    """The results of each run, with its directory as ``run_dir``."""
    return [load_results(d) | {"run_dir": str(d)} for d in run_dirs]


def describe(run: dict) -> list[str]:
    """How a run was made, part by part: task, preset, ``--option`` overrides, ``--set`` task
    settings and training seeds, e.g. ``cipher``, ``preset small``, ``--option
    sampler.steps=100``, ``training seeds 0, 1``."""
    settings = run["config"]["run"]
    seeds = [run["seed"] + s for s in run["seeds"]]
    parts = [run["task"], f"preset {run['preset']}"]
    parts += [f"`--option {o}`" for o in settings["overrides"]]
    parts += [f"`--set {k}={v}`" for k, v in settings["task_settings"].items()]
    parts.append(f"training seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}")
    return parts


def skipped(run: dict) -> list[str]:
    """A warning for each split of the run whose pairs were not all compiled (the topology
    cannot align a pair, or a symbol is missing from the FST's alphabets): its figures are
    over the others. None for a run without a compile stage record."""
    lines = []
    for split, compiled in (run["lattices"] or {}).items():
        if isinstance(compiled, dict) and compiled.get("skipped"):
            n, of = compiled["skipped"], compiled["skipped"] + compiled["pairs"]
            why = f": {compiled['skipped_why']}" if compiled.get("skipped_why") else ""
            lines.append(
                f"  - **{n} of {of} {split} pairs skipped**, not compiled{why}; "
                f"the {split} figures are over the other {compiled['pairs']}"
            )
    return lines


def write_report(run_dirs: Sequence[str | Path], out_dir: str | Path) -> Path:
    """Merge the runs (one per task, or several of a task, each a column of its own) into
    ``out_dir/report.md``; returns its path."""
    runs = named(load_runs(run_dirs))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parts = [describe(r) for r in runs]
    shared = [p for p in parts[0] if len(runs) > 1 and all(p in mine for mine in parts)]
    lines = ["# nfst report", ""] + ([f"Every run: {', '.join(shared)}.", ""] if shared else [])
    lines += ["Runs:", ""]
    for r, mine in zip(runs, parts):  # each the settings it does not share, once
        label = f"**{r['label']}**: " if r["label"] != r["task"] else ""
        own = ", ".join(p for p in mine if p not in shared)
        lines += [
            f"- {label}`{r['run_dir']}`: {own + '; ' if own else ''}reference sampler "
            f"{r['reference']} (the lowest validation partial KL)",
            *skipped(r),
        ]
    lines.append("")
    lines += scorer_section(runs, out)
    lines += sampler_sections(runs, out)
    lines += smc_section(runs, out)
    lines += proposals_section(runs)
    path = out / "report.md"
    path.write_text("\n".join(lines))
    (out / "report.json").write_text(json.dumps({"runs": runs}, indent=1))
    return path
