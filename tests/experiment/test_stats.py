"""nfst.stats: lattice statistics of a task split beside 003 Table 2."""

import json

import pytest

from nfst.experiment.stats import format_stats_table, task_stats
from nfst.fst.compile import compile_lattice
from nfst.tasks import get_task

KEYS = {
    "task",
    "split",
    "pairs",
    "mean_x_len",
    "mean_y_len",
    "mean_states_before_min",
    "mean_arcs_before_min",
    "mean_states",
    "mean_arcs",
    "mark_vocab",
    "skipped",
    "paper",
    "compile_path",
    "compile_refusal",
}


def test_cipher_stats_on_a_tiny_sample(tmp_path):
    task = get_task("cipher", train_size=40)
    stats = task_stats(task, "train", limit=6, cache_dir=tmp_path, progress=False)
    assert set(stats) == KEYS
    assert (stats["task"], stats["split"]) == ("cipher", "train")
    assert (stats["pairs"], stats["skipped"]) == (6, 0)
    assert stats["mark_vocab"] == 35
    sample = task.subset(task.pairs("train"), 6, "stats:train")
    lattices = [compile_lattice(task.mfst(), x, y) for x, y in sample]
    assert stats["mean_x_len"] == sum(len(x) for x, _ in sample) / 6
    assert stats["mean_y_len"] == sum(len(y) for _, y in sample) / 6
    for key, attribute in (
        ("mean_states_before_min", "states_before_min"),
        ("mean_arcs_before_min", "arcs_before_min"),
        ("mean_states", "num_states"),
        ("mean_arcs", "num_arcs"),
    ):
        assert stats[key] == pytest.approx(sum(getattr(L, attribute) for L in lattices) / 6)
    # A cipher lattice holds 5 grids of about (|x|+1)(|y|+1) cells, each cell a few states.
    assert stats["mean_states_before_min"] > 5 * (stats["mean_x_len"] + 1)
    assert stats["mean_states_before_min"] >= stats["mean_states"] > 0
    assert stats["mean_arcs_before_min"] >= stats["mean_arcs"] >= stats["mean_states"]
    assert (stats["paper"]["states_before_min"], stats["paper"]["arcs_before_min"]) == (1028, 1191)
    assert json.loads(json.dumps(stats)) == stats
    assert task_stats(task, "train", limit=6, cache_dir=tmp_path, progress=False) == stats

    table = format_stats_table(stats)
    lines = table.splitlines()
    assert lines[0] == "task cipher, split train; lattices compiled by the direct path"
    assert (stats["compile_path"], stats["compile_refusal"]) == ("direct", None)
    row = next(line for line in lines if line.startswith("states before min")).split()
    assert row[-2:] == ["1,028", f"{stats['mean_states_before_min'] / 1028:.2f}"]
    end = lines[1].index("ours") + len("ours")  # numbers are right-aligned under "ours"
    assert all(line[end - 1] != " " and line[end : end + 1] in ("", " ") for line in lines[2:])


def test_table_without_paper_figures():
    stats = task_stats("scan", "train", limit=3, progress=False)
    assert stats["paper"]["x_len"] == 8.1
    stats["paper"] = None
    assert "states before min" in format_stats_table(stats)
    stats["compile_path"], stats["compile_refusal"] = "openfst", "T: arc 0->1 carries no mark"
    assert (
        format_stats_table(stats)
        .splitlines()[0]
        .endswith("compiled by OpenFst (not the direct path: T: arc 0->1 carries no mark)")
    )
