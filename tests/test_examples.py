"""The tutorial's task file loads, and its pairs compile with the alignment that made them."""

from pathlib import Path

from nfst.fst.dataset import compile_dataset
from nfst.tasks import get_task, load_task_file

EXAMPLE = Path(__file__).parent.parent / "examples" / "vowels.py"


def test_tutorial_task_compiles():
    assert load_task_file(EXAMPLE) == ["vowels"]
    task = get_task("vowels", train_size=30)
    data = compile_dataset(task.mfst(), task.pairs("train"), progress=False)
    assert len(data.lattices) == 30 and not data.skipped
    checked = 0
    for (x, y), lat in zip(data.pairs, data.lattices):
        if [c for c in x if c not in "aeiou"] == list(y):  # not garbled
            path = tuple(m for c in x for m in (("del", c) if c in "aeiou" else ("copy", c)))
            assert path in set(lat.mark_strings())
            checked += 1
    assert checked > 10


def test_cipher_choice_splits_partial_kl_by_the_picked_cipher(tmp_path, capsys, monkeypatch):
    """examples/cipher_choice.py on a tiny cipher run: it sees the evaluation's own samples
    (the same partial KL, untrained and trained), and the partial KL is the share-weighted mean
    of its two parts."""
    import importlib.util
    import json
    import math

    from nfst.experiment.run import Run
    from tests.helpers.tiny import tiny_config

    run = Run(
        tiny_config(samplers=("swp",)),
        tmp_path / "run",
        cache_dir=tmp_path / "cache",
        quiet=True,
        processes=1,
    )
    run.train_samplers()
    evaluated = run.evaluation()["samplers"]["swp"]
    path = Path(__file__).parent.parent / "examples" / "cipher_choice.py"
    spec = importlib.util.spec_from_file_location("cipher_choice", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("NFST_CACHE_DIR", str(tmp_path / "cache"))
    module.picks(str(tmp_path / "run"))
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["sampler"], r["state"]) for r in rows] == [("swp", "untrained"), ("swp", "trained")]
    for r, expected in zip(rows, (evaluated["untrained_partial_kl"], evaluated["partial_kl"])):
        assert abs(r["partial_kl"] - expected) < 0.01  # rounding
        share = r["generating_cipher"]
        parts = [(share, r["partial_kl_generating"]), (1 - share, r["partial_kl_other"])]
        assert 0 <= share <= 1
        assert abs(sum(w * v for w, v in parts if v is not None) - r["partial_kl"]) < 0.1

    module.supervised(str(tmp_path / "run"), "swp", "16", "1e-2")
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["step"] for r in rows] == [0, 2, 4, 6, 8, 10, 12, 14, 16]
    run = Run.open(tmp_path / "run", cache_dir=tmp_path / "cache")
    assert rows[0]["train_pairs"] == len(run.lattices("train"))
    for split in ("train", "dev", "test"):
        assert rows[-1][split]["log_q_generating_path"] > rows[0][split]["log_q_generating_path"]
        assert 0 < rows[-1][split]["q_generating_cipher"] <= 1
        assert 0 <= rows[-1][split]["argmax_generating_cipher"] <= 1
    # q of the cipher at its choice is one factor of q of the path
    assert all(
        math.log(r["train"]["q_generating_cipher"]) >= r["train"]["log_q_generating_path"]
        for r in rows
    )

    module.lengths(str(tmp_path / "run"), "swp", "40")
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["pairs"] for r in rows] == ["triples", "dev", "test", "triples", "test"]
    for r in rows[:3]:
        assert abs(sum(r["share_by_x"].values()) - 1) < 0.01
    for r, spread in zip(rows[3:], (rows[0], rows[2])):  # each bucket's pairs, all counted
        counts = {b: n for b, (_, n) in r["by_x"].items()}
        assert sum(counts.values()) == spread["count"]
        assert all(
            abs(counts[b] / spread["count"] - v) < 0.01 for b, v in spread["share_by_x"].items()
        )
        mean = sum(v * n for v, n in r["by_x"].values()) / spread["count"]
        assert 0 <= r["right_cipher"] <= 1 and abs(mean - r["right_cipher"]) < 0.01


def test_the_slurm_recipe_trains_one_sampler_and_seed_per_array_task(tmp_path):
    """examples/slurm_array.sh, with stand-ins for sbatch (it logs each submission and answers
    a job id) and nfst (it prints its arguments): the scorer, then an array of one task per
    (sampler, training seed) after it, then the rest of the run after the array; task i
    trains sampler i mod n from training seed i div n."""
    import os
    import subprocess

    script = Path(__file__).parent.parent / "examples" / "slurm_array.sh"
    bin_dir, log = tmp_path / "bin", tmp_path / "sbatch.log"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(
        '#!/bin/sh\necho "$@" >> "$LOG"\necho $((100 + $(wc -l < "$LOG")))\n'
    )
    (bin_dir / "nfst").write_text('#!/bin/sh\necho "$@"\n')
    for stand_in in bin_dir.iterdir():
        stand_in.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "SLURM_ARRAY_TASK_ID"} | {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "LOG": str(log),
    }
    subprocess.run(
        [
            "bash",
            str(script),
            "runs/r",
            "cipher",
            "swa,swp",
            "2",
            "--preset",
            "tiny",
            "--data-dir",
            "my data",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    scorer, array, rest = log.read_text().splitlines()
    assert scorer.endswith(
        "--wrap nfst train-scorer cipher --new --run-dir runs/r --samplers "
        "swa,swp --quiet --preset tiny --data-dir my\\ data"
    )
    assert array.startswith("--parsable --dependency=afterok:101 --array=0-3 ")
    assert array.endswith("slurm_array.sh runs/r swa,swp 2")
    assert "--dependency=afterok:102 --wrap nfst run --run-dir runs/r" in rest
    trained = []
    for task in range(4):
        argv = subprocess.run(
            ["bash", str(script), "runs/r", "swa,swp", "2"],
            check=True,
            env=env | {"SLURM_ARRAY_TASK_ID": str(task)},
            capture_output=True,
            text=True,
        ).stdout.split()
        assert argv[:3] == ["train-sampler", "--run-dir", "runs/r"]
        trained.append(
            (
                argv[argv.index("--sampler") + 1],
                argv[argv.index("--seeds") + 1],
                argv[argv.index("--training-seed") + 1],
            )
        )
    assert trained == [("swa", "2", "0"), ("swp", "2", "0"), ("swa", "2", "1"), ("swp", "2", "1")]
