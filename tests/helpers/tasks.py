"""Task fixtures for the tests: a small Dakshina lexicon (tr) written to files, the size of a
deletion/insertion lattice, and a task file a user would write."""

from pathlib import Path

TRAIN = [
    "سلام\tsalaam\t3",
    "سلام\tsalam\t1",
    "سلام\tsalaam\t2",  # a duplicate pair
    "کتاب\tkitab\t1",
    "پانی\tpani\t4",
    "دل\tdil\t1",
]
DEV = ["دل\tdil\t1", "کام\tkaam\t2", "ژالہ\tzhala\t1"]  # ژ and z/h are unseen in TRAIN


def write_fixture(root: Path, train=TRAIN, dev=DEV) -> Path:
    folder = root / "dakshina-ur"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ur.translit.sampled.train.tsv").write_text("\n".join(train) + "\n")
    (folder / "ur.translit.sampled.dev.tsv").write_text("\n".join(dev) + "\n")
    return root


def grid_size(n: int, m: int) -> tuple[int, int]:
    """States and arcs of a deletion/insertion lattice: the (n+1)(m+1) grid points plus one
    intermediate state per two-mark arc (n(m+1) deletions, (n+1)m insertions)."""
    arcs = n * (m + 1) + (n + 1) * m
    return (n + 1) * (m + 1) + arcs, 2 * arcs


USER_TASK = """
from nfst.fsts import deletion_insertion
from nfst.tasks import Task, register_task

@register_task
class Mirror(Task):
    name = "{name}"
    splits = ("train",)

    def build_mfst(self, data_dir):
        return deletion_insertion("ab", "ab", name=self.name)

    def load(self, split, data_dir):
        return [(("a", "b"), ("b", "a")), (("a", "b"), ("b", "a")), (("b",), ("b",))]
"""
