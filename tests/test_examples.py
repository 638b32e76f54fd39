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
