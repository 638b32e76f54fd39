"""The task abstraction: where the (x, y) pairs of a dataset come from, and the MFST T that
aligns them (see ``nfst.tasks`` for a complete example).

``Task.pairs(split)`` is what users call: it takes the raw pairs of :meth:`Task.load`, drops
duplicates (keeping the first) and, if more than ``train_size`` (train) or ``eval_size``
(other splits) remain, keeps that many from a seeded shuffle.

Data files are found under a data directory: the ``data_dir`` argument, else the
``NFST_DATA_DIR`` environment variable. A missing or empty file raises :class:`DataError`.
Malformed lines (see :func:`read_records`) are skipped, and a warning gives their count and the
first few line numbers; with the task setting ``strict`` the first one raises a DataError naming
the file and line instead. Pairs the MFST cannot align are skipped later, by
``compile_dataset``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Optional, Sequence, TypeVar

from nfst.errors import DataError, TaskError
from nfst.fst.dataset import Pair
from nfst.fst.mfst import MarkedFST
from nfst.fst.structure import Structure
from nfst.runtime.settings import nearest, setting_value

DATA_ENV = "NFST_DATA_DIR"
Record = TypeVar("Record")
SHOWN_LINES = 5
"""How many malformed line numbers a warning lists."""
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskSettings:
    """Settings every task has; a task subclasses this to add its own (and change defaults).

    A setting given to a task (``--set KEY=VALUE``) must have its field's type and lie in its
    range: an int setting is a count or size, at least 1 unless its field's metadata says
    otherwise, e.g. ``field(default=0, metadata={"least": 0})``, and a number field may declare
    an interval, e.g. ``metadata={"range": "[0, 1]"}`` (``nfst.runtime.settings``)."""

    train_size: Optional[int] = 2_000
    """Keep at most this many training pairs (a seeded random subset); None keeps all."""
    eval_size: Optional[int] = 1_000
    """The same for every other split."""
    seed: int = field(default=0, metadata={"least": 0})
    """Seeds the subsets (and, for synthetic tasks, the data itself)."""
    strict: bool = False
    """Fail at the first malformed data line instead of skipping it (with a warning)."""


@dataclass(frozen=True)
class PaperStats:
    """One row of 003 Table 2: means over the (x, y) pairs of a split."""

    x_len: float
    y_len: float
    states_before_min: float
    arcs_before_min: float
    mark_vocab: int


class Task:
    """Base class of a task; see the module docstring for a complete example.

    Subclasses set ``name`` and ``splits``, and implement :meth:`build_mfst` and :meth:`load`.
    They may set ``Settings`` to a subclass of :class:`TaskSettings`, and ``paper`` to the
    paper's Table 2 figures per split, which ``nfst stats`` prints beside ours.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    splits: ClassVar[tuple[str, ...]] = ("train", "dev", "test")
    Settings: ClassVar[type[TaskSettings]] = TaskSettings
    paper: ClassVar[dict[str, PaperStats]] = {}

    def __init__(self, settings: Optional[TaskSettings] = None, **overrides):
        base = settings if settings is not None else self.Settings()
        known = [f.name for f in dataclasses.fields(base)]
        for key, value in overrides.items():
            if key not in known:
                near = nearest(key, known)
                raise TaskError(
                    f"task {self.name!r} has no setting {key!r}; "
                    + (
                        f"the nearest: {', '.join(near)}"
                        if near
                        else f"its settings are: {', '.join(known)}"
                    ),
                    "spell the setting as one of those (--set KEY=VALUE)",
                )
            try:
                overrides[key] = setting_value(type(base), key, value)
            except ValueError as exc:
                now = ", ".join(f"{k}={getattr(base, k)!r}" for k in known)
                raise TaskError(
                    f"task {self.name!r}, setting {key}: {exc}",
                    f"the settings of {self.name} and their values: {now} (--set KEY=VALUE)",
                ) from None
        self.settings = dataclasses.replace(base, **overrides)
        self._mfst: dict[Optional[Path], MarkedFST] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings})"

    # -- what a task implements ----------------------------------------------------------
    def build_mfst(self, data_dir: Optional[Path]) -> MarkedFST:
        """The task's MFST T (called once per data directory; see :meth:`mfst`)."""
        raise NotImplementedError

    def load(self, split: str, data_dir: Optional[Path]) -> Iterable[Pair]:
        """Every (x, y) pair of ``split``, before deduplication and subsetting."""
        raise NotImplementedError

    def abbreviate(self, marks: Sequence[str]) -> str:
        """A path's marks as reports show them, e.g. 003 Tables 4–6's ``d→f, insert j`` for
        cipher; the default: the marks separated by spaces."""
        return " ".join(marks)

    def structure(self, split: str) -> Optional[Structure]:
        """How the pairs of ``split`` were generated, as a test of a path, for tasks whose data
        knows it (cipher: the generating cipher); None (the default) where it does not."""
        return None

    # -- what users call ---------------------------------------------------------------
    def mfst(self, data_dir: Optional[str | os.PathLike] = None) -> MarkedFST:
        """T, built once; it may depend on the data (e.g. the training alphabet)."""
        key = resolve_data_dir(data_dir)
        if key not in self._mfst:
            self._mfst[key] = self.build_mfst(key)
        return self._mfst[key]

    def pairs(self, split: str, data_dir: Optional[str | os.PathLike] = None) -> list[Pair]:
        """The deduplicated pairs of ``split``, at most :meth:`size` of them (seeded subset)."""
        self.check_split(split)
        unique = list(dict.fromkeys(self.load(split, resolve_data_dir(data_dir))))
        return self.subset(unique, self.size(split), split)

    def size(self, split: str) -> Optional[int]:
        return self.settings.train_size if split == "train" else self.settings.eval_size

    def subset(self, items: Sequence, size: Optional[int], salt: str) -> list:
        """The first ``size`` items of a seeded shuffle (all items, unshuffled, if there are
        no more than ``size``). A smaller size gives a prefix of a larger one."""
        if size is None or size >= len(items):
            return list(items)
        order = list(range(len(items)))
        self.rng(salt).shuffle(order)
        return [items[i] for i in order[:size]]

    def rng(self, salt: str) -> random.Random:
        """A generator seeded by the task name, the ``seed`` setting and ``salt``. (String
        seeds are hashed with SHA-512, so this is the same in every process and run.)"""
        return random.Random(f"{self.name}:{self.settings.seed}:{salt}")

    def check_split(self, split: str) -> None:
        if split not in self.splits:
            raise TaskError(
                f"task {self.name!r} has no split {split!r}; it has {', '.join(self.splits)}",
                "pass one of those (--split NAME)",
            )


