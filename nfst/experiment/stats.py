"""Lattice statistics of a task split, beside the paper's (003 Table 2); ``nfst stats``.

For the N pairs of a split that compile, with lattices T_{x,y}:

    mean_x_len             = (1/N) Σ |x|          mean_y_len  = (1/N) Σ |y|
    mean_states_before_min = (1/N) Σ states of the determinized lattice, before minimization
    mean_arcs_before_min   = the same for arcs (Table 2 reports these two)
    mean_states, mean_arcs = the same after minimization (what the samplers walk)
    mark_vocab             = |Ω|, the size of the MFST's mark alphabet
    compile_path           = which path compiles the task's lattices: "direct" where the
                             topology qualifies (nfst.fst.direct_topology), else "openfst"
    compile_refusal        = why the topology does not qualify (None when it does)
"""

from __future__ import annotations

import os
from typing import Optional

from ..evaluate.tables import text_table
from ..fst.compile import compile_path
from ..fst.dataset import compile_dataset
from ..fst.direct_topology import direct_refusal
from ..tasks import Task, get_task

_ROWS = (  # (label, our key, paper key)
    ("pairs", "pairs", None),
    ("skipped", "skipped", None),
    ("mean |x|", "mean_x_len", "x_len"),
    ("mean |y|", "mean_y_len", "y_len"),
    ("states before min", "mean_states_before_min", "states_before_min"),
    ("arcs before min", "mean_arcs_before_min", "arcs_before_min"),
    ("states after min", "mean_states", None),
    ("arcs after min", "mean_arcs", None),
    ("mark vocabulary", "mark_vocab", "mark_vocab"),
)


def task_stats(
    task: Task | str,
    split: str = "train",
    limit: Optional[int] = None,
    data_dir: Optional[str | os.PathLike] = None,
    cache_dir: Optional[str | os.PathLike] = None,
    processes: int = 1,
    progress: bool = True,
) -> dict:
    """Compile a seeded sample of ``limit`` pairs of ``split`` (all if None) through the
    cache and return their statistics (see the module docstring), with the paper's figures under
    ``"paper"`` (None when the paper has none for this split)."""
    if isinstance(task, str):
        task = get_task(task)
    pairs = task.subset(task.pairs(split, data_dir), limit, f"stats:{split}")
    T = task.mfst(data_dir)
    data = compile_dataset(
        T, pairs, cache_dir=cache_dir, processes=processes, progress=progress
    ).require_lattices(f"{task.name}/{split}")
    n = len(data.lattices)

    def mean(values) -> float:
        return sum(values) / n

    paper = task.paper.get(split)
    return {
        "task": task.name,
        "split": split,
        "pairs": n,
        "skipped": len(data.skipped),
        "mean_x_len": mean(len(x) for x, _ in data.pairs),
        "mean_y_len": mean(len(y) for _, y in data.pairs),
        "mean_states_before_min": mean(L.states_before_min for L in data.lattices),
        "mean_arcs_before_min": mean(L.arcs_before_min for L in data.lattices),
        "mean_states": mean(L.num_states for L in data.lattices),
        "mean_arcs": mean(L.num_arcs for L in data.lattices),
        "mark_vocab": len(T.mark_alphabet),
        "compile_path": compile_path(T),
        "compile_refusal": direct_refusal(T),
        "paper": None
        if paper is None
        else {
            "x_len": paper.x_len,
            "y_len": paper.y_len,
            "states_before_min": paper.states_before_min,
            "arcs_before_min": paper.arcs_before_min,
            "mark_vocab": paper.mark_vocab,
        },
    }


def format_stats_table(stats: dict) -> str:
    """An aligned text table: our figure, the paper's, and ours / paper's."""
    paper = stats.get("paper") or {}
    rows = [("", "ours", "paper", "ratio")]
    for label, key, paper_key in _ROWS:
        ours, theirs = stats[key], paper.get(paper_key)
        ratio = f"{ours / theirs:.2f}" if theirs else ""
        rows.append((label, _number(ours), "" if theirs is None else _number(theirs), ratio))
    path = (
        "the direct path"
        if stats["compile_path"] == "direct"
        else f"OpenFst (not the direct path: {stats['compile_refusal']})"
    )
    return (
        f"task {stats['task']}, split {stats['split']}; lattices compiled by {path}\n"
        + text_table(rows)
    )


def _number(value) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"
