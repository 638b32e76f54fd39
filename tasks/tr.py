"""tr: reverse transliteration of romanized Urdu words into Urdu script (003 App. A).

Data: the Dakshina romanisation lexicon (Roark et al. 2020), files
``dakshina-ur/ur.translit.sampled.{train,dev,test}.tsv`` under the data directory, one
``native<TAB>roman<TAB>count`` entry per line. A pair is

    x = the letters of the roman form        ("a", "s", "a", "m", "a", "r")
    y = "<ur>" followed by the Urdu letters  ("<ur>", "ا", "س", ...)

one symbol per Unicode code point (Urdu diacritics are symbols of their own). The count column
is checked but not used: each distinct (x, y) is one pair.

T is the one-state deletion/insertion MFST (``fsts.deletion_insertion``) over the alphabets of
the whole training file: an arc ``a:ε`` marked ``<del> a`` for each Latin letter and an arc
``ε:b`` marked ``<ins> b`` for each Urdu letter and ``<ur>``. Every interleaving of x and y is
one path, so T_{x,y} is the (|x|+1)(|y|+1) alignment grid, with an extra state in the middle of
each two-mark arc. Dev/test pairs with letters unseen in training are skipped at compile time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from nfst.errors import DataError
from nfst.fst.mfst import MarkedFST
from nfst.fsts import deletion_insertion

from .base import MalformedLine, Pair, PaperStats, Task, data_file, read_records, steps
from .registry import register_task

SCRIPT_TAG = "<ur>"
MOVES = {"<del>": "delete", "<ins>": "insert"}
FILE = "dakshina-ur/ur.translit.sampled.{split}.tsv"
SOURCE = (
    "the files come from the public Dakshina dataset v1.0 (Roark et al. 2020, CC BY-SA 4.0): "
    "download dakshina_dataset_v1.0.tar from Google Research and copy its "
    "ur/lexicons/ur.translit.sampled.{train,dev,test}.tsv into DATA/dakshina-ur/ and give "
    "--data-dir DATA (or set NFST_DATA_DIR)"
)


def parse_entry(line: str) -> Pair:
    """One ``native<TAB>roman<TAB>count`` line as a pair (x, y); MalformedLine if it is not."""
    fields = line.split("\t")
    if len(fields) != 3:
        raise MalformedLine(
            f"expected 3 tab-separated fields native<TAB>roman<TAB>count, "
            f"got {len(fields)}: {line!r}"
        )
    native, roman, count = fields
    if not native or not roman or any(c.isspace() for c in native + roman):
        raise MalformedLine(
            f"the native and roman words must be non-empty and contain no whitespace: {line!r}"
        )
    if not count.isdigit():
        raise MalformedLine(f"the count {count!r} is not a whole number")
    return tuple(roman), (SCRIPT_TAG,) + tuple(native)


def read_lexicon(path: Path, strict: bool = False) -> list[Pair]:
    """The (x, y) pairs of a Dakshina lexicon file, in file order (duplicates kept); malformed
    lines are skipped with a warning, or raise with ``strict`` (``read_records``)."""
    return read_records(path, parse_entry, strict)


@register_task
class Transliteration(Task):
    name = "tr"
    description = "Dakshina Urdu: romanized word -> Urdu script, deletion/insertion MFST"
    splits = ("train", "dev", "test")
    paper = {  # 003 Table 2 ("Valid" is our dev; the test |x| of 3.0 is as printed)
        "train": PaperStats(7.2, 6.9, 232, 303, 177),
        "dev": PaperStats(7.3, 7.0, 237, 310, 177),
        "test": PaperStats(3.0, 6.8, 220, 287, 177),
    }

    def path(self, split: str, data_dir: Optional[Path]) -> Path:
        relative = FILE.format(split=split)
        if split == "test" and data_dir is not None and not (data_dir / relative).is_file():
            raise DataError(
                f"task 'tr' has no test split here: {data_dir / relative} is absent",
                "the shared data ships train and dev only; evaluate on dev, or add "
                "the Dakshina test file",
            )
        return data_file(self.name, relative, data_dir, SOURCE)

    def build_mfst(self, data_dir: Optional[Path]) -> MarkedFST:
        train = read_lexicon(self.path("train", data_dir), self.settings.strict)
        sigma = {a for x, _ in train for a in x}
        delta = {b for _, y in train for b in y}
        return deletion_insertion(sigma, delta, name=self.name)

    def load(self, split: str, data_dir: Optional[Path]) -> list[Pair]:
        return read_lexicon(self.path(split, data_dir), self.settings.strict)

    def abbreviate(self, marks: Sequence[str]) -> str:
        """003 Table 4's notation: ``insert <ur>, delete c, insert ب, ...`` (each two-mark
        step ``<del> a`` or ``<ins> b`` as ``delete a`` or ``insert b``)."""
        return ", ".join(f"{MOVES[move]} {symbol}" for move, symbol in steps(marks, 2))