def steps(marks: Sequence[str], size: int) -> list[tuple[str, ...]]:
    """``marks`` cut into consecutive steps of ``size`` marks each, e.g. ``<del> a <ins> b`` into
    ``(<del>, a), (<ins>, b)`` (for :meth:`Task.abbreviate`); ValueError if they do not cut
    evenly."""
    if len(marks) % size:
        raise ValueError(f"{len(marks)} marks are not steps of {size}: {' '.join(marks)}")
    return [tuple(marks[i : i + size]) for i in range(0, len(marks), size)]


# -- data files ---------------------------------------------------------------------------
def resolve_data_dir(data_dir: Optional[str | os.PathLike] = None) -> Optional[Path]:
    """The explicit ``data_dir``, else ``$NFST_DATA_DIR``, else None (no data directory)."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else None


def data_file(task: str, relative: str, data_dir: Optional[Path], source: str = "") -> Path:
    """``data_dir / relative``, or a DataError saying which file is missing and how to fix it;
    ``source`` says where the data comes from."""
    if data_dir is None:
        raise DataError(
            f"task {task!r} reads {relative} from a data directory, and none is set", source
        )
    path = data_dir / relative
    if not path.is_file():
        raise DataError(
            f"task {task!r}: {path} does not exist",
            source or f"the data directory {data_dir} must hold {relative}",
        )
    return path


class MalformedLine(ValueError):
    """Raised by the line parser of :func:`read_records`: what is wrong with the line."""


def _decoded_lines(path: Path) -> Iterable[tuple[int, str | UnicodeDecodeError]]:
    """(line number, line without its newline, or the error decoding it) for each non-blank
    line; DataError if there is none. Decoded line by line, so an error names its line."""
    empty = True
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                empty = False
                yield lineno, exc
                continue
            if line.strip():
                empty = False
                yield lineno, line
    if empty:
        raise DataError(
            f"{path} is empty",
            "the file has no data lines: check that it was written or downloaded completely",
        )


def read_records(path: Path, parse: Callable[[str], Record], strict: bool = False) -> list[Record]:
    """``parse(line)`` of each non-blank line of a UTF-8 file, in file order.

    A malformed line (``parse`` raises :class:`MalformedLine`, or the line is not UTF-8) is
    skipped, and one warning gives the number skipped, the first :data:`SHOWN_LINES` line
    numbers and the first problem. ``strict``: DataError at the first malformed line. A file
    with no well-formed line is a DataError either way."""
    records, bad = [], []
    for lineno, line in _decoded_lines(path):
        try:
            if isinstance(line, UnicodeDecodeError):
                raise MalformedLine(f"not UTF-8 ({line.reason})")
            records.append(parse(line))
        except MalformedLine as exc:
            if strict:
                hint = (
                    "re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
                    if isinstance(line, UnicodeDecodeError)
                    else "fix or delete the line, or leave the task setting strict off to skip "
                    "malformed lines"
                )
                raise DataError(f"{path}:{lineno}: {exc}", hint) from None
            bad.append((lineno, str(exc)))
    if bad and not records:
        raise DataError(
            f"{path}: every line is malformed (line {bad[0][0]}: {bad[0][1]})",
            "check that this is the right file, in the format the task reads",
        )
    if bad:
        numbers = ", ".join(str(n) for n, _ in bad[:SHOWN_LINES])
        more = ", ..." if len(bad) > SHOWN_LINES else ""
        log.warning(
            "%s: skipped %d of %d lines as malformed (line%s %s%s; the first: %s); set "
            "the task setting strict = true to stop at the first instead",
            path,
            len(bad),
            len(bad) + len(records),
            "s" if len(bad) > 1 else "",
            numbers,
            more,
            bad[0][1],
        )
    return records
