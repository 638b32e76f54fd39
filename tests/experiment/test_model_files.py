"""A run's models are files that open without the run (nfst.load_sampler, nfst.load_scorer),
older ones open through it, and `nfst sample --split --out` writes a split's proposals."""

import json
import shutil

import pytest
import torch

import nfst
from nfst.cli import main
from nfst.dp.batch import LatticeBatch
from nfst.experiment.run import Run
from nfst.runtime import storage


def lattice_accepts(lattice, marks) -> bool:
    """Whether the mark string is a path of the lattice (mark-deterministic: one way to walk)."""
    state = 0
    for mark in marks:
        arcs = [
            a
            for a in range(len(lattice.arc_src))
            if lattice.arc_src[a] == state and lattice.arc_mark[a] == mark
        ]
        if not arcs:
            return False
        state = int(lattice.arc_dst[arcs[0]])
    return bool(lattice.final[state])


def test_a_runs_files_load_as_the_run_loads_them(finished_run):
    run, _ = finished_run
    batch = LatticeBatch(run.lattices("test"))
    for name in run.config.samplers:
        loaded, own = nfst.load_sampler(run.dir / "samplers" / f"{name}.pt"), run.sampler(name)
        assert loaded.vocabulary == run.vocabulary
        drawn = [q.sample(batch, 4, torch.Generator().manual_seed(1)) for q in (loaded, own)]
        assert torch.equal(drawn[0].arcs, drawn[1].arcs)
        assert torch.equal(drawn[0].log_q, drawn[1].log_q)
    scorer = nfst.load_scorer(run.dir / "ngram.pt")  # the n-gram is this run's scorer
    assert torch.equal(scorer.score_paths(drawn[0]), run.scorer().score_paths(drawn[0]))


def test_a_file_of_the_older_layout_opens_through_its_run(finished_run, tmp_path):
    run, _ = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run.dir, copy)
    path = copy / "samplers" / "swp.pt"
    storage.save(path, {"state": storage.load(path)["state"]})  # no name, vocabulary, config
    with pytest.raises(nfst.NfstError, match="older nfst"):
        nfst.load_sampler(path)
    old = Run.open(copy, cache_dir=run.cache_dir, quiet=True).sampler("swp")
    batch = LatticeBatch(run.lattices("test"))
    drawn = [
        q.sample(batch, 4, torch.Generator().manual_seed(1)) for q in (old, run.sampler("swp"))
    ]
    assert torch.equal(drawn[0].arcs, drawn[1].arcs)


def test_sample_writes_every_pair_of_a_split_with_log_q_and_log_p(finished_run, tmp_path, capsys):
    """With k = evaluate.k the proposals are the evaluation's own draws: their mean log q − log p̃
    is the partial KL that the run reports."""
    run, _ = finished_run
    out = tmp_path / "test.jsonl"
    assert (
        main(
            [
                "sample",
                "cipher",
                "--run-dir",
                str(run.dir),
                "--sampler",
                "swp",
                "--split",
                "test",
                "--out",
                str(out),
                "-k",
                str(run.preset.evaluate.k),
                "--cache-dir",
                str(run.cache_dir),
                "--quiet",
            ]
        )
        == 0
    )
    assert f"written: {out}" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    test = run.lattices("test")
    assert [r["pair"] for r in rows] == list(range(len(test)))
    scorer = run.scorer()
    kl = []
    for row, lattice in zip(rows, test):
        assert (row["x"], row["y"]) == (list(lattice.x), list(lattice.y))
        assert len(row["proposals"]) == run.preset.evaluate.k
        for proposal in row["proposals"]:
            ids = torch.tensor([[lattice.mark_vocab.index(m) for m in proposal["marks"]]])
            assert lattice_accepts(lattice, ids[0].tolist())
            assert scorer.score_marks(ids).item() == pytest.approx(proposal["log_p"], abs=1e-9)
        kl.append(sum(p["log_q"] - p["log_p"] for p in row["proposals"]) / len(row["proposals"]))
    reported = json.loads((run.dir / "results.json").read_text())["samplers"]["swp"]
    assert sum(kl) / len(kl) == pytest.approx(reported["partial_kl"], abs=1e-9)


def test_sample_split_and_out_go_together(finished_run, capsys):
    run, _ = finished_run
    assert main(["sample", "cipher", "--run-dir", str(run.dir), "--split", "test"]) == 2
    assert "--split and --out go together" in capsys.readouterr().err
