"""Tasks: where the (x, y) pairs of a dataset come from, and the MFST T that aligns them.

A task is one class in one Python file::

    from fsts import deletion_insertion
    from nfst.task import Task, register_task

    @register_task
    class Reverse(Task):
        name = "reverse"
        splits = ("train", "test")

        def build_mfst(self, data_dir):
            return deletion_insertion("ab", "ab", name=self.name)

        def load(self, split, data_dir):
            return [(("a", "b"), ("b", "a"))]

The built-in tasks live in the ``tasks`` package (``tr``, ``scan``, ``cipher``). Files named in
the ``NFST_TASKS`` environment variable (``os.pathsep``-separated) and files passed to
:func:`load_task_file` are imported on demand, so ``get_task("reverse")`` finds the class above. docs/tasks.md has a longer example.

``Task.pairs(split)`` is what users call: it takes the raw pairs of :meth:`Task.load`, drops
duplicates (keeping the first) and, if more than ``train_size`` (train) or ``eval_size``
(other splits) remain, keeps that many from a seeded shuffle.

Data files are found under a data directory: the ``data_dir`` argument, else the
``NFST_DATA_DIR`` environment variable. Malformed files raise :class:`DataError` naming the file
and line; pairs the MFST cannot align are skipped later, by ``compile_dataset``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterable, Optional, Sequence

from .errors import NfstError
from .mfst import MarkedFST

Pair = tuple[tuple[str, ...], tuple[str, ...]]
DATA_ENV = "NFST_DATA_DIR"
TASKS_ENV = "NFST_TASKS"


class DataError(NfstError):
    """A data file is missing, empty or malformed."""

    hint = f"pass data_dir=... (--data-dir) or set {DATA_ENV} to the folder holding the data"


class TaskError(NfstError):
    """An unknown task, split or setting, or a task file that does not load."""


@dataclass(frozen=True)
class TaskSettings:
    """Settings every task has; a task subclasses this to add its own (and change defaults)."""

    train_size: Optional[int] = 2_000
    """Keep at most this many training pairs (a seeded random subset); None keeps all."""
    eval_size: Optional[int] = 1_000
    """The same for every other split."""
    seed: int = 0
    """Seeds the subsets (and, for synthetic tasks, the data itself)."""


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
        try:
            self.settings = dataclasses.replace(base, **overrides)
        except TypeError:
            known = ", ".join(f.name for f in dataclasses.fields(base))
            raise TaskError(f"task {self.name!r} has no setting among {sorted(overrides)}; "
                            f"its settings are: {known}") from None
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
            raise TaskError(f"task {self.name!r} has no split {split!r}; it has "
                            f"{', '.join(self.splits)}")


# -- data files ---------------------------------------------------------------------------
def resolve_data_dir(data_dir: Optional[str | os.PathLike] = None) -> Optional[Path]:
    """The explicit ``data_dir``, else ``$NFST_DATA_DIR``, else None (no data directory)."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else None


def data_file(task: str, relative: str, data_dir: Optional[Path]) -> Path:
    """``data_dir / relative``, or a DataError saying which file is missing and how to fix it."""
    if data_dir is None:
        raise DataError(f"task {task!r} reads {relative} from a data directory, and none is set")
    path = data_dir / relative
    if not path.is_file():
        raise DataError(f"task {task!r}: {path} does not exist")
    return path


def read_lines(path: Path) -> Iterable[tuple[int, str]]:
    """(line number, line without its newline) for each non-blank line of a UTF-8 file;
    DataError if a line is not UTF-8 or the file has no non-blank line."""
    empty = True
    with open(path, "rb") as f:  # decode line by line so an error names the exact line
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}:{lineno}: not UTF-8 ({exc.reason})") from None
            if line.strip():
                empty = False
                yield lineno, line
    if empty:
        raise DataError(f"{path} is empty")


# -- the registry ---------------------------------------------------------------------------
BUILTIN_TASKS = ("tasks.cipher", "tasks.scan", "tasks.tr")
"""Modules imported by name (not through ``tasks/__init__.py``, which an editable install made
before the package existed treats as a namespace package and never runs)."""
_REGISTRY: dict[str, type[Task]] = {}
_LOADED_FILES: dict[Path, list[str]] = {}


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make ``cls`` available to :func:`get_task` under ``cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise TaskError(f"register_task expects a subclass of nfst.task.Task, got {cls!r}")
    if not cls.name:
        raise TaskError(f"{cls.__qualname__} needs a non-empty class attribute `name`")
    old = _REGISTRY.get(cls.name)
    if old is not None and _where(old) != _where(cls):  # the same class again is fine (reload)
        raise TaskError(f"task name {cls.name!r} is taken by {_where(old)}",
                        "give the new task another name")
    _REGISTRY[cls.name] = cls
    return cls


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def load_task_file(path: str | os.PathLike) -> list[str]:
    """Import a Python file that defines (and registers) tasks; returns their names.

    Loading the same file again is a no-op."""
    path = Path(path).expanduser().resolve()
    if path in _LOADED_FILES:
        return _LOADED_FILES[path]
    if not path.is_file():
        raise TaskError(f"task file {path} does not exist",
                        f"check the path (and {TASKS_ENV}, if it came from there)")
    # A stable, unique module name: dataclasses and pickle look classes up in sys.modules.
    module_name = f"nfst_task_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    before = set(_REGISTRY)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except NfstError:
        del sys.modules[module_name]
        raise
    except Exception as exc:
        del sys.modules[module_name]
        raise TaskError(f"task file {path} failed to import: {type(exc).__name__}: {exc}") \
            from exc
    _LOADED_FILES[path] = names = sorted(set(_REGISTRY) - before)
    return names


def _load_tasks() -> None:
    """Import the built-in tasks and the files named in $NFST_TASKS."""
    for module in BUILTIN_TASKS:
        importlib.import_module(module)
    for entry in os.environ.get(TASKS_ENV, "").split(os.pathsep):
        if entry.strip():
            load_task_file(entry.strip())


def task_names() -> list[str]:
    _load_tasks()
    return sorted(_REGISTRY)


def get_task(name: str, **settings) -> Task:
    """A new instance of the task called ``name``, with ``settings`` overriding its defaults."""
    _load_tasks()
    if name not in _REGISTRY:
        raise TaskError(f"no task named {name!r}; known tasks: {', '.join(sorted(_REGISTRY))}",
                        f"add your own in one Python file and list it in {TASKS_ENV}")
    return _REGISTRY[name](**settings)
